"""The plan of a prose document (Markdown, reStructuredText, HTML, notebook, plain text).

Parse into blocks, cut blocks into pieces, count every piece in one batched call, then section
by headings (topic shifts or windows inside long regions) and group each section's own pieces
into propositions. A section whose only proposition would repeat it gets none.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rayweave.cluster.errors import SourceError
from rayweave.cluster.settings import IngestSettings
from rayweave.cluster.types import ContentType, Document
from rayweave.ingest.chunking.chunked import Embed
from rayweave.ingest.chunking.pieces import Piece, split_oversize, structure_pieces
from rayweave.ingest.chunking.plans import Plan, SectionPlan, Span
from rayweave.ingest.chunking.propositions import proposition_ranges
from rayweave.ingest.chunking.sections import (
    HeadingNode,
    Sectioner,
    SectionRange,
    heading_tree,
    regions_to_split,
)
from rayweave.ingest.structure import (
    Structured,
    parse_html,
    parse_markdown,
    parse_notebook,
    parse_plain,
    parse_rst,
)
from rayweave.models.protocols import TokenCounter

__all__ = ["plan_prose"]

_LEAD_SENTENCES = 3
_SUMMARY_HEADINGS_LEVEL = 3


def _structure(doc: Document) -> Structured:
    match doc.content_type:
        case ContentType.MARKDOWN:
            return parse_markdown(doc.text)
        case ContentType.RST:
            return parse_rst(doc.text)
        case ContentType.HTML:
            return parse_html(doc.text)
        case ContentType.NOTEBOOK:
            return parse_notebook(doc.text)
        case _:
            return parse_plain(doc.text)


def _span_type(pieces: Sequence[Piece], doc: Document) -> tuple[ContentType, str | None]:
    if pieces and all(p.kind == "code" for p in pieces):
        return ContentType.CODE, pieces[0].lang or (
            doc.language if doc.content_type == ContentType.CODE else None
        )
    return doc.content_type, doc.language


def plan_prose(
    doc: Document, counter: TokenCounter, settings: IngestSettings, embed: Embed | None
) -> Plan:
    st = _structure(doc)
    text = st.text
    pieces = structure_pieces(st)
    if not pieces:
        raise SourceError(
            f"{doc.source}: no text to chunk after parsing {doc.content_type.value}",
            path=doc.source,
        )
    title = doc.title.strip()
    counts = counter.count_tokens([text[p.start : p.end] for p in pieces] + [title])
    for p, n in zip(pieces, counts, strict=False):
        p.tokens = int(n)
    title_tokens = int(counts[-1])
    pieces = split_oversize(text, pieces, counter, settings.section_max_tokens)

    root = heading_tree(pieces)
    sectioner = Sectioner(text, pieces, settings, None)
    warnings: list[str] = []
    if embed is not None:
        _embed_long_regions(root, sectioner, embed, warnings)
    sections = [_section_plan(sec, sectioner, doc, settings) for sec in sectioner.build(root)]
    parts, primary = _prose_summary_parts(text, pieces, title, title_tokens, settings)
    return Plan(text, sections, parts, summary_primary=primary, warnings=warnings)


def _embed_long_regions(
    root: HeadingNode, sectioner: Sectioner, embed: Embed, warnings: list[str]
) -> None:
    """Give the sectioner vectors for the sentences of regions it will split by size."""
    pieces, text = sectioner.pieces, sectioner.text
    regions = regions_to_split(root, sectioner)
    wanted = [i for a, b in regions for i in range(a, b) if pieces[i].kind == "sentence"]
    if len(wanted) < 3:
        return
    try:
        vecs = np.asarray(
            embed([text[pieces[i].start : pieces[i].end] for i in wanted]), dtype=np.float32
        )
        if vecs.shape[0] != len(wanted):
            raise ValueError(f"embed returned {vecs.shape[0]} vectors for {len(wanted)} texts")
        sectioner.vectors = {i: vecs[k] for k, i in enumerate(wanted)}
    except Exception as exc:  # noqa: BLE001 - topic splitting is an optimisation: windows remain
        warnings.append(f"topic-shift embedding failed ({exc}); sliding windows used")


def _section_plan(
    sec: SectionRange, sectioner: Sectioner, doc: Document, settings: IngestSettings
) -> SectionPlan:
    pieces = sectioner.pieces
    ctype, lang = _span_type(pieces[sec.start : sec.end], doc)
    plan = SectionPlan(
        start=pieces[sec.start].start,
        end=pieces[sec.end - 1].end,
        tokens=sectioner.tokens(sec.start, sec.end),
        path=sec.path,
        content_type=ctype,
        language=lang,
    )
    props = proposition_ranges(pieces, sec.core, sec.end, sectioner.text, settings)
    if len(props) == 1 and sec.core == sec.start:
        return plan  # the one proposition would repeat the section word for word
    for i, j in props:
        ptype, plang = _span_type(pieces[i:j], doc)
        plan.propositions.append(
            Span(
                pieces[i].start,
                pieces[j - 1].end,
                sectioner.tokens(i, j),
                sec.path,
                ptype,
                plang,
            )
        )
    return plan


def _prose_summary_parts(
    text: str, pieces: list[Piece], title: str, title_tokens: int, settings: IngestSettings
) -> tuple[list[tuple[str, int]], int]:
    """Title, lead sentences (first prose paragraph) and the heading outline, with token counts."""
    parts: list[tuple[str, int]] = [(title, title_tokens)] if title else []
    lead_budget = int(settings.summary_max_tokens * 0.6)
    lead: list[Piece] = []
    lead_tokens = 0
    for p in pieces:
        if p.kind != "sentence":
            if lead and p.kind == "heading":
                break
            continue
        if len(lead) >= _LEAD_SENTENCES or (lead and lead_tokens + p.tokens > lead_budget):
            break
        if lead and p.block != lead[-1].block:
            break
        lead.append(p)
        lead_tokens += p.tokens
    if lead:
        parts.append((text[lead[0].start : lead[-1].end], lead_tokens))
    primary = len(parts)
    for p in pieces:
        if (
            p.kind == "heading"
            and p.level <= _SUMMARY_HEADINGS_LEVEL
            and p.heading
            and p.heading != title
        ):
            parts.append((p.heading, max(1, p.tokens - 1)))
    return parts, primary
