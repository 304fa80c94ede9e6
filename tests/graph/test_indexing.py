"""Batch-by-batch indexing and the corpus-wide rebuild, on the real embedded server."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from tests_support import graph_snapshot

from rayweave.cluster.types import Chunk, ContentType, Document, Entity, Level
from rayweave.graph.builders import build_graph
from rayweave.graph.indexing import index_batch, rebuild_corpus_edges
from rayweave.graph.names import entity_id, normalize_name
from rayweave.graph.schema import EdgeSource, NodeLabel, RelType
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


def test_batches_write_chunks_and_the_corpus_pass_links_them(graph_store: GraphStore) -> None:
    a_id = entity_id(normalize_name("Arthur's Magazine"))
    b_id = entity_id(normalize_name("Godey's Lady's Book"))
    first = index_batch(
        graph_store,
        [sec("a0", "A", "Arthur's Magazine merged into Godey's Lady's Book.", "Arthur's Magazine")],
        documents=[doc("A", "Arthur's Magazine")],
    )
    assert first.chunks == 1
    index_batch(
        graph_store,
        [sec("b0", "B", "Godey's Lady's Book absorbed Arthur's Magazine.", "Godey's Lady's Book")],
        documents=[doc("B", "Godey's Lady's Book")],
    )
    # Which names are entities is a corpus fact: batches write none.
    assert graph_store.counts().node(NodeLabel.ENTITY) == 0
    report = rebuild_corpus_edges(graph_store)
    assert report.edges.edges_written > 0
    assert list(report.seconds) == [
        "stored layer",
        "read chunks",
        "compute",
        "write",
        "clean up",
        "memo files",
    ]
    # Both bridges, whichever batch came first.
    assert b_id in mentions_of(graph_store, "a0")
    assert a_id in mentions_of(graph_store, "b0")
    after = graph_snapshot(graph_store)
    assert len([e for e in after[1] if e[2] == RelType.EXPLAINS.value]) >= 2
    # Rebuilding again changes nothing (idempotent), and writes nothing.
    again = rebuild_corpus_edges(graph_store)
    assert graph_snapshot(graph_store) == after
    assert (again.entities, again.edges.edges_written, again.edges.edges_deleted) == (0, 0, 0)
    assert again.edges.edges_unchanged == report.edges.edges_written


def _widget_corpus() -> list[tuple[Document, list[Chunk]]]:
    """Names whose entity depends on the rest of the corpus: 'Widgets' merges into 'Widget' only
    when both occur, and every page names a later page's title."""
    docs = []
    for i in range(12):
        heading = "Widgets" if i == 0 else ("Widget" if i == 11 else f"Part {i}")
        d = doc(f"W{i}", f"Page {i}")
        c = Chunk(
            id=f"w{i}",
            doc_id=d.id,
            level=Level.SECTION,
            text=f"The widget toolkit page {i} mentions Page {(i + 1) % 12} and Widgets.",
            title=d.title,
            section_path=(d.title, heading),
        )
        docs.append((d, [c]))
    return docs


@pytest.fixture
def sibling(graph_store: GraphStore) -> Iterator[Callable[[str], GraphStore]]:
    """More namespaces beside `graph_store`'s, dropped afterwards."""
    made: list[GraphStore] = []

    def make(suffix: str) -> GraphStore:
        made.append(graph_store.for_namespace(f"{graph_store.ns}-{suffix}"))
        return made[-1]

    yield make
    for store in made:
        store.drop_namespace()


def test_the_graph_does_not_depend_on_batch_size_or_order(
    sibling: Callable[[str], GraphStore],
) -> None:
    corpus = _widget_corpus()
    spacy = {"w3": [Entity(id="", name="Widget Toolkit", kind="product")]}

    def ingest(store: GraphStore, batches: list[list[tuple[Document, list[Chunk]]]]) -> None:
        for batch in batches:
            chunks = [c for _, cs in batch for c in cs]
            index_batch(
                store,
                chunks,
                documents=[d for d, _ in batch],
                mentions={c.id: spacy[c.id] for c in chunks if c.id in spacy},
            )
        rebuild_corpus_edges(store)

    one = sibling("one")
    ingest(one, [corpus])
    many = sibling("many")
    ingest(many, [[pair] for pair in reversed(corpus)])
    # Incremental: the first half ingested and linked, then the rest.
    halves = sibling("halves")
    ingest(halves, [corpus[:6]])
    ingest(halves, [corpus[6:]])
    expected = graph_snapshot(one)
    assert any(e[0] == entity_id("widget") for e in expected[0])
    assert not any(e[0] == entity_id("widgets") for e in expected[0])
    assert any(e[5] == EdgeSource.EXTRACTOR.value for e in expected[1])
    assert graph_snapshot(many) == expected
    assert graph_snapshot(halves) == expected


def test_after_a_delete_the_graph_equals_a_fresh_build_of_what_remains(
    graph_store: GraphStore, sibling: Callable[[str], GraphStore]
) -> None:
    corpus = _widget_corpus()
    for d, chunks in corpus:
        index_batch(graph_store, chunks, documents=[d])
    rebuild_corpus_edges(graph_store)
    graph_store.delete_document("W11")
    rebuild_corpus_edges(graph_store)
    fresh = sibling("fresh")
    for d, chunks in corpus[:11]:
        index_batch(fresh, chunks, documents=[d])
    rebuild_corpus_edges(fresh)
    assert graph_snapshot(graph_store) == graph_snapshot(fresh)
    # Without 'Widget' as a heading, 'Widgets' stands for itself again.
    assert any(e[0] == entity_id("widgets") for e in graph_snapshot(fresh)[0])


def test_extractor_mentions_are_kept_on_the_chunk(graph_store: GraphStore) -> None:
    ents = [Entity(id="x", name="Ray Serve", kind="product", aliases=("serve",))]
    summary = Chunk(id="s", doc_id="D", level=Level.DOCUMENT, text="Ray Serve.", title="D")
    index_batch(
        graph_store,
        [summary, sec("d0", "D", "Ray Serve routes.", "D")],
        documents=[doc("D", "D")],
        mentions={"s": ents, "d0": ents},
    )
    got = graph_store.chunks_and_mentions()[1]
    expected = [Entity(id="", name="Ray Serve", kind="product", aliases=("serve",))]
    assert got == {"s": expected, "d0": expected}


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
    assert graph_store.counts().rel(RelType.RELATED_TO) == 0
    rebuild_corpus_edges(graph_store)
    assert graph_store.counts().rel(RelType.MENTIONS) > 0
    assert graph_store.counts().rel(RelType.RELATED_TO) == 1


def test_a_namespace_written_before_mentions_were_kept_keeps_its_extractor_entities(
    graph_store: GraphStore,
) -> None:
    ents = {"d0": [Entity(id="", name="Widget Toolkit", kind="product")]}
    chunks = [sec("d0", "D", "The Widget Toolkit ships widgets.", "D")]
    # What an earlier version stored: each batch's entity layer, no entities on the chunk.
    index_batch(graph_store, chunks, documents=[doc("D", "D")])
    graph_store.write("MATCH (c:Section {ns: $ns}) SET c.mentions = null")
    graph_store.write_batch(build_graph(chunks, ents, settings=graph_store.settings))
    assert graph_store.chunks_and_mentions()[1] == {}
    rebuild_corpus_edges(graph_store)
    assert entity_id(normalize_name("Widget Toolkit")) in mentions_of(graph_store, "d0")
    assert [e.name for e in graph_store.chunks_and_mentions()[1]["d0"]] == ["Widget Toolkit"]
