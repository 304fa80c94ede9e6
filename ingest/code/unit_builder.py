"""Units from spans: their symbols, token counts, and the packing of small neighbours."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rayweave.ingest.code.identifiers import IDENT
from rayweave.ingest.code.imports import FileIndex
from rayweave.ingest.code.languages import LanguageSpec
from rayweave.ingest.code.parsing import Source
from rayweave.ingest.code.regex_symbols import regex_symbols
from rayweave.ingest.code.spans import Item
from rayweave.ingest.code.symbols import collect
from rayweave.ingest.code.units import CodeUnit, CountTokens, dedupe
from rayweave.ingest.text_spans import trimmed

# The unit kind of an item kept whole.
UNIT_KINDS = {"container": "class", "function": "function", "definition": "definition"}


@dataclass(slots=True)
class Ctx:
    """One file being split: its source, grammar (None: no parser) and token limits."""

    src: Source
    lang: str
    spec: LanguageSpec | None
    index: FileIndex | None
    count: CountTokens
    max_tokens: int
    min_tokens: int


def count(ctx: Ctx, items: Sequence[Item]) -> None:
    """Set each item's token count, in one batched call of the counter."""
    if items:
        counts = ctx.count([ctx.src.text[it.start : it.end] for it in items])
        for it, c in zip(items, counts, strict=True):
            it.tokens = int(c)


def make_unit(
    ctx: Ctx,
    kind: str,
    start: int,
    end: int,
    *,
    name: str = "",
    path: tuple[str, ...] = (),
    nodes: Sequence[Any] = (),
    tokens: int = 0,
    signature: str = "",
    docstring: str = "",
    context: str = "",
    members: tuple[CodeUnit, ...] = (),
    defined: Sequence[str] | None = None,
    parent_kind: str = "",
) -> CodeUnit:
    text = ctx.src.text[start:end]
    outer = path[:-1] if name and path and path[-1] == name else path
    if nodes and ctx.spec is not None and ctx.index is not None:
        uses = collect(nodes, ctx.spec, ctx.src, ctx.index, outer, parent_kind)
        defs = [d.qualified_name for d in uses.definitions]
        calls, refs, deps = uses.calls, uses.references, uses.dependencies
    else:
        sym = regex_symbols(text, ctx.lang, outer)
        defs = [d.qualified_name for d in sym.definitions]
        calls, refs, deps = list(sym.calls), list(sym.references), list(sym.imports)
        if ctx.index is not None:  # a slice of a parsed file: its names still resolve
            idents = sorted(set(IDENT.findall(text)))
            deps += [ctx.index.bound[i] for i in idents if i in ctx.index.bound]
            refs += [i for i in idents if i in ctx.index.bound or i in ctx.index.top_names]
    if defined is not None:
        defs = list(defined)
    return CodeUnit(
        kind=kind,
        name=name,
        path=path,
        language=ctx.lang,
        start=start,
        end=end,
        text=text,
        signature=signature,
        docstring=docstring,
        context=context,
        tokens=tokens,
        defined=dedupe(defs),
        references=dedupe(refs),
        calls=dedupe(calls),
        dependencies=dedupe(deps),
        members=members,
    )


def item_unit(
    ctx: Ctx,
    it: Item,
    path: tuple[str, ...],
    *,
    signature: str,
    docstring: str,
    context: str,
    members: tuple[CodeUnit, ...] = (),
    parent_kind: str = "",
) -> CodeUnit:
    """The unit of one item kept whole."""
    return make_unit(
        ctx,
        UNIT_KINDS.get(it.kind, "block"),
        it.start,
        it.end,
        name=it.name,
        path=path,
        nodes=it.nodes,
        tokens=it.tokens,
        signature=signature,
        docstring=docstring,
        context=context,
        members=members,
        parent_kind=parent_kind,
    )


def split_lead(ctx: Ctx, it: Item, core_start: int) -> tuple[Item, Item] | None:
    """(leading comments, bare definition) when only the comments push a definition over the
    limit, so that it is never cut for the comment's sake."""
    a, b = trimmed(ctx.src.text, it.start, core_start)
    if a >= b:
        return None
    lead = Item(a, b, "other")
    core = Item(core_start, it.end, it.kind, it.node, it.name, nodes=it.nodes)
    count(ctx, [lead, core])
    return (lead, core) if core.tokens <= ctx.max_tokens else None


def lead_unit(ctx: Ctx, lead: Item) -> CodeUnit:
    """The unit of leading comments split off a definition by `split_lead`."""
    return make_unit(ctx, "block", lead.start, lead.end, tokens=lead.tokens)


def pack(
    staged: list[tuple[CodeUnit, bool]], ctx: Ctx, path: tuple[str, ...], context: str
) -> list[CodeUnit]:
    """Pack consecutive packable units while the pack is under `min_tokens` and fits
    `max_tokens`."""
    out: list[CodeUnit] = []
    group: list[CodeUnit] = []
    total = 0
    for unit, packable in [*staged, (None, False)]:
        if group and (
            unit is None
            or not packable
            or total >= ctx.min_tokens
            or total + unit.tokens > ctx.max_tokens
        ):
            out.append(group[0] if len(group) == 1 else _merge(group, ctx, path, context))
            group, total = [], 0
        if unit is None:
            break
        if packable:
            group.append(unit)
            total += unit.tokens
        else:
            out.append(unit)
    return out


def _merge(group: list[CodeUnit], ctx: Ctx, path: tuple[str, ...], context: str) -> CodeUnit:
    """One `module` unit of packed neighbours, named after its only named unit, if one."""
    start, end = group[0].start, group[-1].end
    named = [u for u in group if u.name]
    single = named[0] if len(named) == 1 else None
    members = [u for u in group if u.kind in ("function", "class")]
    return CodeUnit(
        kind="module",
        name=single.name if single else "",
        path=single.path if single else path,
        language=ctx.lang,
        start=start,
        end=end,
        text=ctx.src.text[start:end],
        signature=single.signature if single else "",
        docstring=next((u.docstring for u in group if u.docstring), ""),
        context=context,
        tokens=sum(u.tokens for u in group),
        defined=dedupe([d for u in group for d in u.defined]),
        references=dedupe([r for u in group for r in u.references]),
        calls=dedupe([c for u in group for c in u.calls]),
        dependencies=dedupe([d for u in group for d in u.dependencies]),
        members=tuple(members) if len(members) > 1 else (members[0].members if members else ()),
    )
