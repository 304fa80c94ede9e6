"""Rule-based query classification: query type (seed 000) and content scope.

Rules rather than a model by default: they cost microseconds, need no weights, and are easy to
audit. The `Classifier` protocol in `serve/search.py` lets a model-based classifier replace this.
The question's form decides first (error message > comparison > why > how-to > what-is), so
"How do I retry a failed task?" is a how-to question whatever words it holds; error words decide
only for text that is no question ("worker crashes on startup"), and a named error turns a how/why
question into an error question ("How do I fix E1004 TaskNotRegisteredError?").
"""

from __future__ import annotations

import re

from rayweave.models.stopwords import QUERY_STOPWORDS
from rayweave.serve.lexical_query import web_phrased
from rayweave.serve.schemas import ContentScope, QueryType
from rayweave.serve.search import Classification

# A named error: an error code (E1004, TQ-1042, ERR_BROKER_DOWN) or an exception class. Case
# matters: "base64" is no error code.
_NAMED_ERROR = re.compile(
    r"\b[A-Z]{1,4}-?\d{2,5}\b|\b[A-Z][A-Za-z]+(?:Error|Exception)\b|\bERR_[A-Z_]+\b"
)
# Text that is an error message rather than a question about one: it starts with the code, the
# exception, a traceback or "error:", or quotes "SomeError: message".
_ERROR_MESSAGE = re.compile(
    r"^\s*(?:[A-Z]{1,4}-?\d{2,5}\b|[A-Z][A-Za-z]+(?:Error|Exception)\b|ERR_[A-Z_]+|Traceback\b|"
    r"(?:error|exception|fatal|panic)\s*:)|\b[A-Z][A-Za-z]+(?:Error|Exception):\s"
)
_ERROR_WORDS = re.compile(
    r"\b(error|exception|traceback|stack ?trace|fail(s|ed|ing|ure)?|crash(es|ed|ing)?|broken|"
    r"doesn'?t work|not working|cannot|can'?t|won'?t|unable to|refused|timed out|panic(ked)?|"
    r"segfault)\b",
    re.IGNORECASE,
)
_FIX = re.compile(
    r"\b(fix|resolve|solve|debug|troubleshoot|handle|avoid|prevent|get rid of|deal with|"
    r"work around|diagnose|get past|recover from)\b",
    re.IGNORECASE,
)
_COMPARISON = re.compile(
    r"\b(difference(s)? between|differ(s)? from|compared? (to|with)|versus|vs\.?|better than|"
    r"pros and cons|which (one|is (better|faster|more))|both)\b"
    # "Should I use Ferry or Celery ...?"
    r"|\b(should|would|could|can|do) (i|we|you) (use|choose|pick|prefer|go with) [^?]*\bor\b"
    # "Who was born earlier, A or B?", "Is Redis faster than SQLite?"
    r"|\b(earlier|first|later|older|younger|longer|shorter|larger|smaller|bigger|higher|lower)\b"
    r"[^?]*\bor\b"
    r"|\b(faster|slower|cheaper|safer|simpler|easier|harder|newer|older|worse) than\b"
    r"|\b(more|less) \w+ than\b",
    re.IGNORECASE,
)
_WHY = re.compile(r"^\s*why\b|\bwhat (causes|is the reason)\b|\breason (for|why)\b", re.IGNORECASE)
_HOW_TO_FORM = re.compile(
    r"^\s*(how (do|does|can|could|to|should|would|might|may)|steps? to|guide to|"
    r"(what'?s|what is) the (best|right|recommended|easiest|simplest|proper) way to|"
    r"(is|are) there (a|any) ways? to|(the )?best way to|way to)\b",
    re.IGNORECASE,
)
_HOW_TO_VERB = re.compile(
    r"\b(install|configure|set ?up|enable|disable|deploy|migrate|upgrade)\b", re.IGNORECASE
)
_WHAT_IS = re.compile(
    r"^\s*(what('?s| is| are| does| do)|define|definition of|meaning of|explain|describe|"
    r"who (is|was))\b",
    re.IGNORECASE,
)
# A question by its first word (error words inside it do not make it an error report).
_QUESTION = re.compile(
    r"^\s*(what|which|who|whom|whose|where|when|how|is|are|was|were|does|do|did|can|could|"
    r"should|will|would|has|have|in|if)\s",
    re.IGNORECASE,
)
_CODE_WORDS = re.compile(
    r"\b(function|method|class|module|api|snippet|code|implement(ation)?|return(s)?|argument|"
    r"parameter|variable|string|list|dict(ionary)?|array|regex|json|file|python|javascript|"
    r"typescript|rust|golang|java|solidity|move|sql|int|float|bool)\b",
    re.IGNORECASE,
)
_IDENTIFIER = re.compile(
    r"[A-Za-z_][A-Za-z0-9]*_[A-Za-z0-9_]+|[a-z]+[A-Z][A-Za-z0-9]+|\w+\(\)|\w+\.\w+\("
)
_RELATIVE = re.compile(r"\b(that|which|who|whose|whom|where|when)\b", re.IGNORECASE)
_CAPITALISED = re.compile(
    r"\b[A-Z][a-z0-9]+(?:\s+(?:(?:of|the|de|von|van|da|del|la|le)\s+)?[A-Z][a-z0-9]+)*"
)
_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")


def keywords(text: str, *, limit: int = 10) -> tuple[str, ...]:
    """Content words and capitalised phrases, in order of appearance, for entity lookup."""
    phrases = [
        m.group(0) for m in _CAPITALISED.finditer(text) if m.start() > 0 or " " in m.group(0)
    ]
    words = [w for w in _WORD.findall(text) if w.casefold() not in QUERY_STOPWORDS and len(w) > 2]
    seen: dict[str, None] = {}
    for item in (*phrases, *words):
        key = item.strip(".-")
        if key and key.casefold() not in {k.casefold() for k in seen}:
            seen[key] = None
    return tuple(list(seen)[:limit])


def _looks_like_code(text: str) -> bool:
    if _IDENTIFIER.search(text) or (any(ch in text for ch in "(){};=<>[]") and len(text) < 300):
        return True
    return len(_CODE_WORDS.findall(text)) >= 1 and len(text.split()) <= 14


# A relation chain ("the spouse of the performer of Green") or a possessive hop ("Anna Benson's
# husband"): a question about an entity reached through another, however short.
_CHAIN = re.compile(r"\bof\s+(?:the\s+)?[a-z]+(?:\s+[a-z]+)?\s+of\s+(?:the\s+)?[A-Z]")
_POSSESSIVE = re.compile(r"\b[A-Z][\w.]*'s\s+[a-z]+")


def _multi_hop(text: str, *, possessive: bool = True) -> bool:
    """Long questions with a relative clause or several named entities, and shorter ones whose
    subject is a relation chain (or, outside what-is questions, a possessive hop)."""
    words = text.split()
    capitalised = [m for m in _CAPITALISED.finditer(text) if m.start() > 0]
    relative = [m for m in _RELATIVE.finditer(text) if m.start() > 10]
    if len(words) >= 10 and (bool(relative) or len(capitalised) >= 2):
        return True
    hop = _CHAIN.search(text) or (possessive and _POSSESSIVE.search(text))
    return len(words) >= 6 and bool(hop)


def _question_type(text: str, *, code: bool, named_error: bool) -> QueryType:
    """The type of a text by its form first: an error message, then a comparison, a why, a how-to
    and a what-is question; error words inside a question do not outvote its form, but a named
    error (code or exception class) that a how/why question asks to fix or explain does."""
    if _ERROR_MESSAGE.search(text):
        return QueryType.ERROR
    if _COMPARISON.search(text):
        return QueryType.COMPARISON
    if _WHY.search(text):
        return QueryType.ERROR if named_error else QueryType.WHY
    if _HOW_TO_FORM.search(text):
        return QueryType.ERROR if named_error and _FIX.search(text) else QueryType.HOW_TO
    if _WHAT_IS.search(text) and not _multi_hop(text, possessive=False):
        return QueryType.WHAT_IS
    if not _QUESTION.search(text):
        # Not a question: a report ("worker crashes on startup") unless it is code.
        syntax = bool(_IDENTIFIER.search(text)) or any(ch in text for ch in "(){};=<>[]")
        if named_error or (_ERROR_WORDS.search(text) and not syntax):
            return QueryType.ERROR
    if _HOW_TO_VERB.search(text):
        return QueryType.HOW_TO
    if code:
        return QueryType.CODE
    if _multi_hop(text):
        return QueryType.MULTI_HOP
    return QueryType.GENERAL


def classify_query(text: str) -> Classification:
    """Query type and content scope of a query (pure; microseconds).

    An exception's name is not code for the scope: "How do I fix E1004 TaskNotRegisteredError?"
    is answered by the troubleshooting docs, which code-scope weights would mute."""
    code = _looks_like_code(_NAMED_ERROR.sub(" ", text))
    qtype = _question_type(text, code=code, named_error=bool(_NAMED_ERROR.search(text)))
    scope = ContentScope.CODE if code or qtype is QueryType.CODE else ContentScope.DOCS
    return Classification(
        query_type=qtype,
        scope=scope,
        keywords=keywords(text),
        web_phrased=scope is ContentScope.CODE and web_phrased(text),
    )


class RuleClassifier:
    """The default `Classifier`."""

    async def classify(self, text: str) -> Classification:
        return classify_query(text)
