"""What the corpus pass's phases map over: a share of whole documents, and what they keep of it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from rayweave.cluster.types import Chunk, Document, Entity
from rayweave.graph.entities import CollectedNames
from rayweave.graph.extraction import Extraction
from rayweave.graph.mentions import Match

Found = Mapping[str, Mapping[str, Match]]  # chunk id -> entity id -> its gazetteer match


@dataclass(frozen=True, slots=True)
class Share:
    """Whole documents' chunks, with an NER extractor's entities and a graph extractor's output
    per chunk id (`documents`: optional Document records, for titles and reference targets)."""

    chunks: Sequence[Chunk]
    mentions: Mapping[str, Sequence[Entity]] = field(default_factory=dict)
    extractions: Mapping[str, Extraction] = field(default_factory=dict)
    documents: Sequence[Document] = ()


@dataclass(frozen=True, slots=True)
class Kept:
    """What phase 1 reads off a share that phase 3 needs again: its normalised names, which
    the lexicon resolves, and each document's keywords."""

    names: CollectedNames
    doc_keywords: Mapping[str, set[str]]


def by_document(share: Share, kept: Kept) -> Iterator[tuple[str, Share, Kept]]:
    """Each document of `share` as a share of its own, with its part of `kept`, in the order the
    share first names them (a titled document with no chunk last)."""
    for doc_id, own in documents_of(share, kept):
        yield doc_id, *document_share(doc_id, own, share, kept)


def documents_of(share: Share, kept: Kept) -> list[tuple[str, list[Chunk]]]:
    """Each document's id and chunks, in `by_document`'s order; `document_share` then splits
    off its share, for the documents a pass computes (a memo reuses the rest unsplit)."""
    chunks: dict[str, list[Chunk]] = {}
    for c in share.chunks:
        chunks.setdefault(c.doc_id, []).append(c)
    titled: list[tuple[str, list[Chunk]]] = [(d, []) for d in kept.names.titles if d not in chunks]
    return [*chunks.items(), *titled]


def document_share(
    doc_id: str, own: Sequence[Chunk], share: Share, kept: Kept
) -> tuple[Share, Kept]:
    """The document's chunks `own` as a share of its own, with its part of `kept`."""
    names = kept.names
    title = names.titles.get(doc_id)
    part = CollectedNames(
        titles={} if title is None else {doc_id: title},
        headings={c.id: names.headings[c.id] for c in own if c.id in names.headings},
        definitions={c.id: names.definitions[c.id] for c in own if c.id in names.definitions},
    )
    keywords = kept.doc_keywords.get(doc_id)
    return (
        Share(own, share.mentions, share.extractions),
        Kept(names=part, doc_keywords={} if keywords is None else {doc_id: keywords}),
    )
