"""Layout of code the brace scanner splits: the same rules as for parsed code, on its items."""

from __future__ import annotations

from rayweave.ingest.code.brace_scanner import (
    brace_body,
    brace_core_start,
    brace_doc,
    brace_items,
    brace_signature,
)
from rayweave.ingest.code.line_windows import item_lines
from rayweave.ingest.code.spans import Item, merge_others, tile
from rayweave.ingest.code.unit_builder import (
    Ctx,
    count,
    item_unit,
    lead_unit,
    pack,
    split_lead,
)
from rayweave.ingest.code.units import CodeUnit


def brace_layout(
    items: list[Item], ctx: Ctx, path: tuple[str, ...], context: str
) -> list[CodeUnit]:
    """One level's items to units: fit whole, recurse into a container, or cut into lines."""
    count(ctx, items)
    text = ctx.src.text
    staged: list[tuple[CodeUnit, bool]] = []
    for it in items:
        own = (*path, it.name) if it.name else path
        sig = brace_signature(text, it) if it.kind != "other" else ""
        body = brace_body(text, it) if it.kind == "container" else None
        doc = brace_doc(text, it)
        if it.tokens > ctx.max_tokens and it.kind != "other":
            bare = split_lead(ctx, it, brace_core_start(text, it))
            if bare is not None:  # only the doc comment pushes it over: keep the rest whole
                staged.append((lead_unit(ctx, bare[0]), True))
                it = bare[1]
        if it.tokens <= ctx.max_tokens:
            members = _functions(ctx, body, own, sig) if body is not None else ()
            unit = item_unit(
                ctx, it, own, signature=sig, docstring=doc, context=context, members=members
            )
            staged.append((unit, True))
        elif body is not None:
            inner = brace_items(text, *body)
            header = [Item(it.start, inner[0].start if inner else body[0], "other")]
            items_in = tile(merge_others(header + inner), text, it.start, it.end)
            staged.extend((u, False) for u in brace_layout(items_in, ctx, own, sig))
        else:
            staged.extend((u, False) for u in item_lines(it, ctx, path, sig or context))
    return pack(staged, ctx, path, context)


def _functions(
    ctx: Ctx, body: tuple[int, int], path: tuple[str, ...], context: str
) -> tuple[CodeUnit, ...]:
    """The functions directly inside a container's body, as its members."""
    text = ctx.src.text
    inner = [m for m in brace_items(text, *body) if m.kind == "function"]
    count(ctx, inner)
    return tuple(
        item_unit(
            ctx,
            m,
            (*path, m.name),
            signature=brace_signature(text, m),
            docstring=brace_doc(text, m),
            context=context,
        )
        for m in inner
    )
