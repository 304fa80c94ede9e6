"""Rule-based query classification: query type (seed 000) and content scope.

Rules rather than a model by default: they cost microseconds, need no weights, and are easy to
audit. The `Classifier` protocol in `serve/search.py` lets a model-based classifier replace this.
Rules are checked in order of specificity (error > comparison > why > how-to > what-is > code >
multi-hop), because e.g. "how do I fix E1203" is first an error question.
"""

from __future__ import annotations

import re

from rayweave.serve.schemas import ContentScope, QueryType
from rayweave.serve.search import Classification

_ERROR = re.compile(
    r"\b(error|exception|traceback|stack ?trace|fail(s|ed|ing|ure)?|crash(es|ed)?|broken|"
    r"doesn'?t work|not working|cannot|can'?t|won'?t|unable to|raised?|panic(ked)?|segfault)\b"
    r"|\b[A-Z]{1,4}-?\d{2,5}\b|\b[A-Z][A-Za-z]+(Error|Exception)\b|\bERR_[A-Z_]+\b",
    re.IGNORECASE,
)
_ERROR_CODE = re.compile(
    r"\b[A-Z]{1,4}-?\d{2,5}\b|\b[A-Z][A-Za-z]+(Error|Exception)\b|\bERR_[A-Z_]+\b"
)
_COMPARISON = re.compile(
    r"\b(difference(s)? between|differ(s)? from|compared? (to|with)|versus|vs\.?|better than|"
    r"pros and cons|which (one|is (better|faster|more))|both)\b",
    re.IGNORECASE,
)
_WHY = re.compile(r"^\s*why\b|\bwhat (causes|is the reason)\b|\breason (for|why)\b", re.IGNORECASE)
_HOW_TO = re.compile(
    r"^\s*(how (do|can|to|should|would)|steps? to|guide to|way to)\b|\b(install|configure|set ?up|"
    r"enable|disable|deploy|migrate|upgrade)\b",
    re.IGNORECASE,
)
_WHAT_IS = re.compile(
    r"^\s*(what (is|are|does)|define|definition of|meaning of|explain|describe|who (is|was))\b",
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
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "by",
        "with",
        "and",
        "or",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "do",
        "does",
        "did",
        "how",
        "what",
        "why",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "whose",
        "this",
        "that",
        "these",
        "those",
        "it",
        "its",
        "can",
        "could",
        "should",
        "would",
        "i",
        "you",
        "we",
        "they",
        "my",
        "your",
        "our",
        "their",
        "me",
        "us",
        "them",
        "there",
        "here",
        "about",
        "into",
        "than",
        "then",
        "so",
        "as",
        "not",
        "no",
        "yes",
    ]
)
_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")


def keywords(text: str, *, limit: int = 10) -> tuple[str, ...]:
    """Content words and capitalised phrases, in order of appearance, for entity lookup."""
    phrases = [
        m.group(0) for m in _CAPITALISED.finditer(text) if m.start() > 0 or " " in m.group(0)
    ]
    words = [w for w in _WORD.findall(text) if w.casefold() not in _STOP and len(w) > 2]
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


def _multi_hop(text: str) -> bool:
    words = text.split()
    capitalised = [m for m in _CAPITALISED.finditer(text) if m.start() > 0]
    relative = [m for m in _RELATIVE.finditer(text) if m.start() > 10]
    return len(words) >= 10 and (bool(relative) or len(capitalised) >= 2)


def classify_query(text: str) -> Classification:
    """Query type and content scope of a query (pure; microseconds)."""
    code = _looks_like_code(text)
    if _ERROR.search(text) and (_ERROR_CODE.search(text) or not _COMPARISON.search(text)):
        qtype = QueryType.ERROR
    elif _COMPARISON.search(text):
        qtype = QueryType.COMPARISON
    elif _WHY.search(text):
        qtype = QueryType.WHY
    elif _HOW_TO.search(text):
        qtype = QueryType.HOW_TO
    elif _WHAT_IS.search(text) and not _multi_hop(text):
        qtype = QueryType.WHAT_IS
    elif code:
        qtype = QueryType.CODE
    elif _multi_hop(text):
        qtype = QueryType.MULTI_HOP
    else:
        qtype = QueryType.GENERAL
    scope = ContentScope.CODE if code or qtype is QueryType.CODE else ContentScope.DOCS
    return Classification(query_type=qtype, scope=scope, keywords=keywords(text))


class RuleClassifier:
    """The default `Classifier`."""

    async def classify(self, text: str) -> Classification:
        return classify_query(text)
