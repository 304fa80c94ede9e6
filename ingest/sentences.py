"""A fast, pure-Python sentence splitter for technical prose.

Works on spans of one string, so every sentence is an exact slice of the document (chunk offsets
stay exact). A boundary is terminal punctuation followed by whitespace and something that can
start a sentence, except after abbreviations (`e.g.`, `Fig.`, `vs.`), initials (`J. R. R.`),
list numbers (`1.` at the start of a line) and inside inline code, links, URLs and e-mail
addresses. Decimals and dotted names (`3.14`, `os.path.join`, `config.yaml`) never split because
no whitespace follows their dots. Blank lines and list markers at the start of a line always start
a new sentence.
"""

from __future__ import annotations

import re

__all__ = ["DANGLING_STARTS", "is_dangling", "split_sentences"]

_ABBREVIATIONS = frozenset(
    [
        "eg",
        "ie",
        "etc",
        "vs",
        "cf",
        "al",
        "approx",
        "dept",
        "est",
        "fig",
        "figs",
        "eq",
        "eqs",
        "ref",
        "refs",
        "sec",
        "secs",
        "ch",
        "chap",
        "vol",
        "vols",
        "pp",
        "no",
        "nos",
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "sr",
        "jr",
        "st",
        "mt",
        "ft",
        "inc",
        "ltd",
        "co",
        "corp",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "mon",
        "tue",
        "wed",
        "thu",
        "fri",
        "sat",
        "sun",
        "resp",
        "viz",
        "ca",
        "op",
        "ed",
        "eds",
        "rev",
        "gen",
        "gov",
        "lt",
        "col",
        "sgt",
        "capt",
        "cmdr",
        "adm",
    ]
)
# Abbreviations that often end a sentence too: a boundary when an upper-case word follows.
_MAY_END = frozenset({"etc", "al", "inc", "ltd", "co", "corp"})

_PROTECTED = re.compile(
    r"`[^`\n]+`"  # inline code
    r"|!?\[[^\]\n]*\]\([^)\s]*\)"  # markdown links and images
    r"|<[^>\s]+>"  # autolinks, tags
    r"|\b(?:https?|ftp|file)://[^\s<>\"')\]]*[^\s<>\"')\].,;:!?]"  # URLs, not their final period
    r"|\bwww\.[^\s<>\"')\]]*[^\s<>\"')\].,;:!?]"
    r"|\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+"  # e-mail
)
_TERMINAL = re.compile(
    r"(?:[.!?…]+|[.!?][\"'”’)\]]+)(?=\s)|\n[ \t]*\n|\n(?=[ \t]*(?:[-*+•]|\d{1,3}[.)])[ \t]+\S)"
)
_NEXT = re.compile(r"\s*(\S)")
_WORD_BEFORE = re.compile(r"(\S+)$")
_LIST_NUMBER = re.compile(r"^(?:\d{1,3}|[a-zA-Z]|[ivxlcdm]+)$")
_DOTTED_ABBREV = re.compile(r"^(?:[A-Za-z]\.)+[A-Za-z]$")
_STARTERS = frozenset("\"'“‘([{`*_<#>|-•$@/\\~")

DANGLING_STARTS = (
    "it",
    "its",
    "it's",
    "this",
    "that",
    "these",
    "those",
    "they",
    "them",
    "their",
    "theirs",
    "he",
    "she",
    "his",
    "her",
    "such",
    "thus",
    "hence",
    "however",
    "therefore",
    "also",
    "moreover",
    "furthermore",
    "additionally",
    "but",
    "and",
    "or",
    "nor",
    "so",
    "then",
    "consequently",
    "otherwise",
    "instead",
    "similarly",
    "likewise",
    "meanwhile",
    "nevertheless",
    "nonetheless",
    "still",
    "yet",
    "accordingly",
    "afterwards",
    "here",
    "both",
    "neither",
    "either",
    "the latter",
    "the former",
    "as a result",
    "in addition",
    "in this case",
    "in that case",
    "in contrast",
    "in particular",
    "for example",
    "for instance",
    "on the other hand",
    "to do so",
    "to do this",
    "unlike",
    "each of these",
    "all of these",
    "none of these",
    "one of these",
)
_DANGLING_RE = re.compile(
    r"^[\s*_>\"'“‘(]*(?:"
    + "|".join(re.escape(w) for w in sorted(DANGLING_STARTS, key=len, reverse=True))
    + r")\b",
    re.IGNORECASE,
)


def is_dangling(sentence: str) -> bool:
    """True when a sentence opens with a pronoun or connective that points at the previous one."""
    return _DANGLING_RE.match(sentence) is not None


def _protected_ranges(text: str, start: int, end: int) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _PROTECTED.finditer(text, start, end)]


def _inside(pos: int, ranges: list[tuple[int, int]], hint: list[int]) -> bool:
    """Whether `pos` falls inside a protected range (ranges sorted; `hint` moves forward only)."""
    i = hint[0]
    while i < len(ranges) and ranges[i][1] <= pos:
        i += 1
    hint[0] = i
    return i < len(ranges) and ranges[i][0] <= pos < ranges[i][1]


def _is_boundary(text: str, punct_start: int, punct_end: int, stop: int) -> bool:
    punct = text[punct_start:punct_end]
    if "\n" in punct:  # blank line or a list marker at the start of the next line
        return True
    nxt = _NEXT.match(text, punct_end, stop)
    if nxt is None:
        return True
    first = nxt.group(1)
    if first.islower():
        return False
    if not (first.isupper() or first.isdigit() or first in _STARTERS or not first.isalpha()):
        return False
    if not punct.startswith(".") or punct.startswith(".."):
        return True
    # A single period: check the word it ends.
    line_start = text.rfind("\n", 0, punct_start) + 1
    before = _WORD_BEFORE.search(text, max(line_start, punct_start - 40), punct_start)
    if before is None:
        return True
    word = before.group(1).lstrip("([{\"'“‘*_")
    if not word:
        return True
    bare = word.replace(".", "").lower()
    if bare in _ABBREVIATIONS:
        return bare in _MAY_END and first.isupper()
    if _DOTTED_ABBREV.match(word):  # e.g. U.S. i.e. -> abbreviation, unless a capital follows
        return False
    if len(word) == 1 and word.isupper():  # an initial: "J. Smith"
        return False
    # "1. Install" at the start of a line is a list marker, not the end of a sentence.
    return not (_LIST_NUMBER.match(word) and not text[line_start : before.start()].strip())


def split_sentences(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Sentence spans of `text[start:end]`, in order, trimmed of surrounding whitespace.

    The spans cover every non-whitespace character of the range exactly once.
    """
    stop = len(text) if end is None else end
    protected = _protected_ranges(text, start, stop)
    hint = [0]
    spans: list[tuple[int, int]] = []
    cursor = start
    for m in _TERMINAL.finditer(text, start, stop):
        if _inside(m.start(), protected, hint):
            continue
        if not _is_boundary(text, m.start(), m.end(), stop):
            continue
        cut = m.end() if "\n" not in m.group() else m.start()
        _append(text, cursor, cut, spans)
        cursor = cut
    _append(text, cursor, stop, spans)
    return spans


def _append(text: str, a: int, b: int, spans: list[tuple[int, int]]) -> None:
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    if a < b:
        spans.append((a, b))
