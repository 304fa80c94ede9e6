"""Writing chunks into the graph: per batch during ingest, and once over the corpus after it.

`index_batch` is what an ingest writer calls for each batch of chunks: documents, chunk nodes
and structure, then the builders' entities and edges, linking to entities earlier batches
stored (their aliases are the gazetteer). Corpus-level evidence cannot be complete batch by
batch: a title ingested later is not in an earlier batch's gazetteer, and co-occurrence
statistics need every unit, so batches write none. `rebuild_corpus_edges` closes that gap after
ingest: it rebuilds from every stored chunk and merges the result (edges only ever strengthen;
co-occurrence RELATED_TO and topics, being corpus statistics, are replaced).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rayweave.cluster.types import Chunk, Document, Entity
from rayweave.graph.builders import Extraction, build_graph
from rayweave.graph.schema import EdgeRow, EdgeSource, GraphBatch, RelType
from rayweave.graph.store import GraphStore, WriteReport
from rayweave.graph.synonyms import synonym_edges


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexReport:
    documents: int
    chunks: int
    graph: WriteReport


def index_batch(
    store: GraphStore,
    chunks: Sequence[Chunk],
    *,
    documents: Sequence[Document] = (),
    mentions: Mapping[str, Sequence[Entity]] | None = None,
    extractions: Mapping[str, Extraction] | None = None,
    gazetteer: Mapping[str, Sequence[str]] | None = None,
) -> IndexReport:
    """Write one ingest batch. `gazetteer` defaults to `store.gazetteer()` (pass a cached one to
    save that read on large namespaces). Co-occurrence RELATED_TO edges are left to
    `rebuild_corpus_edges`, which replaces them anyway."""
    docs = store.write_documents(documents) if documents else 0
    written = store.write_chunks(chunks) if chunks else 0
    known = store.gazetteer() if gazetteer is None else gazetteer
    batch = build_graph(
        chunks,
        mentions,
        documents=documents,
        known=known,
        extractions=extractions,
        settings=store.settings,
        cooccurrence=False,
    )
    return IndexReport(documents=docs, chunks=written, graph=store.write_batch(batch))


def rebuild_corpus_edges(store: GraphStore) -> WriteReport:
    """Re-run the rule-based builders over every stored chunk of the namespace (see module
    docstring). Extractor and LLM edges already stored stay; their entities join the gazetteer."""
    chunks = store.chunks()
    batch = build_graph(chunks, known=store.gazetteer(), settings=store.settings)
    related: list[EdgeRow] = []
    others: list[EdgeRow] = []
    for e in batch.edges:  # one pass: corpus-wide batches hold 10^5 edges
        is_cooc = e.rel is RelType.RELATED_TO and e.source is EdgeSource.COOCCURRENCE
        (related if is_cooc else others).append(e)
    rest = GraphBatch(entities=batch.entities, topics=batch.topics, edges=tuple(others))
    report = store.write_batch(rest)
    # Topics are corpus statistics too: clusters this pass did not find again (their members
    # changed with the documents) go, with their edges.
    store.write(
        "MATCH (t:Topic {ns: $ns}) WHERE NOT t.key IN $keep DETACH DELETE t",
        {"keep": [store.key(t.id) for t in batch.topics]},
        op="rebuild_corpus_edges",
    )
    # Replaced even when nothing co-occurs any more: deleted documents take their statistics along.
    store.write(
        """
        MATCH (a:Entity {ns: $ns})-[r:RELATED_TO]->(:Entity)
        WHERE r.source = $source
        DELETE r
        """,
        {"source": EdgeSource.COOCCURRENCE.value},
        op="rebuild_corpus_edges",
    )
    linked = store.write_edges(tuple(related), mode="replace") if related else 0
    store.touch()  # also when nothing co-occurs any more: the deletes above changed the graph
    return WriteReport(
        entities=report.entities,
        topics=report.topics,
        edges=report.edges + linked,
        skipped_edges=report.skipped_edges,
    )


def rebuild_synonyms(
    store: GraphStore,
    encode: Callable[[list[str]], np.ndarray],
    *,
    threshold: float,
    max_per_entity: int,
) -> int:
    """Replace the namespace's SYNONYM_OF edges with those the encoder finds among every entity
    name now stored (`graph/synonyms.py`); returns how many were written."""
    rows = store.read(
        "MATCH (e:Entity {ns: $ns}) RETURN e.id AS id, e.name AS name", op="rebuild_synonyms"
    )
    entities = sorted((str(r["id"]), str(r["name"])) for r in rows if r["name"])
    edges = (
        synonym_edges(
            entities,
            encode([name for _, name in entities]),
            threshold=threshold,
            max_per_entity=max_per_entity,
        )
        if entities
        else []
    )
    store.write(
        "MATCH (:Entity {ns: $ns})-[r:SYNONYM_OF]->(:Entity) DELETE r", op="rebuild_synonyms"
    )
    written = store.write_edges(edges, mode="replace") if edges else 0
    store.touch()
    return written
