"""Entity name normalisation shared by the builders (ingest) and the traversals (query time).

Both sides must map a surface form to the same string, or a query never finds what ingestion
stored: "Ray Serve", "ray-serve" and "RAY SERVE" all become `ray serve`; "Arthur's Magazine"
becomes `arthurs magazine`; `ray.serve.run()` becomes `ray.serve.run`. Plurals are not folded
here (that would turn "The Beatles" into `beatle`): `variants` adds the singular form, lookups
try both, and the builders merge a plural into its singular when both occur. Code-like names
(dotted, snake_case, camelCase) keep their case-folded form and are never singularised.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from rayweave.cluster.types import stable_id
from rayweave.models.stopwords import FUNCTION_WORDS

_APOSTROPHES = re.compile(r"['’`´]")
_CODE_NAME = re.compile(
    r"^[A-Za-z_][\w]*(?:(?:\.|::)[A-Za-z_][\w]*)+$|^[A-Za-z_]*_[\w]*$|^[a-z]+[A-Z]\w*$"
)
_CALL_SUFFIX = re.compile(r"\(\s*\)$")
_NON_WORD = re.compile(r"[^\w.:]+|(?<!\w)[.:]+|[.:]+(?!\w)")
_SPACES = re.compile(r"\s+")
_TOKEN = re.compile(r"[A-Za-z0-9_][\w'’.:-]*[\w]|[A-Za-z0-9_]")
_LEADING_ARTICLES = ("the ", "a ", "an ")


def is_code_name(name: str) -> bool:
    """Dotted (`pkg.mod.func`, `a::b`), snake_case or camelCase identifiers."""
    return bool(_CODE_NAME.match(_CALL_SUFFIX.sub("", name.strip())))


def singular_word(word: str) -> str:
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes", "zes")):
        return word[:-2]
    # Over-folding ("status" -> "statu") is harmless: a singular only merges names when both
    # forms occur, and lookups try it beside the original; under-folding would miss "GPUs".
    if word.endswith("s") and not word.endswith(("ss", "ous", "sis")):
        return word[:-1]
    return word


@functools.lru_cache(maxsize=1 << 18)
def normalize_name(name: str) -> str:
    """The canonical lookup form of a surface name (see module docstring); '' when nothing
    is left."""
    text = unicodedata.normalize("NFKC", name).strip()
    text = _CALL_SUFFIX.sub("", text)
    if is_code_name(text):
        return text.lower()
    if not text.isascii():
        text = unicodedata.normalize("NFKD", text)
        text = "".join(ch for ch in text if not unicodedata.combining(ch))
    text = _APOSTROPHES.sub("", text).lower()
    text = _NON_WORD.sub(" ", text.replace("-", " ").replace("_", " "))
    text = _SPACES.sub(" ", text).strip()
    for article in _LEADING_ARTICLES:
        if text.startswith(article) and len(text) > len(article) + 2:
            text = text[len(article) :]
            break
    return text


@functools.lru_cache(maxsize=1 << 18)
def singular(normalized: str) -> str:
    """The normalised name with its last word singularised (`ray deployments` ->
    `ray deployment`). Cached as `entity_id` is: every pass asks it of every name twice."""
    if not normalized or is_code_name(normalized):
        return normalized
    head, _, last = normalized.rpartition(" ")
    last = singular_word(last)
    return f"{head} {last}" if head else last


def variants(normalized: str) -> tuple[str, ...]:
    """The forms a lookup should try: the name itself and its singular."""
    one = singular(normalized)
    return (normalized,) if one == normalized else (normalized, one)


@functools.lru_cache(maxsize=1 << 18)
def entity_id(normalized: str) -> str:
    """Stable entity id of a normalised name (the same on every machine and run). Cached: a
    corpus pass asks for every name's id (200k calls at 10k documents), and each upkeep in the
    same process asks again for the same names."""
    eid: str = stable_id("entity", normalized)
    return eid


def short_name(normalized: str) -> str | None:
    """`pkg.mod.func` -> `func` (the unqualified alias of a dotted code name), else None."""
    for sep in ("::", "."):
        if sep in normalized:
            tail = normalized.rsplit(sep, 1)[1]
            return tail or None
    return None


def tokens(text: str) -> list[str]:
    """Word-ish tokens that keep code names (`a.b`, `snake_case`) and inner apostrophes whole."""
    return [t.rstrip(".:") for t in _TOKEN.findall(text)]


def first_words(names: Iterable[str]) -> frozenset[str]:
    """The first words of normalised names: `name_ngrams(starts=...)` skips other windows."""
    out: set[str] = set()
    for name in names:
        out.update(first_keys(name))
    return frozenset(out)


def first_keys(name: str) -> tuple[str, str]:
    """The keys `first_words` takes of one name (its first word, and with `_` as a space)."""
    return name.split(" ", 1)[0], name.replace("_", " ").split(" ", 1)[0]


def name_ngrams(
    text: str, max_len: int, *, starts: AbstractSet[str] | None = None
) -> Iterator[tuple[int, int, str]]:
    """(token position, length, normalised n-gram) for every 1..max_len-token window of `text`.

    This is how both the gazetteer (which names occur in a chunk) and query-time entity lookup
    (which names a query contains) see text, so the two agree by construction. `starts`
    (from `first_words` over the names looked for) prunes windows that cannot match, which
    makes a gazetteer pass over long texts several times faster.
    """
    toks = tokens(text)
    for i in range(len(toks)):
        if toks[i].lower() in FUNCTION_WORDS:
            # "the Beatles" is still found through its window starting at "Beatles".
            continue
        if starts is not None and starts.isdisjoint(_head_keys(toks[i])):
            continue
        for n in range(1, max_len + 1):
            if i + n > len(toks):
                break
            if toks[i + n - 1].lower() in FUNCTION_WORDS:
                continue
            norm = normalize_name(" ".join(toks[i : i + n]))
            if norm:
                yield i, n, norm


def _head_keys(token: str) -> tuple[str, str]:
    """The first words a window starting at `token` can give its name (see `first_words`)."""
    head = normalize_name(token)
    return head.split(" ", 1)[0], head.replace("_", " ").split(" ", 1)[0]


def window_keys(text: str) -> set[str]:
    """The first words of every window `name_ngrams` can examine in `text`: a name whose first
    words (`first_words`) are none of these never matches in it."""
    return {key for tok in tokens(text) for key in _head_keys(tok)}


def is_informative(normalized: str) -> bool:
    """Whether a name can stand as an entity: not a stopword, not a bare number, >= 2 chars."""
    if len(normalized) < 2 or normalized in FUNCTION_WORDS:
        return False
    return not normalized.replace(" ", "").replace(".", "").isdigit()


def unique(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(i for i in items if i))


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryForm:
    """A normalised name the query contains, with its token span (for longest-match)."""

    form: str
    start: int
    length: int
    exact: bool


def query_forms(text: str, max_ngram: int, names: Iterable[str] = ()) -> list[QueryForm]:
    """Every n-gram of the query (and its singular), plus explicitly given names (span -1)."""
    out: dict[str, QueryForm] = {}
    for start, length, norm in name_ngrams(text, max_ngram):
        for i, form in enumerate(variants(norm)):
            old = out.get(form)
            cand = QueryForm(form=form, start=start, length=length, exact=i == 0)
            if old is None or (cand.length, cand.exact) > (old.length, old.exact):
                out[form] = cand
    for name in names:
        norm = normalize_name(name)
        for i, form in enumerate(variants(norm)):
            out[form] = QueryForm(form=form, start=-1, length=len(form.split()), exact=i == 0)
    return list(out.values())
