"""Sections: heading-first sectioning of one document's pieces.

A heading's subtree stays whole when it fits and small siblings merge; a heading region still
too long is split at topic shifts (when sentence vectors exist) or with overlapping windows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from rayweave.cluster.settings import IngestSettings
from rayweave.ingest.chunking.pieces import Piece
from rayweave.ingest.segmenter import segment

__all__ = ["HeadingNode", "SectionRange", "Sectioner", "heading_tree", "regions_to_split"]

_TOPIC_WINDOW = 2


@dataclass(slots=True)
class HeadingNode:
    start: int
    end: int
    level: int
    path: tuple[str, ...]
    children: list[HeadingNode] = field(default_factory=list)


@dataclass(slots=True)
class SectionRange:
    """A section as a range of pieces."""

    start: int  # first piece, including a window overlap
    core: int  # first piece of the section's own text
    end: int
    path: tuple[str, ...]
    whole: bool


def heading_tree(pieces: list[Piece]) -> HeadingNode:
    root = HeadingNode(0, len(pieces), 0, ())
    stack = [root]
    for i, p in enumerate(pieces):
        if p.kind != "heading":
            continue
        while len(stack) > 1 and stack[-1].level >= p.level:
            stack.pop().end = i
        parent = stack[-1]
        node = HeadingNode(i, len(pieces), p.level, (*parent.path, p.heading or "untitled"))
        parent.children.append(node)
        stack.append(node)
    return root


class Sectioner:
    """Recursive heading-first sectioning over one document's pieces."""

    def __init__(
        self,
        text: str,
        pieces: list[Piece],
        settings: IngestSettings,
        vectors: dict[int, npt.NDArray[Any]] | None,
    ) -> None:
        self.text = text
        self.pieces = pieces
        self.s = settings
        self.vectors = vectors
        self.prefix = [0]
        for p in pieces:
            self.prefix.append(self.prefix[-1] + p.tokens)

    def tokens(self, a: int, b: int) -> int:
        return self.prefix[b] - self.prefix[a]

    def build(self, node: HeadingNode, carry: int | None = None) -> list[SectionRange]:
        a = node.start if carry is None else carry
        b = node.end
        smax = self.s.section_max_tokens
        if a >= b:
            return []
        if self.tokens(a, b) <= smax:
            return [SectionRange(a, a, b, node.path, True)]
        if not node.children:
            return self.split_region(a, b, node.path)
        units: list[list[SectionRange]] = []
        first_child = node.children[0].start
        carry_next: int | None = None
        if first_child > a:
            intro = self.tokens(a, first_child)
            if intro < self.s.proposition_min_tokens:
                carry_next = a  # a bare heading or one short line introduces the first child
            elif intro <= smax:
                units.append([SectionRange(a, a, first_child, node.path, True)])
            else:
                units.append(self.split_region(a, first_child, node.path))
        for k, child in enumerate(node.children):
            units.append(self.build(child, carry_next if k == 0 else None))
        return self.merge(units, node.path)

    def merge(self, units: list[list[SectionRange]], path: tuple[str, ...]) -> list[SectionRange]:
        """Merge neighbouring whole subtrees while one is under the minimum and both fit."""
        out: list[SectionRange] = []
        smin, smax = self.s.section_min_tokens, self.s.section_max_tokens
        for unit in units:
            if len(unit) == 1 and unit[0].whole and out and out[-1].whole:
                prev, cur = out[-1], unit[0]
                small = (
                    self.tokens(prev.start, prev.end) < smin
                    or self.tokens(cur.start, cur.end) < smin
                )
                if small and self.tokens(prev.start, cur.end) <= smax:
                    out[-1] = SectionRange(
                        prev.start, prev.start, cur.end, _common(prev.path, cur.path, path), True
                    )
                    continue
            out.extend(unit)
        return out

    def split_region(self, a: int, b: int, path: tuple[str, ...]) -> list[SectionRange]:
        """A region over the limit: cut at topic shifts when vectors exist, else sliding windows."""
        s = self.s
        pieces = self.pieces[a:b]
        counts = [p.tokens for p in pieces]
        topic = self.vectors is not None and sum(1 for i in range(a, b) if i in self.vectors) >= 3
        overlap = 0 if topic else s.section_overlap_tokens
        overlap = min(overlap, s.section_max_tokens // 4)
        cmax = s.section_max_tokens - overlap
        cmin = max(1, min(s.section_min_tokens - overlap, cmax))
        cuts = self.cut_costs(a, b, topic)
        groups = segment(counts, min_tokens=cmin, max_tokens=cmax, cut_cost=cuts)
        out: list[SectionRange] = []
        for gi, (i, j) in enumerate(groups):
            start = a + i
            if gi > 0 and overlap > 0:
                budget = overlap
                while start > a + groups[gi - 1][0] + 1 and self.pieces[start - 1].tokens <= budget:
                    if self.pieces[start - 1].kind == "heading":
                        break
                    budget -= self.pieces[start - 1].tokens
                    start -= 1
            out.append(SectionRange(start, a + i, a + j, path, False))
        return out

    def cut_costs(self, a: int, b: int, topic: bool) -> list[float]:
        """Cost of cutting before each piece: structure first, then (topic mode) similarity.

        In topic mode a cut where the similarity across the boundary is well below the region's
        mean is rewarded (negative cost), so a real topic shift becomes a boundary even when a
        section could have held more.
        """
        pieces = self.pieces
        costs = [0.0] * (b - a)
        shift = self.topic_scores(a, b) if topic else None
        inside = 0.2 if topic else 0.6
        for k in range(1, b - a):
            prev, cur = pieces[a + k - 1], pieces[a + k]
            if prev.kind == "heading":
                cost = 10.0
            elif cur.block == prev.block:
                cost = inside
            else:
                cost = 0.0
            if cur.dangling:
                cost += 0.8
            if self.text[prev.end - 1 : prev.end] == ":":
                cost += 0.8
            if shift is not None:
                cost += shift[k]
            costs[k] = cost
        return costs

    def topic_scores(self, a: int, b: int) -> list[float]:
        """Per boundary: similarity of the sentence windows either side, as a z-score (scaled)."""
        assert self.vectors is not None
        sims = [math.nan] * (b - a)
        for k in range(1, b - a):
            left = [
                self.vectors[i]
                for i in range(a + max(0, k - _TOPIC_WINDOW), a + k)
                if i in self.vectors
            ]
            right = [
                self.vectors[i]
                for i in range(a + k, min(b, a + k + _TOPIC_WINDOW))
                if i in self.vectors
            ]
            if not left or not right:
                continue
            lv, rv = np.mean(left, axis=0), np.mean(right, axis=0)
            denom = float(np.linalg.norm(lv) * np.linalg.norm(rv)) or 1.0
            sims[k] = float(lv @ rv) / denom
        valid = [x for x in sims[1:] if not math.isnan(x)]
        if len(valid) < 2:
            return [0.0] * (b - a)
        mean = sum(valid) / len(valid)
        std = math.sqrt(sum((x - mean) ** 2 for x in valid) / len(valid)) or 1.0
        return [0.0 if math.isnan(x) else max(-1.2, min(1.2, 0.6 * (x - mean) / std)) for x in sims]


def _common(p: tuple[str, ...], q: tuple[str, ...], fallback: tuple[str, ...]) -> tuple[str, ...]:
    n = 0
    while n < min(len(p), len(q)) and p[n] == q[n]:
        n += 1
    common = p[:n]
    return common if len(common) >= len(fallback) else fallback


def regions_to_split(root: HeadingNode, sec: Sectioner) -> list[tuple[int, int]]:
    """Piece ranges the sectioner will split by size (to embed their sentences in one call)."""
    out: list[tuple[int, int]] = []
    smax = sec.s.section_max_tokens
    stack = [root]
    while stack:
        node = stack.pop()
        if sec.tokens(node.start, node.end) <= smax:
            continue
        if not node.children:
            out.append((node.start, node.end))
            continue
        first = node.children[0].start
        if sec.tokens(node.start, first) > smax:
            out.append((node.start, first))
        stack.extend(node.children)
    return out
