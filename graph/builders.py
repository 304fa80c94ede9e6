"""Pure functions from chunks (and optional extractor output) to the rows `GraphStore` writes.

No model is required: structure comes from chunk fields, entities from titles, headings,
definition sentences, code symbols, error codes and a gazetteer pass (`graph/entities.py`,
`graph/mentions.py`); an NER extractor's mentions and an LLM's statements
(`graph/extraction.py`), when available, only add to that. Every inferred edge carries a
confidence in [0, 1] and the rule (`EdgeSource`) that made it (`graph/edges.py`,
`graph/cooccurrence.py`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet

from rayweave.cluster.settings import GraphSettings
from rayweave.cluster.types import Chunk, ContentType, Document, Entity
from rayweave.graph.comentions import (
    chunk_sentences,
    comention_edges,
    pair_support,
    sentence_entities,
)
from rayweave.graph.cooccurrence import chunk_units, related_edges, topic_rows, unit_entities
from rayweave.graph.edges import (
    EdgeAccumulator,
    code_edges,
    error_edges,
    explains_edges,
    statement_edges,
)
from rayweave.graph.entities import (
    CollectedNames,
    EntityResolver,
    collect_names,
    document_titles,
)
from rayweave.graph.extraction import Extraction
from rayweave.graph.mentions import (
    Match,
    extracted_entities,
    gazetteer_matches,
    generic_entities,
    mention_edges,
    text_matcher,
)
from rayweave.graph.schema import EntityRow, GraphBatch, NodeLabel, NodeRef, TopicRow


def build_graph(
    chunks: Sequence[Chunk],
    mentions: Mapping[str, Sequence[Entity]] | None = None,
    *,
    documents: Sequence[Document] = (),
    known: Mapping[str, Sequence[str]] | None = None,
    extractions: Mapping[str, Extraction] | None = None,
    settings: GraphSettings | None = None,
) -> GraphBatch:
    """Entities, topics and every inferred edge for `chunks` (see module docstring).

    `mentions` maps chunk ids to an extractor's entities (their ids are provisional and ignored);
    `known` maps alias forms to ids of entities stored elsewhere, which the build then reuses
    (the corpus pass builds from every chunk and passes none); `extractions` is the optional LLM
    hook's output. Structure edges (CHUNK_OF/HAS_CHILD/NEXT) are written by
    `GraphStore.write_chunks` from the chunk fields and are not repeated here.
    """
    cfg = settings or GraphSettings()
    mentions = mentions or {}
    extractions = extractions or {}
    resolver = EntityResolver(known)
    acc = EdgeAccumulator()

    # 1. Names from structure, then EXPLAINS from titles, headings and definitions.
    names = collect_names(
        resolver, chunks, document_titles(chunks, documents), mentions, extractions
    )
    explains_edges(acc, resolver, chunks, names)

    # 2. MENTIONS: extractor output plus the gazetteer pass.
    entity_rows = resolver.rows()
    units = chunk_units(chunks)
    found = gazetteer_matches(resolver, entity_rows, chunks, cfg.gazetteer_max_ngram)
    generic = generic_entities(found, units, cfg.gazetteer_max_df)
    extracted = extracted_entities(chunks, mentions, extractions)
    mention_edges(acc, resolver, chunks, found, generic, extracted)

    # 3. Code (DEFINES, USES, REFERENCES), errors (SOLVES, MENTIONS), LLM statements.
    code_edges(acc, resolver, chunks, documents, _symbol_uses(chunks, found, entity_rows))
    error_edges(acc, resolver, chunks)
    statement_edges(acc, resolver, chunks, extractions)

    # 4. RELATED_TO by co-occurrence, CO_MENTIONED within sentences, topics from keywords.
    topics = _add_cooccurrence(acc, chunks, units, cfg)
    if cfg.sentence_links:
        subjects = _subjects(resolver, chunks, names)
        match = text_matcher(resolver, entity_rows, cfg.gazetteer_max_ngram)
        _add_comentions(acc, chunks, subjects, match, found, generic)
    return _batch(acc, entity_rows, topics)


def _symbol_uses(
    chunks: Sequence[Chunk],
    found: Mapping[str, Mapping[str, Match]],
    entity_rows: Sequence[EntityRow],
) -> dict[str, list[str]]:
    """Per code chunk, the symbol entities its text names (candidates for USES)."""
    symbol_ids = {r.id for r in entity_rows if r.kind == "symbol"}
    return {
        c.id: [eid for eid in found[c.id] if eid in symbol_ids]
        for c in chunks
        if c.content_type is ContentType.CODE
    }


def _add_cooccurrence(
    acc: EdgeAccumulator,
    chunks: Sequence[Chunk],
    units: Mapping[NodeRef, NodeRef],
    settings: GraphSettings,
) -> list[TopicRow]:
    entity_edges = [
        e
        for e in acc.rows.values()
        if e.dst.label is NodeLabel.ENTITY and e.src.label is not NodeLabel.ENTITY
    ]
    related = related_edges(unit_entities(entity_edges, units), settings)
    topics: list[TopicRow]
    topics, belongs = topic_rows(chunks, settings)
    for e in (*related, *belongs):
        acc.add(
            e.rel,
            e.src,
            e.dst,
            confidence=e.confidence,
            source=e.source,
            weight=e.weight,
            count=e.count,
        )
    return topics


def _subjects(
    resolver: EntityResolver, chunks: Sequence[Chunk], names: CollectedNames
) -> dict[str, list[str]]:
    """Per chunk id, the entities it is about: its document's title and its own heading."""
    out: dict[str, list[str]] = {}
    for c in chunks:
        forms = [names.titles.get(c.doc_id), names.headings.get(c.id)]
        out[c.id] = [eid for form in forms if form for eid in resolver.resolve(form)]
    return out


def _add_comentions(
    acc: EdgeAccumulator,
    chunks: Sequence[Chunk],
    subjects: Mapping[str, Sequence[str]],
    match: Callable[[str], dict[str, Match]],
    found: Mapping[str, Mapping[str, Match]],
    generic: AbstractSet[str],
) -> None:
    """CO_MENTIONED between the entities of each sentence (`graph/comentions.py`), with rarity
    from the chunks whose text names each entity."""
    df = Counter(eid for ents in found.values() for eid in ents)
    per_sentence: list[dict[str, float]] = []
    for cid, texts in chunk_sentences(chunks).items():
        matches = [match(t) for t in texts]
        per_sentence += sentence_entities(texts, matches, subjects.get(cid, ()), generic)
    for e in comention_edges(pair_support(per_sentence, df), df):
        acc.rows[(e.rel, e.src, e.dst)] = e  # one rule makes these, one edge per pair


def _batch(
    acc: EdgeAccumulator, entity_rows: Sequence[EntityRow], topics: Sequence[TopicRow]
) -> GraphBatch:
    """Only entities some edge uses: a name nothing links to would be an orphan node."""
    wanted = {e.dst.id for e in acc.rows.values() if e.dst.label is NodeLabel.ENTITY}
    wanted |= {e.src.id for e in acc.rows.values() if e.src.label is NodeLabel.ENTITY}
    entities = tuple(r for r in entity_rows if r.id in wanted)
    return GraphBatch(entities=entities, topics=tuple(topics), edges=tuple(acc.rows.values()))
