"""Extractions kept on chunks, the namespace-free extraction cache, and the corpus pass that turns
extractions into entities, MENTIONS and subject -> object RELATED_TO edges (real ArcadeDB)."""

from __future__ import annotations

import uuid

import pytest

from rayweave.cluster.types import Chunk, ContentType, Document, Level
from rayweave.graph.extraction import (
    Extraction,
    Statement,
    decode_extraction,
    encode_extraction,
    extraction_key,
)
from rayweave.graph.indexing import index_batch, rebuild_corpus_edges
from rayweave.graph.names import entity_id, normalize_name
from rayweave.graph.schema import EdgeSource
from rayweave.graph.store import GraphStore

pytestmark = pytest.mark.integration

FACT = Statement(subject="Ada Lovelace", predicate="wrote notes on", object="Analytical Engine")


def section(cid: str, doc_id: str, text: str) -> Chunk:
    return Chunk(id=cid, doc_id=doc_id, level=Level.SECTION, text=text, title=doc_id)


def document(doc_id: str) -> Document:
    return Document(
        id=doc_id, source=f"{doc_id}.md", title=doc_id, content_type=ContentType.TEXT, text=""
    )


def test_extractions_round_trip_through_json() -> None:
    x = Extraction(statements=(FACT,))
    back = decode_extraction(encode_extraction(x))
    assert back.statements == (FACT,)
    assert extraction_key("a", "t") != extraction_key("b", "t")


def test_extractions_kept_on_chunks_become_relations(graph_store: GraphStore) -> None:
    text = "In 1843 Ada Lovelace published notes on the Analytical Engine."
    index_batch(
        graph_store,
        [section("s1", "D", text), section("s2", "D", "A chunk whose extraction failed.")],
        documents=[document("D")],
        extractions={"s1": Extraction(statements=(FACT,)), "s2": Extraction(error="timeout")},
    )
    assert graph_store.has_extractions()
    assert graph_store.section_count() == 2  # what a fact walk must reach
    assert set(graph_store.chunk_extractions()) == {"s1"}  # a failure is not kept

    rebuild_corpus_edges(graph_store)
    ada, engine = (entity_id(normalize_name(n)) for n in (FACT.subject, FACT.object))
    rows = graph_store.read(
        "MATCH (a:Entity {ns: $ns})-[r:RELATED_TO]->(b:Entity {ns: $ns}) "
        "WHERE r.source = $source RETURN a.id AS a, b.id AS b, r.predicate AS p",
        {"source": EdgeSource.LLM.value},
    )
    assert [(r["a"], r["b"], r["p"]) for r in rows] == [(ada, engine, "wrote notes on")]
    mentioned = graph_store.read(
        "MATCH (:Section {key: $k})-[:MENTIONS]->(e:Entity) RETURN e.id AS id",
        {"k": graph_store.key("s1")},
    )
    assert {ada, engine} <= {r["id"] for r in mentioned}

    # The corpus pass owns these edges: a chunk re-written without its extraction loses them.
    graph_store.delete_document("D")
    index_batch(graph_store, [section("s1", "D", text)], documents=[document("D")])
    rebuild_corpus_edges(graph_store)
    assert not graph_store.has_extractions()
    assert graph_store.section_count() == 1
    left = graph_store.read(
        "MATCH (:Entity {ns: $ns})-[r:RELATED_TO]->() WHERE r.source = $source "
        "RETURN count(r) AS n",
        {"source": EdgeSource.LLM.value},
    )
    assert left[0]["n"] == 0


def test_the_cache_is_shared_by_every_namespace(graph_store: GraphStore) -> None:
    key = extraction_key(f"test-{uuid.uuid4().hex}", "some text")
    assert graph_store.cached_extractions([key]) == {}
    value = encode_extraction(Extraction(statements=(FACT,)))
    assert graph_store.cache_extractions({key: value}) == 1
    other = graph_store.for_namespace(f"t{uuid.uuid4().hex[:12]}")
    try:
        assert other.cached_extractions([key, "extraction:absent"]) == {key: value}
    finally:
        other.close()
