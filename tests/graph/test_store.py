"""GraphStore against a real Bolt server (embedded ArcadeDB; Neo4j too when RAYWEAVE_GRAPH__URI
is set)."""

from __future__ import annotations

from typing import Any

import pytest

from rayweave.cluster.errors import ConfigError, GraphStoreError, InputError, NotFoundError
from rayweave.cluster.types import Chunk, ContentType, Document, Level
from rayweave.graph.schema import (
    EdgeRow,
    EdgeSource,
    EntityRow,
    GraphBatch,
    NodeLabel,
    NodeRef,
    RelType,
    TopicRow,
    schema_statements,
)
from rayweave.graph.store import GraphStore

pytestmark = pytest.mark.integration

D, S, P, E, T = (
    NodeLabel.DOCUMENT,
    NodeLabel.SECTION,
    NodeLabel.PROPOSITION,
    NodeLabel.ENTITY,
    NodeLabel.TOPIC,
)


def doc(doc_id: str, title: str = "") -> Document:
    return Document(
        id=doc_id,
        source=f"{doc_id}.md",
        title=title or doc_id,
        content_type=ContentType.MARKDOWN,
        text="...",
    )


def doc_chunks(doc_id: str, n_sections: int = 2) -> list[Chunk]:
    """A Level.DOCUMENT summary, `n_sections` sections in sequence, one proposition under the
    first."""
    sec = [f"{doc_id}-s{i}" for i in range(n_sections)]
    out = [
        Chunk(
            id=f"{doc_id}-sum",
            doc_id=doc_id,
            level=Level.DOCUMENT,
            text=f"{doc_id} summary",
            children_ids=tuple(sec),
        )
    ]
    for i, sid in enumerate(sec):
        out.append(
            Chunk(
                id=sid,
                doc_id=doc_id,
                level=Level.SECTION,
                text=f"{doc_id} section {i}",
                position=i,
                parent_id=f"{doc_id}-sum",
                prev_id=sec[i - 1] if i > 0 else None,
                next_id=sec[i + 1] if i + 1 < len(sec) else None,
                children_ids=(f"{doc_id}-p0",) if i == 0 else (),
                section_path=("Intro", f"Part {i}"),
                keywords=("alpha", "beta"),
            )
        )
    out.append(
        Chunk(
            id=f"{doc_id}-p0",
            doc_id=doc_id,
            level=Level.PROPOSITION,
            text=f"{doc_id} fact",
            parent_id=sec[0],
        )
    )
    return out


def entity(eid: str, name: str, kind: str = "concept", aliases: tuple[str, ...] = ()) -> EntityRow:
    return EntityRow(id=eid, name=name, kind=kind, aliases=aliases)


def edge(rel: RelType, src: NodeRef, dst: NodeRef, **kw: Any) -> EdgeRow:
    return EdgeRow(rel=rel, src=src, dst=dst, **kw)


def two_doc_edges() -> tuple[EdgeRow, ...]:
    a, a_p0 = NodeRef(D, "a"), NodeRef(P, "a-p0")
    a_s0, b_s1 = NodeRef(S, "a-s0"), NodeRef(S, "b-s1")
    shared, lonely = NodeRef(E, "shared"), NodeRef(E, "lonely")
    extractor, gazetteer = EdgeSource.EXTRACTOR, EdgeSource.GAZETTEER
    return (
        edge(RelType.MENTIONS, a_s0, shared, count=2, confidence=0.8, source=extractor),
        edge(RelType.MENTIONS, b_s1, shared, confidence=0.8, source=extractor),
        edge(RelType.MENTIONS, a_p0, lonely, confidence=0.9, source=gazetteer),
        edge(RelType.EXPLAINS, a, lonely, confidence=0.95, source=EdgeSource.TITLE),
        edge(RelType.BELONGS_TO, a, NodeRef(T, "t1"), confidence=0.5, source=EdgeSource.KEYWORDS),
        edge(
            RelType.RELATED_TO,
            shared,
            lonely,
            weight=0.4,
            confidence=0.4,
            source=EdgeSource.COOCCURRENCE,
        ),
    )


def write_mention_ends(store: GraphStore) -> tuple[NodeRef, NodeRef]:
    """Doc a's chunks and entity e1: the two ends of a MENTIONS edge a test writes over."""
    store.write_chunks(doc_chunks("a"))
    store.write_entities([entity("e1", "Thing")])
    return NodeRef(S, "a-s0"), NodeRef(E, "e1")


def write_two_docs(store: GraphStore) -> None:
    """Docs a and b both mention `shared`; only a mentions `lonely`; a alone belongs to topic t1."""
    store.write_documents([doc("a", "Alpha Doc"), doc("b", "Beta Doc")])
    store.write_chunks(doc_chunks("a") + doc_chunks("b"))
    store.write_batch(
        GraphBatch(
            entities=(
                entity("shared", "Ray Serve", aliases=("serve",)),
                entity("lonely", "Lonely Thing"),
            ),
            topics=(TopicRow(id="t1", name="alpha", keywords=("alpha",)),),
            edges=two_doc_edges(),
        )
    )


class TestSchema:
    def test_schema_is_idempotent_and_keys_are_unique(self, graph_store: GraphStore) -> None:
        for statement in schema_statements():  # a second and third run change nothing
            graph_store.write(statement)
        graph_store.write(statement)
        graph_store.write(
            "CREATE (e:Entity {key: $k, ns: $ns, id: 'x'})", {"k": graph_store.key("x")}
        )
        with pytest.raises(GraphStoreError):
            graph_store.write(
                "CREATE (e:Entity {key: $k, ns: $ns, id: 'x'})", {"k": graph_store.key("x")}
            )
        assert graph_store.counts().node(E) == 1

    def test_bad_namespace_is_refused(self, graph_store: GraphStore) -> None:
        with pytest.raises(ConfigError, match="namespace"):
            graph_store.for_namespace("a:b")
        with pytest.raises(ConfigError, match="namespace"):
            graph_store.for_namespace("x'}) DETACH DELETE n //")

    def test_edge_endpoints_are_checked(self) -> None:
        with pytest.raises(ValueError, match="EXPLAINS cannot link Entity -> Document"):
            edge(RelType.EXPLAINS, NodeRef(E, "x"), NodeRef(D, "d"))
        with pytest.raises(ValueError, match="confidence"):
            edge(RelType.MENTIONS, NodeRef(S, "x"), NodeRef(E, "e"), confidence=1.5)


class TestWrites:
    def test_structure_edges_from_chunk_fields(self, graph_store: GraphStore) -> None:
        graph_store.write_documents([doc("a")])
        graph_store.write_chunks(doc_chunks("a", n_sections=3))
        c = graph_store.counts()
        assert (c.node(D), c.node(S), c.node(P)) == (1, 3, 1)
        assert (
            c.rel(RelType.CHUNK_OF) == 4
        )  # sections and the proposition; the summary is the Document
        assert c.rel(RelType.HAS_CHILD) == 4  # summary -> 3 sections, s0 -> p0
        assert c.rel(RelType.NEXT) == 2
        rows = graph_store.read(
            "MATCH (d:Document {key: $k}) "
            "RETURN d.chunk_id AS cid, d.text AS text, d.title AS title",
            {"k": graph_store.key("a")},
        )
        assert rows == [{"cid": "a-sum", "text": "a summary", "title": "a"}]
        rows = graph_store.read(
            "MATCH (s:Section {key: $k})-[:NEXT]->(n:Section) "
            "RETURN n.id AS id, s.section_path AS path",
            {"k": graph_store.key("a-s0")},
        )
        assert rows == [{"id": "a-s1", "path": ["Intro", "Part 0"]}]

    def test_writes_are_idempotent(self, graph_store: GraphStore) -> None:
        write_two_docs(graph_store)
        first = graph_store.counts()
        write_two_docs(graph_store)
        assert graph_store.counts() == first
        assert first.node(E) == 2
        assert first.node(NodeLabel.ALIAS) == 3  # ray serve, serve, lonely thing
        assert first.rel(RelType.MENTIONS) == 3

    def test_chunk_order_does_not_matter(self, graph_store: GraphStore) -> None:
        chunks = doc_chunks("a", n_sections=3)
        for c in reversed(chunks):  # children and successors arrive before their parents
            graph_store.write_chunks([c])
        c = graph_store.counts()
        assert (c.rel(RelType.HAS_CHILD), c.rel(RelType.NEXT), c.rel(RelType.CHUNK_OF)) == (4, 2, 4)

    def test_edges_to_missing_nodes_are_skipped_and_reported(self, graph_store: GraphStore) -> None:
        graph_store.write_chunks(doc_chunks("a"))
        report = graph_store.write_batch(
            GraphBatch(
                entities=(entity("e1", "Thing"),),
                edges=(
                    edge(RelType.MENTIONS, NodeRef(S, "a-s0"), NodeRef(E, "e1")),
                    edge(RelType.MENTIONS, NodeRef(S, "no-such-chunk"), NodeRef(E, "e1")),
                ),
            )
        )
        assert (report.edges, report.skipped_edges) == (1, 1)

    def test_max_merge_keeps_the_stronger_edge_and_replace_overwrites(
        self, graph_store: GraphStore
    ) -> None:
        ref = write_mention_ends(graph_store)
        graph_store.write_edges(
            [edge(RelType.MENTIONS, *ref, weight=0.9, confidence=0.6, source=EdgeSource.GAZETTEER)]
        )
        graph_store.write_edges(
            [
                edge(
                    RelType.MENTIONS,
                    *ref,
                    weight=0.2,
                    confidence=0.8,
                    source=EdgeSource.EXTRACTOR,
                    count=3,
                )
            ]
        )
        query = (
            "MATCH (:Section {key: $k})-[m:MENTIONS]->() "
            "RETURN m.weight AS w, m.confidence AS c, m.source AS s, m.count AS n"
        )
        assert graph_store.read(query, {"k": graph_store.key("a-s0")}) == [
            {"w": 0.9, "c": 0.8, "s": "extractor", "n": 3}
        ]
        graph_store.write_edges(
            [edge(RelType.MENTIONS, *ref, weight=0.1, confidence=0.1, source=EdgeSource.GAZETTEER)],
            mode="replace",
        )
        assert graph_store.read(query, {"k": graph_store.key("a-s0")}) == [
            {"w": 0.1, "c": 0.1, "s": "gazetteer", "n": 1}
        ]
        unknown_mode: Any = "sum"
        with pytest.raises(ValueError, match="mode"):
            graph_store.write_edges([], mode=unknown_mode)

    def test_a_gazetteer_match_never_relabels_an_introducing_edge(
        self, graph_store: GraphStore
    ) -> None:
        ref = write_mention_ends(graph_store)
        graph_store.write_edges(
            [edge(RelType.MENTIONS, *ref, confidence=0.6, source=EdgeSource.EXTRACTOR)]
        )
        graph_store.write_edges(
            [edge(RelType.MENTIONS, *ref, confidence=0.9, source=EdgeSource.GAZETTEER)]
        )
        query = (
            "MATCH (:Section {key: $k})-[m:MENTIONS]->() RETURN m.confidence AS c, m.source AS s"
        )
        assert graph_store.read(query, {"k": graph_store.key("a-s0")}) == [
            {"c": 0.9, "s": "extractor"}
        ]

    def test_entity_df_counts_mentions(self, graph_store: GraphStore) -> None:
        write_two_docs(graph_store)
        got = {m.id: m.df for m in graph_store.lookup_entities(["Ray Serve", "lonely thing"])}
        assert got == {"shared": 2, "lonely": 1}

    def test_namespaces_are_isolated(self, graph_store: GraphStore) -> None:
        other = graph_store.for_namespace(graph_store.ns + "-other")
        try:
            write_two_docs(graph_store)
            write_two_docs(other)
            other.delete_document("a")
            assert graph_store.counts().node(D) == 2
            assert other.counts().node(D) == 1
            assert {m.id for m in graph_store.lookup_entities(["lonely thing"])} == {"lonely"}
            assert other.lookup_entities(["lonely thing"]) == []
            other.drop_namespace()
            assert sum(other.counts().nodes.values()) == 0
            assert graph_store.counts().node(S) == 4
        finally:
            other.drop_namespace()
            other.close()


class TestDelete:
    def test_delete_document_removes_orphans_keeps_shared(self, graph_store: GraphStore) -> None:
        write_two_docs(graph_store)
        report = graph_store.delete_document("a")
        assert report.chunks == 3
        assert (report.entities, report.aliases, report.topics) == (1, 1, 1)
        c = graph_store.counts()
        assert (c.node(D), c.node(S), c.node(P), c.node(E), c.node(T)) == (1, 2, 1, 1, 0)
        assert c.rel(RelType.RELATED_TO) == 0
        assert c.rel(RelType.MENTIONS) == 1
        (shared,) = graph_store.lookup_entities(["serve"])
        assert (shared.id, shared.df) == ("shared", 1)
        assert graph_store.lookup_entities(["Lonely Thing"]) == []

    def test_gazetteer_mentions_do_not_keep_an_entity_alive(self, graph_store: GraphStore) -> None:
        """b only links `lonely` through the gazetteer: a clean ingest of b alone would not hold
        it, so deleting a, which introduced it, removes it."""
        write_two_docs(graph_store)
        graph_store.write_edges(
            [
                edge(
                    RelType.MENTIONS,
                    NodeRef(S, "b-s0"),
                    NodeRef(E, "lonely"),
                    confidence=0.9,
                    source=EdgeSource.GAZETTEER,
                )
            ]
        )
        assert graph_store.delete_document("a").entities == 1
        assert graph_store.lookup_entities(["Lonely Thing"]) == []
        assert graph_store.counts().rel(RelType.MENTIONS) == 1

    def test_entity_a_conversation_mentions_survives(self, graph_store: GraphStore) -> None:
        write_two_docs(graph_store)
        graph_store.add_message(
            conversation_id="c", message_id="m", text="what is the lonely thing?"
        )
        report = graph_store.delete_document("a")
        assert report.entities == 0
        assert [m.id for m in graph_store.lookup_entities(["lonely thing"])] == ["lonely"]

    def test_unknown_document_is_not_found(self, graph_store: GraphStore) -> None:
        with pytest.raises(NotFoundError, match="nope"):
            graph_store.delete_document("nope")


class TestPrune:
    def test_prune_drops_weak_inferred_edges_and_orphans(self, graph_store: GraphStore) -> None:
        write_two_docs(graph_store)
        with pytest.raises(InputError):
            graph_store.prune(2.0)
        report = graph_store.prune(0.85)
        # Weak inferred: two extractor MENTIONS (0.8), BELONGS_TO (0.5), RELATED_TO (0.4).
        assert report.edges == 4
        # "shared" lost every anchor; "lonely" keeps its gazetteer mention (0.9) and title EXPLAINS.
        assert (report.entities, report.aliases, report.topics) == (1, 2, 1)
        c = graph_store.counts()
        assert c.rel(RelType.MENTIONS) == 1
        assert c.rel(RelType.EXPLAINS) == 1
        assert c.rel(RelType.CHUNK_OF) == 6  # structure is never pruned

    def test_structural_and_title_edges_survive_any_threshold(
        self, graph_store: GraphStore
    ) -> None:
        write_two_docs(graph_store)
        graph_store.prune(1.0)
        c = graph_store.counts()
        assert c.rel(RelType.EXPLAINS) == 1
        assert c.rel(RelType.HAS_CHILD) == 6
        assert c.rel(RelType.NEXT) == 2


class TestConversations:
    def test_message_links_conversation_user_documents_and_entities(
        self, graph_store: GraphStore
    ) -> None:
        write_two_docs(graph_store)
        record = graph_store.add_message(
            conversation_id="conv1",
            message_id="m1",
            text="How do I scale Ray Serve deployments?",
            user_id="u1",
            referenced_doc_ids=["b", "missing-doc"],
            entity_names=["Lonely Thing"],
            timestamp=100.0,
        )
        assert record.mentioned_entity_ids == ("lonely", "shared")
        assert record.referenced_doc_ids == ("b",)
        again = graph_store.add_message(
            conversation_id="conv1", message_id="m1", text="How do I scale Ray Serve?", user_id="u1"
        )
        assert again.mentioned_entity_ids == ("shared",)  # an edit replaces the mentions
        c = graph_store.counts()
        assert (
            c.node(NodeLabel.CONVERSATION),
            c.node(NodeLabel.MESSAGE),
            c.node(NodeLabel.USER),
        ) == (1, 1, 1)
        assert (c.rel(RelType.PART_OF), c.rel(RelType.CREATED), c.rel(RelType.REFERENCES)) == (
            1,
            1,
            0,
        )
        assert c.rel(RelType.MENTIONS) == 3 + 1

    def test_views_count_and_keep_first_and_last(self, graph_store: GraphStore) -> None:
        write_two_docs(graph_store)
        v1 = graph_store.record_view(user_id="u1", doc_id="a", timestamp=200.0, duration_s=5)
        assert (v1.view_count, v1.first_viewed_at, v1.last_viewed_at) == (1, 200.0, 200.0)
        graph_store.record_view(user_id="u1", doc_id="a", timestamp=300.0)
        v3 = graph_store.record_view(
            user_id="u1", doc_id="a", timestamp=150.0
        )  # late, out-of-order event
        assert (v3.view_count, v3.first_viewed_at, v3.last_viewed_at) == (3, 150.0, 300.0)
        assert graph_store.counts().rel(RelType.VIEWED) == 1
        with pytest.raises(NotFoundError, match="zzz"):
            graph_store.record_view(user_id="u1", doc_id="zzz")

    def test_empty_ids_are_refused(self, graph_store: GraphStore) -> None:
        with pytest.raises(InputError):
            graph_store.add_message(conversation_id="", message_id="m", text="hi")


INJECTIONS = [
    "x'}) DETACH DELETE n //",
    'x"}) MATCH (n) DETACH DELETE n RETURN 1 //',
    "$ns` :Entity {key: 'k'}) //",
    "名前 with ünïcödé and \\backslash\\ and {braces}",
]


class TestInjection:
    @pytest.mark.parametrize("text", INJECTIONS)
    def test_hostile_strings_are_stored_as_data(self, graph_store: GraphStore, text: str) -> None:
        write_two_docs(graph_store)
        before = graph_store.counts()
        graph_store.write_documents(
            [Document(id=text, source=text, title=text, content_type="text", text=text)]
        )
        graph_store.write_chunks(
            [Chunk(id=text + "#s", doc_id=text, level=Level.SECTION, text=text, title=text)]
        )
        graph_store.write_batch(
            GraphBatch(
                entities=(entity(text, text, kind=text),),
                edges=(
                    edge(
                        RelType.MENTIONS,
                        NodeRef(S, text + "#s"),
                        NodeRef(E, text),
                        props={"note": text},
                    ),
                ),
            )
        )
        graph_store.add_message(
            conversation_id=text, message_id=text, text=text, user_id=text, entity_names=[text]
        )
        after = graph_store.counts()
        assert after.node(D) == before.node(D) + 1
        assert after.node(E) == before.node(E) + 1
        assert after.node(S) == before.node(S) + 1
        rows = graph_store.read(
            "MATCH (s:Section {key: $k})-[m:MENTIONS]->(e:Entity) "
            "RETURN e.name AS name, e.kind AS kind, m.note AS note",
            {"k": graph_store.key(text + "#s")},
        )
        assert rows == [{"name": text, "kind": text, "note": text}]
        assert [m.id for m in graph_store.lookup_entities([text])] == [text]
        graph_store.delete_document(text)
        assert graph_store.counts().node(D) == before.node(D)


class TestNeighbourhood:
    def test_one_hop_around_a_document_and_an_entity(self, graph_store: GraphStore) -> None:
        write_two_docs(graph_store)
        view = graph_store.neighbourhood(["a"])
        by_id = {n["id"]: n for n in view["nodes"]}
        assert by_id["a"]["start"]
        assert by_id["a"]["label"] == "Document"
        assert by_id["a"]["name"] == "Alpha Doc"
        assert {"a-s0", "a-s1", "lonely", "t1"} <= set(by_id)
        assert "b" not in by_id  # two hops away, through `shared`
        edges = {(e["source"], e["type"], e["target"]) for e in view["edges"]}
        assert ("a-s0", "CHUNK_OF", "a") in edges
        assert ("a", "EXPLAINS", "lonely") in edges

        two = graph_store.neighbourhood(["shared"], depth=2)
        assert {"a", "b"} <= {n["id"] for n in two["nodes"]}
        assert not any(n["label"] == "Alias" for n in two["nodes"])

    def test_summary_chunk_ids_resolve_cap_and_depth_limits(self, graph_store: GraphStore) -> None:
        write_two_docs(graph_store)
        view = graph_store.neighbourhood(["a-sum", "missing"], limit=3)
        assert len(view["nodes"]) == 3
        assert view["nodes"][0]["id"] == "a"
        ids = {n["id"] for n in view["nodes"]}
        assert all(e["source"] in ids and e["target"] in ids for e in view["edges"])
        assert graph_store.neighbourhood(["missing"]) == {"nodes": [], "edges": []}
        with pytest.raises(InputError, match="depth"):
            graph_store.neighbourhood(["a"], depth=4)
