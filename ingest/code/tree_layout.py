"""Layout of parsed code: one level's syntax nodes to units, recursing into what is too big.

A definition that fits stays whole; a class over the limit is laid out member by member with
its signature as context; a function over the limit is split between statements.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from rayweave.ingest.code.line_windows import item_lines, line_units
from rayweave.ingest.code.spans import Item, line_pieces, merge_others, tile
from rayweave.ingest.code.syntax import body_of, classify, expand, name_of, unwrap
from rayweave.ingest.code.unit_builder import (
    Ctx,
    count,
    item_unit,
    lead_unit,
    make_unit,
    pack,
    split_lead,
)
from rayweave.ingest.code.units import CodeUnit, dedupe
from rayweave.ingest.segmenter import segment
from rayweave.ingest.text_spans import trimmed

_COMMENT_MARKS = re.compile(r"^\s*(?:/\*\*?|\*/|\*|///?|//!|#)\s?", re.MULTILINE)


def items_from_nodes(nodes: Sequence[Any], ctx: Ctx, start: int, end: int) -> list[Item]:
    """Items tiling [start, end): definitions with their leading comments, the rest merged."""
    spec = ctx.spec
    assert spec is not None
    src = ctx.src
    items: list[Item] = []
    pending: list[Any] = []  # comments/attributes that may belong to the next definition

    def flush_pending() -> None:
        for p in pending:
            items.append(Item(src.char(p.start_byte), src.char(p.end_byte), "other", nodes=[p]))
        pending.clear()

    for node in expand(nodes, spec):
        if not node.is_named:
            continue
        if node.type in spec.comments or node.type in spec.attributes:
            if pending and node.start_point[0] > pending[-1].end_point[0] + 1:
                flush_pending()
            pending.append(node)
            continue
        inner = unwrap(node, spec)
        kind = classify(inner, spec)
        a = src.char(node.start_byte)
        if kind != "other" and pending and node.start_point[0] <= pending[-1].end_point[0] + 1:
            a = src.char(pending[0].start_byte)
            pending.clear()
        else:
            flush_pending()
        if kind == "other":
            items.append(Item(a, src.char(node.end_byte), "other", nodes=[node]))
        else:
            items.append(
                Item(
                    a,
                    src.char(node.end_byte),
                    kind,
                    inner,
                    name_of(inner, spec, src),
                    nodes=[node],
                )
            )
    flush_pending()
    return tile(merge_others(items), src.text, start, end)


def _signature(node: Any, ctx: Ctx) -> str:
    src = ctx.src
    assert ctx.spec is not None
    body = body_of(node, ctx.spec)
    end = src.char(body.start_byte) if body is not None else src.char(node.end_byte)
    sig = src.text[src.char(node.start_byte) : end].strip()
    if body is None:
        sig = sig.split("\n", 1)[0]
    return " ".join(sig.rstrip("{").split())[:300]


def _docstring(item: Item, ctx: Ctx) -> str:
    node = item.node
    src = ctx.src
    if node is None:
        return ""
    if ctx.lang == "python":
        body = node.child_by_field_name("body")
        first = body.named_children[0] if body is not None and body.named_children else None
        if first is not None and first.type == "expression_statement" and first.named_children:
            s = first.named_children[0]
            if s.type == "string":
                return src.node_text(s).lstrip("rRbBuUfF").strip("\"'").strip()
        return ""
    first = item.nodes[0] if item.nodes else node
    lead = src.text[item.start : src.char(first.start_byte)]  # attached leading comments
    if not lead.strip():
        return ""
    kept = [ln for ln in lead.split("\n") if not ln.strip().startswith(("#[", "#![", "@"))]
    cleaned = _COMMENT_MARKS.sub("", "\n".join(kept).replace("*/", ""))
    return "\n".join(line.rstrip() for line in cleaned.strip().split("\n")).strip()


def layout(
    items: list[Item], ctx: Ctx, path: tuple[str, ...], context: str, in_container: bool = False
) -> list[CodeUnit]:
    """One level's items to units: fit whole, recurse, or split; then pack small neighbours."""
    count(ctx, items)
    staged: list[tuple[CodeUnit, bool]] = []
    for it in items:
        if it.tokens <= ctx.max_tokens:
            staged.append((_whole_unit(it, ctx, path, context, in_container), True))
        elif (bare := _without_lead(it, ctx)) is not None:
            # The definition fits once its leading doc comment stands apart (the comment still
            # travels as the unit's docstring).
            lead, core = bare
            staged.append((lead_unit(ctx, lead), True))
            unit = _whole_unit(core, ctx, path, context, in_container)
            staged.append((replace(unit, docstring=_docstring(it, ctx)), True))
        elif it.kind == "container" and it.node is not None:
            staged.extend((u, False) for u in _split_container(it, ctx, path))
        elif it.kind in ("function", "definition") and it.node is not None:
            staged.extend((u, False) for u in _split_function(it, ctx, path, in_container))
        else:
            staged.extend((u, False) for u in item_lines(it, ctx, path, context))
    return pack(staged, ctx, path, context)


def _without_lead(it: Item, ctx: Ctx) -> tuple[Item, Item] | None:
    """(leading comments, bare definition) when only the comments push it over the limit."""
    if it.node is None or not it.nodes or it.kind == "other":
        return None
    return split_lead(ctx, it, ctx.src.char(it.nodes[0].start_byte))


def _whole_unit(
    it: Item, ctx: Ctx, path: tuple[str, ...], context: str, in_container: bool
) -> CodeUnit:
    node = it.node
    own_path = (*path, it.name) if it.name else path
    members: tuple[CodeUnit, ...] = ()
    signature = _signature(node, ctx) if node is not None else ""
    if it.kind == "container" and node is not None:
        assert ctx.spec is not None
        body = body_of(node, ctx.spec)
        if body is not None and body.named_children:
            first = ctx.src.char(body.named_children[0].start_byte)
            inner = items_from_nodes(body.children, ctx, first, ctx.src.char(body.end_byte))
            kept = [m for m in inner if m.kind in ("function", "container")]
            count(ctx, kept)
            listed: list[CodeUnit] = []
            for m in kept:
                unit = _whole_unit(m, ctx, own_path, signature, True)
                # a nested class (C#'s namespace -> class) lists its own functions here too
                listed.extend(unit.members if m.kind == "container" else (unit,))
            members = tuple(listed)
    return item_unit(
        ctx,
        it,
        own_path,
        signature=signature,
        docstring=_docstring(it, ctx),
        context=context,
        members=members,
        parent_kind="class" if in_container else "",
    )


def _split_container(it: Item, ctx: Ctx, path: tuple[str, ...]) -> list[CodeUnit]:
    """A class over the limit: its header, then its members laid out with its signature as
    context."""
    node = it.node
    src = ctx.src
    assert ctx.spec is not None
    body = body_of(node, ctx.spec)
    own_path = (*path, it.name) if it.name else path
    sig = _signature(node, ctx)
    if body is None:
        return line_units(it.start, it.end, ctx, path, "part", it.name, "")
    named = body.named_children
    first = src.char(named[0].start_byte) if named else src.char(body.end_byte)
    members = items_from_nodes(body.children, ctx, first, src.char(body.end_byte))
    header_end = members[0].start if members else src.char(body.end_byte)
    header_nodes = [c for c in node.named_children if c.start_byte < body.start_byte]
    items = (
        [Item(it.start, header_end, "other", nodes=header_nodes)] if it.start < header_end else []
    )
    items.extend(members)
    items = tile(merge_others(items), src.text, it.start, it.end)  # closing `}` joins the last
    units = layout(items, ctx, own_path, sig, in_container=True)
    if units:
        units[0] = replace(units[0], defined=dedupe([".".join(own_path), *units[0].defined]))
    return units


def _statements(body: Any) -> list[Any]:
    stmts = list(body.named_children)
    if len(stmts) == 1 and stmts[0].type in ("statement_list", "block", "statements"):
        stmts = list(stmts[0].named_children)
    return stmts


def _split_function(
    it: Item, ctx: Ctx, path: tuple[str, ...], in_container: bool
) -> list[CodeUnit]:
    """Statement groups of a function over the limit; its signature is repeated as context."""
    node = it.node
    src = ctx.src
    own_path = (*path, it.name) if it.name else path
    sig = _signature(node, ctx)
    assert ctx.spec is not None
    body = body_of(node, ctx.spec)
    stmts = _statements(body) if body is not None else []
    if len(stmts) < 2:
        return line_units(it.start, it.end, ctx, path, "part", it.name, sig)
    budget = max(ctx.max_tokens - (ctx.count([sig])[0] if sig else 0), ctx.max_tokens // 2)
    # Piece k runs from statement k to statement k+1; the first also holds the signature and the
    # docstring, the last the closing brace. A statement over the budget is cut into lines.
    cuts = [src.char(s.start_byte) for s in stmts[1:]]
    raw = zip([it.start, *cuts], [*cuts, it.end], stmts, strict=True)
    spans = [(a, b, s) for a, b, s in ((*trimmed(src.text, a, b), s) for a, b, s in raw) if a < b]
    counts = ctx.count([src.text[a:b] for a, b, _ in spans])
    pieces: list[tuple[int, int, Any]] = []
    sizes: list[int] = []
    for (a, b, stmt), n in zip(spans, counts, strict=True):
        if n <= budget:
            pieces.append((a, b, stmt))
            sizes.append(n)
            continue
        lines = line_pieces(src.text, a, b, budget)
        pieces.extend((la, lb, None) for la, lb in lines)
        sizes.extend(ctx.count([src.text[la:lb] for la, lb in lines]))
    groups = segment(
        sizes, min_tokens=min(ctx.min_tokens, budget), max_tokens=budget, carry_small=False
    )
    doc = _docstring(it, ctx)
    units: list[CodeUnit] = []
    for gi, (i, j) in enumerate(groups):
        nodes = [p[2] for p in pieces[i:j]]
        units.append(
            make_unit(
                ctx,
                "part",
                pieces[i][0],
                pieces[j - 1][1],
                name=it.name,
                path=own_path,
                nodes=nodes if all(n is not None for n in nodes) else [],
                tokens=sum(sizes[i:j]),
                signature=sig,
                docstring=doc if gi == 0 else "",
                context=sig,
                defined=[".".join(own_path)] if gi == 0 else [],
                parent_kind="class" if in_container else "",
            )
        )
    return units
