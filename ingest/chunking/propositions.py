"""Propositions: groups of whole sentences inside a section's own (non-overlapping) text.

A sentence opening with a dangling pronoun or connective ("It", "However", ...) stays with the
sentence before it whenever the group still fits.
"""

from __future__ import annotations

from rayweave.cluster.settings import IngestSettings
from rayweave.ingest.chunking.pieces import Piece
from rayweave.ingest.segmenter import segment

__all__ = ["proposition_ranges"]


def proposition_ranges(
    pieces: list[Piece], a: int, b: int, text: str, settings: IngestSettings
) -> list[tuple[int, int]]:
    """Segment a section into propositions, each heading region on its own.

    A heading opens a new proposition: merged sections hold several small headed subtrees, and
    a proposition that ends with the next subtree's heading would be indexed under the wrong
    subject (the heading names what follows it, never what precedes it).
    """
    out: list[tuple[int, int]] = []
    start = a
    for k in range(a + 1, b):
        if pieces[k].kind == "heading" and pieces[k - 1].kind != "heading":
            out.extend(_segment_region(pieces, start, k, text, settings))
            start = k
    out.extend(_segment_region(pieces, start, b, text, settings))
    return out


def _segment_region(
    pieces: list[Piece], a: int, b: int, text: str, settings: IngestSettings
) -> list[tuple[int, int]]:
    pmin, pmax = settings.proposition_min_tokens, settings.proposition_max_tokens
    counts = [p.tokens for p in pieces[a:b]]
    costs = [0.0] * (b - a)
    for k in range(1, b - a):
        prev, cur = pieces[a + k - 1], pieces[a + k]
        cost = 0.0 if cur.block != prev.block else 0.15
        if cur.dangling:
            cost += 3.0
        if prev.kind == "heading":
            cost += 10.0
        if text[prev.end - 1 : prev.end] == ":":
            cost += 1.0
        costs[k] = cost
    return [
        (a + i, a + j) for i, j in segment(counts, min_tokens=pmin, max_tokens=pmax, cut_cost=costs)
    ]
