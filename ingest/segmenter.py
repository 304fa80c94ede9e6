"""Optimal grouping of consecutive pieces (sentences, statements) into size-bounded segments.

One dynamic programme serves sections (window and topic-shift splitting) and propositions: it
chooses cut points that minimise, over all segments, a size cost (distance from `target`, a steep
penalty below `min_tokens`) plus the cost of each cut (`cut_cost[i]`, for cutting right before
piece i: high inside a paragraph or before a dangling "It ...", low at a paragraph break or a
topic shift). A segment never exceeds `max_tokens` unless it is one piece that alone does; such
indivisible pieces are kept whole. Greedy packing cannot look ahead and leaves a tiny tail or
cuts right before "However, ..."; the programme avoids both in O(n * k) for k pieces per segment.

The one exception to `max_tokens`: a piece that alone exceeds it may carry neighbours worth less
than `min_tokens` (the "Schema:" line before a long code block), which would otherwise become
fragments too small to mean anything.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["segment"]

_UNDER_WEIGHT = 8.0
_TARGET_WEIGHT = 0.5


def segment(
    tokens: Sequence[int],
    *,
    min_tokens: int,
    max_tokens: int,
    target: int | None = None,
    cut_cost: Sequence[float] | None = None,
    carry_small: bool = True,
) -> list[tuple[int, int]]:
    """Half-open index ranges `[i, j)` over `tokens` that tile `0..len(tokens)` in order.

    `carry_small=False` forbids the small-attachment exception: oversize pieces stand alone.
    """
    n = len(tokens)
    if n == 0:
        return []
    if max_tokens < 1:
        raise ValueError("max_tokens must be positive")
    min_tokens = min(min_tokens, max_tokens)
    goal = float(target if target is not None else (min_tokens + max_tokens) / 2)
    costs = cut_cost if cut_cost is not None else [0.0] * n
    prefix = [0]
    for t in tokens:
        prefix.append(prefix[-1] + max(0, int(t)))
    total = prefix[-1]
    if total <= max_tokens:
        return [(0, n)]

    best = [math.inf] * (n + 1)
    back = [0] * (n + 1)
    best[0] = 0.0
    inv_min = 1.0 / max(1, min_tokens)
    allowance = min_tokens if carry_small else 0
    inv_max = 1.0 / max_tokens
    for j in range(1, n + 1):
        pj = prefix[j]
        i = j - 1
        big = 0
        while i >= 0:
            size = pj - prefix[i]
            big = max(big, tokens[i])
            if size > max_tokens and i < j - 1 and (big <= max_tokens or size - big >= allowance):
                break  # over the limit, and not an indivisible piece with a small attachment
            if best[i] < math.inf:
                cost = best[i]
                if i > 0:
                    cost += costs[i]
                if size < min_tokens:
                    under = (min_tokens - size) * inv_min
                    cost += _UNDER_WEIGHT * under * under
                dev = (size - goal) * inv_max
                cost += _TARGET_WEIGHT * dev * dev
                if cost < best[j]:
                    best[j] = cost
                    back[j] = i
            i -= 1
    out: list[tuple[int, int]] = []
    j = n
    while j > 0:
        i = back[j]
        out.append((i, j))
        j = i
    out.reverse()
    return out
