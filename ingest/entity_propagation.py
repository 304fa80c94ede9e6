"""Entities per chunk of one document, from NER run on its sections only.

NER is the costly step, so it runs once per section; the other levels reuse its result: a
proposition keeps the section entities that occur in its own text, and the document summary
takes the union of every section's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rayweave.cluster.types import Chunk, ContentType, Entity, Level


def ner_sections(chunks: Sequence[Chunk]) -> list[int]:
    """Indices of the chunks NER reads: sections, except code (its symbols come from the parser)."""
    return [
        i
        for i, c in enumerate(chunks)
        if c.level is Level.SECTION and c.content_type is not ContentType.CODE
    ]


def propagate_entities(
    chunks: Sequence[Chunk], found: Mapping[str, list[Entity]]
) -> list[list[Entity]]:
    """One entity list per chunk of a document, given `found`: NER's entities by section chunk id
    (a section missing from it has none)."""
    sections = {c.id: found.get(c.id, []) for c in chunks if c.level is Level.SECTION}
    per_chunk: list[list[Entity]] = []
    for c in chunks:
        if c.level is Level.SECTION:
            per_chunk.append(sections[c.id])
        elif c.level is Level.PROPOSITION:
            lowered = c.text.casefold()
            parent = sections.get(c.parent_id or "", [])
            per_chunk.append([e for e in parent if e.name.casefold() in lowered])
        else:
            merged: dict[str, Entity] = {}
            for ents in sections.values():
                for e in ents:
                    merged.setdefault(e.id, e)
            per_chunk.append(list(merged.values()))
    return per_chunk
