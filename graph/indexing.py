"""Writing chunks into the graph: per batch during ingest, and once over the corpus after it.

`index_batch` is what an ingest writer calls for each batch: documents and chunk nodes with
their structure, and each chunk's extractor entities kept on the chunk. Nothing entity-level is
written per batch, because none of it is a fact about one batch: which names are entities, how
plurals and short code names merge, which names are too generic to link, co-occurrence and
topics all depend on the whole corpus. `rebuild_corpus_edges` builds that layer from the stored
chunks alone and replaces the previous one, so the graph after any sequence of ingests and
deletes equals a single ingest of the documents that remain, whatever the batch size or order.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rayweave.cluster.types import Chunk, Document, Entity
from rayweave.graph.builders import build_graph
from rayweave.graph.extraction import Extraction, encode_extraction
from rayweave.graph.schema import CORPUS_SOURCES
from rayweave.graph.store import GraphStore, WriteReport
from rayweave.graph.synonyms import synonym_edges


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexReport:
    documents: int
    chunks: int


def index_batch(
    store: GraphStore,
    chunks: Sequence[Chunk],
    *,
    documents: Sequence[Document] = (),
    mentions: Mapping[str, Sequence[Entity]] | None = None,
    extractions: Mapping[str, Extraction] | None = None,
) -> IndexReport:
    """Write one ingest batch's documents and chunks (`mentions`: NER's entities per chunk id;
    `extractions`: what a graph extractor read off section chunks; both kept for the corpus
    pass). A failed extraction is not kept: the chunk has none, as if no extractor had run."""
    docs = store.write_documents(documents) if documents else 0
    encoded = {
        cid: encode_extraction(x) for cid, x in (extractions or {}).items() if x.error is None
    }
    written = store.write_chunks(chunks, mentions, encoded) if chunks else 0
    return IndexReport(documents=docs, chunks=written)


def rebuild_corpus_edges(store: GraphStore) -> WriteReport:
    """Build entities, topics and every rule-made edge from all stored chunks and replace the
    previous ones (see module docstring). Readers see the old layer, then old and new together,
    never neither: new rows are written first, what they do not repeat is deleted after."""
    chunks, mentions = store.chunks_and_mentions()
    if len(mentions) < len(chunks):  # written by an earlier version: keep its NER entities
        store.backfill_mentions()
        chunks, mentions = store.chunks_and_mentions()
    extractions = store.chunk_extractions()
    batch = build_graph(chunks, mentions, settings=store.settings, extractions=extractions)
    run = uuid.uuid4().hex
    entities = store.write_entities(batch.entities, mode="replace")
    topics = store.write_topics(batch.topics)
    edges = store.write_edges(batch.edges, mode="replace", run=run)
    store.write(
        "MATCH (t:Topic {ns: $ns}) WHERE NOT t.key IN $keep DETACH DELETE t",
        {"keep": [store.key(t.id) for t in batch.topics]},
        op="rebuild_corpus_edges",
    )
    store.delete_stale(run, CORPUS_SOURCES)
    # Entities nothing introduces any more (a plural now merged into its singular, a deleted
    # document's names) go; a zero threshold drops no edge.
    store.prune(0.0)
    store.refresh_entity_stats()  # mentions that went changed document frequencies
    store.touch()
    distinct = len({(e.rel, e.src, e.dst) for e in batch.edges})
    return WriteReport(
        entities=entities, topics=topics, edges=edges, skipped_edges=distinct - edges
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
