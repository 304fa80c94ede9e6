"""Batch-by-batch indexing and the corpus-wide rebuild, on the real embedded server."""

from __future__ import annotations

import pytest

from rayweave.cluster.types import Chunk, ContentType, Document, Level
from rayweave.graph.indexing import index_batch, rebuild_corpus_edges
from rayweave.graph.names import entity_id, normalize_name
from rayweave.graph.schema import RelType
from rayweave.graph.store import GraphStore

pytestmark = pytest.mark.integration


def doc(doc_id: str, title: str) -> Document:
    return Document(
        id=doc_id, source=f"{doc_id}.md", title=title, content_type=ContentType.MARKDOWN, text=""
    )


def sec(cid: str, doc_id: str, text: str, title: str) -> Chunk:
    return Chunk(
        id=cid, doc_id=doc_id, level=Level.SECTION, text=text, title=title, keywords=("magazine",)
    )


def mentions_of(store: GraphStore, chunk_key: str) -> set[str]:
    rows = store.read(
        "MATCH (:Section {key: $k})-[:MENTIONS]->(e:Entity) RETURN e.id AS id",
        {"k": store.key(chunk_key)},
    )
    return {r["id"] for r in rows}


def test_later_batches_link_to_earlier_entities_and_rebuild_links_back(
    graph_store: GraphStore,
) -> None:
    a_id = entity_id(normalize_name("Arthur's Magazine"))
    b_id = entity_id(normalize_name("Godey's Lady's Book"))
    first = index_batch(
        graph_store,
        [sec("a0", "A", "Arthur's Magazine merged into Godey's Lady's Book.", "Arthur's Magazine")],
        documents=[doc("A", "Arthur's Magazine")],
    )
    assert first.chunks == 1
    # B's title was unknown when A was indexed: no bridge yet.
    assert b_id not in mentions_of(graph_store, "a0")
    index_batch(
        graph_store,
        [sec("b0", "B", "Godey's Lady's Book absorbed Arthur's Magazine.", "Godey's Lady's Book")],
        documents=[doc("B", "Godey's Lady's Book")],
    )
    # B's batch saw A's stored aliases: B -> A is linked at once.
    assert a_id in mentions_of(graph_store, "b0")
    before = graph_store.counts()
    report = rebuild_corpus_edges(graph_store)
    assert report.edges > 0
    assert b_id in mentions_of(graph_store, "a0")
    after = graph_store.counts()
    assert after.nodes == before.nodes
    # Exactly one new edge: the A -> B bridge.
    assert after.rel(RelType.MENTIONS) == before.rel(RelType.MENTIONS) + 1
    # Rebuilding again changes nothing (idempotent).
    rebuild_corpus_edges(graph_store)
    assert graph_store.counts() == after
    assert after.rel(RelType.EXPLAINS) >= 2


def test_stored_chunks_round_trip(graph_store: GraphStore) -> None:
    chunks = [
        Chunk(
            id="sum",
            doc_id="D",
            level=Level.DOCUMENT,
            text="summary",
            title="Doc D",
            keywords=("k",),
        ),
        Chunk(
            id="s1",
            doc_id="D",
            level=Level.SECTION,
            text="body",
            parent_id="sum",
            section_path=("Doc D", "Part"),
            references=("x.md",),
            defined_symbols=("pkg.f",),
            content_type=ContentType.CODE,
            language="python",
        ),
    ]
    graph_store.write_chunks(chunks)
    got = {c.id: c for c in graph_store.chunks()}
    assert got["sum"].level is Level.DOCUMENT
    assert got["sum"].doc_id == "D"
    assert got["s1"].section_path == ("Doc D", "Part")
    assert got["s1"].references == ("x.md",)
    assert got["s1"].content_type is ContentType.CODE
    assert {c.id for c in graph_store.chunks(doc_ids=["nope"])} == set()


def test_cooccurrence_is_written_by_the_corpus_pass_not_per_batch(graph_store: GraphStore) -> None:
    from rayweave.cluster.types import Entity

    chunks = [
        sec(f"s{i}", f"D{i}", "Ray Serve routes HTTP through Starlette.", f"Doc {i}")
        for i in range(3)
    ] + [sec(f"o{i}", f"O{i}", f"Unrelated text number {i}.", f"Other {i}") for i in range(5)]
    both = [Entity(id="", name="Ray Serve"), Entity(id="", name="Starlette")]
    index_batch(
        graph_store,
        chunks,
        documents=[doc(c.doc_id, c.title) for c in chunks],
        mentions={f"s{i}": both for i in range(3)},
    )
    assert graph_store.counts().rel(RelType.MENTIONS) > 0
    assert graph_store.counts().rel(RelType.RELATED_TO) == 0
    rebuild_corpus_edges(graph_store)
    assert graph_store.counts().rel(RelType.RELATED_TO) == 1
