"""Pieces: the atoms sections and propositions are made of, never cut by either.

A piece is a sentence, heading, code block or table; one over the section limit is cut first
(code and tables by lines, sentences at clauses, then at words) so that only a single line or
word can stay oversize.
"""

from __future__ import annotations

import itertools
import math
import re

from rayweave.ingest.sentences import is_dangling, split_sentences
from rayweave.ingest.structure import Structured
from rayweave.ingest.text_spans import trimmed
from rayweave.models.protocols import TokenCounter

__all__ = ["Piece", "split_oversize", "structure_pieces"]


class Piece:
    """A sentence, heading, code block or table row group: never cut by sections or propositions."""

    __slots__ = ("block", "dangling", "end", "heading", "kind", "lang", "level", "start", "tokens")

    def __init__(
        self,
        start: int,
        end: int,
        kind: str,
        block: int,
        *,
        level: int = 0,
        lang: str | None = None,
        heading: str = "",
        dangling: bool = False,
    ) -> None:
        self.start = start
        self.end = end
        self.kind = kind  # sentence | heading | code | table
        self.block = block
        self.level = level
        self.lang = lang
        self.heading = heading
        self.dangling = dangling
        self.tokens = 0


def structure_pieces(st: Structured) -> list[Piece]:
    """The pieces of a parsed document in reading order (token counts still zero)."""
    text = st.text
    out: list[Piece] = []
    for bi, b in enumerate(st.blocks):
        if b.kind == "heading":
            out.append(Piece(b.start, b.end, "heading", bi, level=b.level, heading=b.heading))
        elif b.kind in ("code", "table"):
            out.append(Piece(b.start, b.end, b.kind, bi, lang=b.lang))
        else:
            for s, e in split_sentences(text, b.start, b.end):
                out.append(Piece(s, e, "sentence", bi, dangling=is_dangling(text[s : s + 40])))
    return out


_CLAUSE = re.compile(r"[;,:]\s+|\s+[-–—]\s+|\n")
_SPACE = re.compile(r"\s+")


def split_oversize(
    text: str, pieces: list[Piece], counter: TokenCounter, limit: int
) -> list[Piece]:
    """Cut pieces over `limit` tokens: code and tables by lines, sentences at clauses, then words.

    Repeats until every piece fits or is one line/word that cannot be cut. Counts are batched.
    """
    for _round in range(6):
        if all(p.tokens <= limit for p in pieces):
            return pieces
        out: list[Piece] = []
        fresh: list[Piece] = []
        for p in pieces:
            if p.tokens <= limit:
                out.append(p)
                continue
            spans = _cut_spans(text, p, limit)
            if len(spans) <= 1:
                out.append(p)  # indivisible
                continue
            for a, b in spans:
                q = Piece(
                    a,
                    b,
                    p.kind,
                    p.block,
                    level=p.level,
                    lang=p.lang,
                    heading=p.heading,
                    dangling=p.dangling and a == p.start,
                )
                out.append(q)
                fresh.append(q)
        if not fresh:
            return out
        for q, n in zip(
            fresh, counter.count_tokens([text[q.start : q.end] for q in fresh]), strict=True
        ):
            q.tokens = int(n)
        pieces = out
    return pieces


def _cut_spans(text: str, p: Piece, limit: int) -> list[tuple[int, int]]:
    """Candidate sub-spans of an oversize piece, each aiming at about half the limit."""
    a, b = p.start, p.end
    share = max(1, math.ceil(p.tokens / max(1, limit // 2)))  # how many parts we want
    target_chars = max(1, (b - a) // share)
    if p.kind in ("code", "table") or "\n" in text[a:b]:
        cuts = [m.end() for m in re.finditer(r"\n", text[a:b])]
    else:
        cuts = [m.end() for m in _CLAUSE.finditer(text[a:b])]
        if not cuts or max(_gaps(cuts, b - a)) > 2 * target_chars:
            cuts = [m.end() for m in _SPACE.finditer(text[a:b])]
    if not cuts:
        return [(a, b)]
    spans: list[tuple[int, int]] = []
    start = 0
    last_cut = 0
    # The piece's end counts as a cut too, or a tail past the target stays whole (two lines of
    # code twice over the limit, say).
    for c in [*cuts, b - a]:
        if c - start >= target_chars and last_cut > start:
            spans.append((start, last_cut))
            start = last_cut
        last_cut = c
    spans.append((start, b - a))
    out = []
    for s, e in spans:
        s2, e2 = trimmed(text, a + s, a + e)
        if s2 < e2:
            out.append((s2, e2))
    return out


def _gaps(cuts: list[int], length: int) -> list[int]:
    points = [0, *cuts, length]
    return [y - x for x, y in itertools.pairwise(points)]
