"""Line windows: the fall-back split of code without usable syntax boundaries."""

from __future__ import annotations

from rayweave.ingest.code.spans import Item, line_pieces
from rayweave.ingest.code.unit_builder import Ctx, make_unit
from rayweave.ingest.code.units import CodeUnit
from rayweave.ingest.segmenter import segment


def _windows(ctx: Ctx, start: int, end: int, budget: int) -> list[tuple[int, int, int]]:
    """Line groups of [start, end) within `budget` tokens, preferring blank-line boundaries."""
    text = ctx.src.text
    pieces = line_pieces(text, start, end, budget)
    if not pieces:
        return []
    counts = ctx.count([text[a:b] for a, b in pieces])
    cuts = [0.0] * len(pieces)
    for k in range(1, len(pieces)):
        cuts[k] = 0.0 if text.count("\n", pieces[k - 1][1], pieces[k][0]) >= 2 else 0.4
    groups = segment(
        counts,
        min_tokens=min(ctx.min_tokens, budget),
        max_tokens=budget,
        cut_cost=cuts,
        carry_small=False,
    )
    return [(pieces[i][0], pieces[j - 1][1], sum(counts[i:j])) for i, j in groups]


def line_units(
    start: int,
    end: int,
    ctx: Ctx,
    path: tuple[str, ...],
    kind: str,
    name: str,
    context: str,
) -> list[CodeUnit]:
    """Line windows of a span that has no usable syntax boundaries (or one statement too big)."""
    own = (*path, name) if name else path
    budget = ctx.max_tokens
    if context:
        budget = max(ctx.max_tokens - ctx.count([context])[0], ctx.max_tokens // 2)
    return [
        make_unit(
            ctx,
            kind,
            a,
            b,
            name=name,
            path=own,
            tokens=tokens,
            context=context,
            signature=context if kind == "part" else "",
            defined=[".".join(own)] if (k == 0 and name) else ([] if name else None),
        )
        for k, (a, b, tokens) in enumerate(_windows(ctx, start, end, budget))
    ]


def item_lines(it: Item, ctx: Ctx, path: tuple[str, ...], context: str) -> list[CodeUnit]:
    """Line windows of an item over the limit that cannot be split on syntax: `part`s of a
    named definition, else `block`s."""
    kind = "part" if it.name else "block"
    return line_units(it.start, it.end, ctx, path, kind, it.name, context)
