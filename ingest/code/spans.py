"""Spans of source text: the items one level of a file is cut into, trimmed and tiled."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

from rayweave.ingest.text_spans import trimmed


@dataclass(slots=True)
class Item:
    """One span of a level being laid out: a definition with its leading comments, or the
    code between definitions."""

    start: int  # char offsets into the source text
    end: int
    kind: str  # container | function | definition | other
    node: Any = None  # the (unwrapped) definition node
    name: str = ""
    tokens: int = 0
    nodes: list[Any] = field(default_factory=list)  # syntax nodes inside, for symbols


_HAS_WORD = re.compile(r"\w")


def merge_others(items: list[Item]) -> list[Item]:
    """`items` with runs of non-definitions joined into one."""
    merged: list[Item] = []
    for it in items:
        if merged and merged[-1].kind == "other" and it.kind == "other":
            merged[-1].end = it.end
            merged[-1].nodes.extend(it.nodes)
        else:
            merged.append(it)
    return merged


def tile(items: list[Item], text: str, start: int, end: int) -> list[Item]:
    """Stretch items to tile [start, end) (gaps join the item before), then trim whitespace.

    Bare punctuation before the first or after the last item (a container's braces) is left out
    rather than glued to a member it would push over the limit.
    """
    if not items:
        a, b = trimmed(text, start, end)
        return [Item(a, b, "other")] if a < b and _HAS_WORD.search(text, a, b) else []
    if _HAS_WORD.search(text, start, items[0].start):
        items[0].start = min(start, items[0].start)
    for prev, nxt in itertools.pairwise(items):
        prev.end = nxt.start
    if _HAS_WORD.search(text, items[-1].end, end):
        items[-1].end = max(end, items[-1].end)
    out = []
    for it in items:
        it.start, it.end = trimmed(text, it.start, it.end)
        if it.start < it.end:
            out.append(it)
    return out


def line_pieces(text: str, start: int, end: int, budget: int) -> list[tuple[int, int]]:
    """Lines of [start, end); a line too long to ever fit (minified code) is cut by characters."""
    pieces: list[tuple[int, int]] = []
    for a, b in line_spans(text, start, end):
        if b - a > budget * 8:
            step = max(budget * 3, 1)
            pieces.extend(trimmed(text, x, min(x + step, b)) for x in range(a, b, step))
        else:
            pieces.append((a, b))
    return [(a, b) for a, b in pieces if a < b]


def line_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The non-blank lines of [start, end), trimmed."""
    spans = []
    pos = start
    while pos < end:
        nl = text.find("\n", pos, end)
        stop = end if nl == -1 else nl + 1
        a, b = trimmed(text, pos, stop)
        if a < b:
            spans.append((a, b))
        pos = stop
    return spans
