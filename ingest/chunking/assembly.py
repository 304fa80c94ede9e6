"""Plans -> chunks: content-derived ids, parent/child/sequence links and per-chunk metadata.

Ids are `stable_id(doc id, level, occurrence, content hash)`: unchanged text keeps its id even
when an edit elsewhere shifts positions, so re-ingesting changes only what changed. The summary
aggregates the references, symbols, dependencies and error codes of its sections.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rayweave.cluster.types import Chunk, ContentType, Document, Level, content_hash, stable_id
from rayweave.ingest.chunking.chunked import ChunkedDocument
from rayweave.ingest.chunking.embed_texts import span_embed_text, summary_embed_text
from rayweave.ingest.chunking.plans import Plan, Span
from rayweave.ingest.metadata import chunk_metadata, extract_keywords

__all__ = ["ChunkMeta", "assemble", "chunk_meta", "span_chunk"]

_MAX_AGGREGATE = 48


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkMeta:
    """The relationship metadata of one chunk, named as `Chunk` names it."""

    references: tuple[str, ...] = ()
    defined_symbols: tuple[str, ...] = ()
    dependencies: tuple[str, ...] = ()
    error_codes: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()


class _Ids:
    """Content-derived ids; `occurrence` separates equal texts on one level of one document."""

    def __init__(self, doc_id: str) -> None:
        self.doc_id = doc_id
        self.seen: dict[tuple[str, str], int] = {}

    def __call__(self, level: Level, text: str) -> str:
        digest = content_hash(text)
        key = (level.value, digest)
        n = self.seen.get(key, 0)
        self.seen[key] = n + 1
        chunk_id: str = stable_id(self.doc_id, level.value, n, digest)
        return chunk_id


def _unique(items: Sequence[str], limit: int = _MAX_AGGREGATE) -> tuple[str, ...]:
    return tuple(dict.fromkeys(i for i in items if i))[:limit]


def chunk_meta(text: str, span: Span) -> ChunkMeta:
    """Metadata of one section or proposition; a code unit brings its own symbols and calls."""
    meta = chunk_metadata(text, content_type=span.content_type, language=span.language)
    unit = span.unit
    if unit is not None:
        return ChunkMeta(
            references=_unique([*unit.references, *unit.calls], 32),
            defined_symbols=unit.defined,
            dependencies=_unique([*unit.dependencies, *meta.dependencies], 32),
            error_codes=meta.error_codes,
            keywords=meta.keywords,
        )
    return ChunkMeta(
        references=meta.references,
        dependencies=meta.dependencies,
        error_codes=meta.error_codes,
        keywords=meta.keywords,
    )


def span_chunk(
    doc: Document,
    span: Span,
    doc_text: str,
    *,
    level: Level,
    ids: Sequence[str],
    index: int,
    parent_id: str,
    children_ids: tuple[str, ...] = (),
) -> Chunk:
    """The chunk of a section or proposition of `doc_text`: `ids` lists its level's ids in
    order, `index` is its own."""
    text = doc_text[span.start : span.end]
    meta = chunk_meta(text, span)
    return Chunk(
        id=ids[index],
        doc_id=doc.id,
        level=level,
        text=text,
        position=index,
        parent_id=parent_id,
        children_ids=children_ids,
        prev_id=ids[index - 1] if index > 0 else None,
        next_id=ids[index + 1] if index + 1 < len(ids) else None,
        section_path=_clean_path(span.path, doc.title),
        title=doc.title,
        source=doc.source,
        content_type=span.content_type,
        language=span.language,
        token_count=span.tokens,
        start_char=span.start,
        end_char=span.end,
        references=meta.references,
        defined_symbols=meta.defined_symbols,
        dependencies=meta.dependencies,
        error_codes=meta.error_codes,
        keywords=meta.keywords,
    )


def _clean_path(path: tuple[str, ...], title: str) -> tuple[str, ...]:
    """The section path without a leading heading that repeats the title."""
    if path and title and path[0].strip().lower() == title.strip().lower():
        return path[1:]
    return path


def assemble(
    doc: Document,
    plan: Plan,
    summary_text: str,
    summary_tokens: int,
    code_mode: str,
    *,
    outline: bool = False,
) -> ChunkedDocument:
    text = plan.text
    ids = _Ids(doc.id)
    title = doc.title
    doc_chunk_id = ids(Level.DOCUMENT, summary_text)
    section_ids: list[str] = []
    prop_ids: list[list[str]] = []
    for sec in plan.sections:
        section_ids.append(ids(Level.SECTION, text[sec.start : sec.end]))
        prop_ids.append([ids(Level.PROPOSITION, text[p.start : p.end]) for p in sec.propositions])
    flat_props = [pid for group in prop_ids for pid in group]

    code_title = str(doc.metadata.get("path") or "") if doc.content_type == ContentType.CODE else ""

    sections: list[Chunk] = []
    props: list[Chunk] = []
    sec_embed: list[str] = []
    prop_embed: list[str] = []
    for si, sec in enumerate(plan.sections):
        section = span_chunk(
            doc,
            sec,
            text,
            level=Level.SECTION,
            ids=section_ids,
            index=si,
            parent_id=doc_chunk_id,
            children_ids=tuple(prop_ids[si]),
        )
        sections.append(section)
        sec_embed.append(
            span_embed_text(sec, section.text, title, section.section_path, code_title, code_mode)
        )
        for prop in sec.propositions:
            chunk = span_chunk(
                doc,
                prop,
                text,
                level=Level.PROPOSITION,
                ids=flat_props,
                index=len(props),
                parent_id=section.id,
            )
            props.append(chunk)
            prop_embed.append(
                span_embed_text(prop, chunk.text, title, chunk.section_path, code_title, code_mode)
            )

    summary = _summary_chunk(
        doc, plan, summary_text, summary_tokens, doc_chunk_id, sections, outline=outline
    )
    return ChunkedDocument(
        doc_id=doc.id,
        source=doc.source,
        text=text,
        chunks=(summary, *sections, *props),
        embed_texts=(summary_embed_text(doc, summary_text, code_mode), *sec_embed, *prop_embed),
        warnings=tuple(plan.warnings),
    )


def _summary_chunk(
    doc: Document,
    plan: Plan,
    summary_text: str,
    summary_tokens: int,
    chunk_id: str,
    sections: Sequence[Chunk],
    *,
    outline: bool,
) -> Chunk:
    """The document-level chunk: the summary, with its sections' metadata gathered up."""
    return Chunk(
        id=chunk_id,
        doc_id=doc.id,
        level=Level.DOCUMENT,
        text=summary_text,
        position=0,
        children_ids=tuple(s.id for s in sections),
        title=doc.title,
        source=doc.source,
        content_type=doc.content_type,
        language=doc.language,
        token_count=summary_tokens,
        start_char=0,
        end_char=len(plan.text),
        references=_unique([r for s in sections for r in s.references]),
        defined_symbols=_unique([d for s in sections for d in s.defined_symbols]),
        dependencies=_unique([d for s in sections for d in s.dependencies]),
        error_codes=_unique([e for s in sections for e in s.error_codes]),
        keywords=plan.keywords or extract_keywords(plan.text, top_k=10),
        outline=outline,
    )
