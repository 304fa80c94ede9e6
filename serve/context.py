"""Context assembly for an LLM (seed 002): hits grouped by document, then by section, in reading
order, within a token budget. An LLM reads coherent sections better than ranked fragments, so
propositions are shown under their section heading, and documents in order of their best hit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rayweave.cluster.types import Hit, Level
from rayweave.serve.schemas import Context, ContextDocument, ContextSection


def estimate_tokens(text: str) -> int:
    """Word-piece tokens average ~1.3 per English word; close enough for a budget."""
    return int(len(text.split()) * 1.3) + 1


@dataclass(slots=True)
class _Section:
    key: str
    heading: str
    position: int
    texts: list[str] = field(default_factory=list)
    chunk_ids: list[str] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)


def assemble_context(
    hits: Sequence[Hit], *, max_tokens: int, count_tokens: Callable[[str], int] = estimate_tokens
) -> Context:
    docs: dict[str, dict[str, _Section]] = {}
    doc_meta: dict[str, Hit] = {}
    used = 0
    for hit in hits:
        if hit.level is Level.DOCUMENT:
            continue
        cost = count_tokens(hit.text)
        if used + cost > max_tokens:
            continue
        key = hit.id if hit.level is Level.SECTION else str(hit.metadata.get("parent_id") or hit.id)
        sections = docs.setdefault(hit.doc_id, {})
        doc_meta.setdefault(hit.doc_id, hit)
        section = sections.get(key)
        if section is None:
            position = int(hit.metadata.get("position", 0)) if hit.level is Level.SECTION else 10**9
            section = sections[key] = _Section(
                key=key, heading=" > ".join(hit.section_path), position=position
            )
        if hit.level is Level.SECTION:
            # The whole section supersedes its propositions already collected.
            used -= sum(count_tokens(t) for t in section.texts)
            section.texts, section.chunk_ids, section.positions = [hit.text], [hit.id], [0]
            section.position = int(hit.metadata.get("position", section.position))
        elif len(section.chunk_ids) == 1 and section.chunk_ids[0] == key:
            continue  # the section's full text is already in
        else:
            section.texts.append(hit.text)
            section.chunk_ids.append(hit.id)
            section.positions.append(int(hit.metadata.get("position", 0)))
        used += cost

    documents: list[ContextDocument] = []
    lines: list[str] = []
    for doc_id, sections in docs.items():
        meta = doc_meta[doc_id]
        ordered = sorted(sections.values(), key=lambda s: (s.position, s.key))
        ctx_sections = []
        lines.append(f"# {meta.title or meta.source}")
        for s in ordered:
            order = sorted(range(len(s.texts)), key=lambda i: s.positions[i])
            text = "\n".join(s.texts[i] for i in order)
            ctx_sections.append(
                ContextSection(
                    heading=s.heading, text=text, chunk_ids=[s.chunk_ids[i] for i in order]
                )
            )
            if s.heading:
                lines.append(f"## {s.heading}")
            lines.append(text)
        documents.append(
            ContextDocument(
                doc_id=doc_id, title=meta.title, source=meta.source, sections=ctx_sections
            )
        )
    return Context(documents=documents, text="\n\n".join(lines), tokens=used)
