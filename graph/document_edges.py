"""Phase 3 of the corpus pass, one document at a time: its own edges, and what it adds to the
tallies that cross documents.

A document's own edges (every edge from its chunks and its Document node) depend on its chunks
and on a few corpus-wide facts, which it reads only through `Facts`: how the lexicon resolves
the names it holds, which entities are generic or symbols, where its references point, which
of its keywords are frequent, and the gazetteer. So an upkeep can record what each document
read (`graph/fact_reads.py`) and recompute only the documents whose text or read facts moved
(`graph/edge_memo.py`). What a document adds across documents is kept as its contribution (its
units' entities, its sentences' entities, its frequent keywords), not as counts: `cross_tally`
counts them over the corpus, so that rarity, which moves with every document, is never part
of what a document keeps.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from rayweave.cluster.settings import GraphSettings
from rayweave.cluster.types import Chunk, ContentType
from rayweave.graph.comentions import chunk_sentences, pair_support, sentence_entities
from rayweave.graph.cooccurrence import PairCounts, chunk_units, unit_entities
from rayweave.graph.edges import (
    EdgeAccumulator,
    Statement,
    code_edges,
    error_edges,
    explains_edges,
    statement_rows,
)
from rayweave.graph.entities import CollectedNames, Resolves
from rayweave.graph.mentions import Match, extracted_entities, mention_edges
from rayweave.graph.schema import EdgeRow, NodeLabel, NodeRef
from rayweave.graph.share import Found, Kept, Share


@dataclass(frozen=True, slots=True)
class Facts:
    """Everything of the corpus that a document's phase 3 reads besides its own chunks."""

    resolver: Resolves
    match: Callable[[str], Mapping[str, Match]]  # the gazetteer, for sentences
    symbols: AbstractSet[str]  # the ids of symbol entities
    generic: AbstractSet[str]  # entities too common to link by a gazetteer match alone
    targets: Mapping[str, NodeRef]  # where reference targets point
    frequent: Callable[[str], bool]  # whether a keyword is seen in enough documents for topics
    has_sections: bool
    settings: GraphSettings


@dataclass(frozen=True, slots=True)
class DocumentTally:
    """What one document adds to the tallies across documents."""

    doc_id: str
    units: tuple[frozenset[str], ...]  # each co-occurrence unit's entities
    sentences: tuple[Mapping[str, float], ...]  # each sentence's entities, with certainty
    keywords: frozenset[str]  # its frequent keywords
    statements: tuple[Statement, ...]  # an extractor's statements, by chunk
    entities: frozenset[str]  # the entity ids its edges end at


@dataclass(frozen=True, slots=True)
class DocumentPart:
    edges: list[EdgeRow]  # every edge from the document's chunks and Document node, final
    tally: DocumentTally


def document_part(
    doc_id: str, share: Share, facts: Facts, found: Found, kept: Kept
) -> DocumentPart:
    """Phase 3 over one document's share (`graph/share.py::by_document`)."""
    chunks, resolver = share.chunks, facts.resolver
    acc = EdgeAccumulator()
    explains_edges(acc, resolver, chunks, kept.names)
    extracted = extracted_entities(chunks, share.mentions, share.extractions)
    mention_edges(acc, resolver, chunks, found, facts.generic, extracted)
    code_edges(acc, resolver, chunks, facts.targets, _symbol_uses(chunks, found, facts.symbols))
    error_edges(acc, resolver, chunks)
    statements = statement_rows(resolver, chunks, share.extractions)
    edges = list(acc.rows.values())
    entity_edges = [
        e for e in edges if e.dst.label is NodeLabel.ENTITY and e.src.label is not NodeLabel.ENTITY
    ]
    units = unit_entities(entity_edges, chunk_units(chunks, has_sections=facts.has_sections))
    sentences = _sentences(chunks, kept.names, facts) if facts.settings.sentence_links else []
    keywords = kept.doc_keywords.get(doc_id, ())
    tally = DocumentTally(
        doc_id=doc_id,
        units=tuple(frozenset(u) for u in units),
        sentences=tuple(sentences),
        keywords=frozenset(k for k in keywords if facts.frequent(k)),
        statements=tuple(statements),
        entities=frozenset(e.dst.id for e in edges if e.dst.label is NodeLabel.ENTITY),
    )
    return DocumentPart(edges=edges, tally=tally)


def _symbol_uses(
    chunks: Sequence[Chunk], found: Found, symbols: AbstractSet[str]
) -> dict[str, list[str]]:
    """Per code chunk, the symbol entities its text names (candidates for USES)."""
    return {
        c.id: [eid for eid in found[c.id] if eid in symbols]
        for c in chunks
        if c.content_type is ContentType.CODE
    }


def _sentences(
    chunks: Sequence[Chunk], names: CollectedNames, facts: Facts
) -> list[dict[str, float]]:
    """Each sentence's entities (`graph/comentions.py`), for CO_MENTIONED support."""
    doc_of = {c.id: c.doc_id for c in chunks}
    out: list[dict[str, float]] = []
    for cid, texts in chunk_sentences(chunks).items():
        matches = [facts.match(t) for t in texts]
        subjects = _subjects(facts.resolver, names, cid, doc_of[cid])
        out += sentence_entities(texts, matches, subjects, facts.generic)
    return out


def _subjects(resolver: Resolves, names: CollectedNames, cid: str, doc_id: str) -> list[str]:
    """The entities a chunk is about: its document's title and its own heading."""
    forms = [names.titles.get(doc_id), names.headings.get(cid)]
    return [eid for form in forms if form for eid in resolver.resolve(form)]


@dataclass(slots=True)
class CrossTally:
    """What a share counts towards edges that do not start at its own nodes."""

    units: PairCounts = field(default_factory=PairCounts)  # entities per co-occurrence unit
    support: dict[tuple[str, str], tuple[float, int]] = field(default_factory=dict)
    keyword_pairs: Counter[tuple[str, str]] = field(default_factory=Counter)
    doc_keywords: dict[str, set[str]] = field(default_factory=dict)  # frequent ones
    statements: list[Statement] = field(default_factory=list)
    entities: set[str] = field(default_factory=set)  # entity ids the share's edges use

    def merge(self, other: CrossTally) -> None:
        self.units.merge(other.units)
        for pair, (s, n) in other.support.items():
            s0, n0 = self.support.get(pair, (0.0, 0))
            self.support[pair] = (s0 + s, n0 + n)
        self.keyword_pairs.update(other.keyword_pairs)
        self.doc_keywords.update(other.doc_keywords)
        self.statements.extend(other.statements)
        self.entities |= other.entities


def cross_tally(
    tallies: Iterable[DocumentTally],
    chunk_df: Mapping[str, int],
    settings: GraphSettings,
    *,
    units: PairCounts | None = None,
) -> CrossTally:
    """The documents' contributions counted (`chunk_df`: the corpus's chunks naming each
    entity, for sentence rarity; `units`: their units' co-occurrence, when already counted)."""
    cross = CrossTally() if units is None else CrossTally(units=units)
    sentences: list[Mapping[str, float]] = []
    for t in tallies:
        if units is None:
            cross.units.count(t.units)
        sentences += t.sentences
        if t.keywords:
            cross.doc_keywords[t.doc_id] = set(t.keywords)
        cross.statements += t.statements
        cross.entities |= t.entities
    if settings.sentence_links:
        cross.support = pair_support(sentences, chunk_df)
    pairs = PairCounts()
    pairs.count_pairs(cross.doc_keywords.values())
    cross.keyword_pairs = pairs.joint
    return cross
