"""Traversals on a small hand-built graph in the real embedded server: expected chunks and paths."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator

import pytest
from tests_support import edge_row, entity_row, linked_chunks, summary_chunk

from rayweave.cluster.settings import GraphSettings
from rayweave.cluster.types import Chunk, ContentType, Hit, Level, QueryType
from rayweave.graph.builders import build_graph
from rayweave.graph.profiles import TraversalProfile
from rayweave.graph.queries import Seed
from rayweave.graph.schema import EdgeRow, EdgeSource, GraphBatch, NodeLabel, NodeRef, RelType
from rayweave.graph.store import GraphStore
from rayweave.graph.traversal import GraphTraversal

D, S, P, E = NodeLabel.DOCUMENT, NodeLabel.SECTION, NodeLabel.PROPOSITION, NodeLabel.ENTITY


def section(cid: str, doc: str, text: str, pos: int, **kw: object) -> Chunk:
    return Chunk(id=cid, doc_id=doc, level=Level.SECTION, text=text, position=pos, **kw)  # type: ignore[arg-type]


def serve_doc() -> list[Chunk]:
    """Doc `serve`: summary, three sections in sequence, two propositions under s1."""
    propositions = linked_chunks(
        "serve",
        Level.PROPOSITION,
        {"serve-p0": "A replica is a worker.", "serve-p1": "Replicas serve requests."},
        parent_id="serve-s1",
    )
    sections = linked_chunks(
        "serve",
        Level.SECTION,
        {
            "serve-s0": "Install with pip.",
            "serve-s1": "Deployments hold replicas.",
            "serve-s2": "The autoscaler adds replicas.",
        },
        parent_id="serve-sum",
        title="Ray Serve",
    )
    sections[1] = dataclasses.replace(sections[1], children_ids=tuple(p.id for p in propositions))
    summary = summary_chunk("serve-sum", "Ray Serve guide", sections, title="Ray Serve")
    return [summary, *sections, *propositions]


def other_docs() -> list[Chunk]:
    return [
        section("code-def", "code", "def run(app): ...", 0, content_type=ContentType.CODE),
        section("ex-use", "example", "serve.run(app)", 0, content_type=ContentType.CODE),
        section("err-fix", "errors", "Reinstall ray to fix ModuleNotFoundError.", 0),
        section("err-log", "errors", "Traceback: ModuleNotFoundError", 1),
        section("far", "far", "Unrelated words.", 0),
    ]


@pytest.fixture(scope="module")
def store(graph_target: GraphStore) -> Iterator[GraphStore]:
    st = graph_target.for_namespace(f"trav{uuid.uuid4().hex[:10]}")
    st.write_chunks(serve_doc() + other_docs())
    st.write_batch(
        GraphBatch(
            entities=(
                entity_row("replica", "replica"),
                entity_row("autoscaler", "autoscaler"),
                entity_row("run", "ray.serve.run", "symbol"),
                entity_row("mnfe", "ModuleNotFoundError", "error"),
                entity_row("rayserve", "Ray Serve", "title"),
            ),
            edges=(
                edge_row(
                    RelType.EXPLAINS, NodeRef(P, "serve-p0"), NodeRef(E, "replica"), conf=0.75
                ),
                edge_row(RelType.MENTIONS, NodeRef(P, "serve-p1"), NodeRef(E, "replica")),
                edge_row(RelType.MENTIONS, NodeRef(S, "serve-s2"), NodeRef(E, "replica")),
                edge_row(
                    RelType.EXPLAINS, NodeRef(S, "serve-s2"), NodeRef(E, "autoscaler"), conf=0.8
                ),
                edge_row(
                    RelType.RELATED_TO,
                    NodeRef(E, "replica"),
                    NodeRef(E, "autoscaler"),
                    conf=0.6,
                    weight=0.6,
                ),
                edge_row(RelType.EXPLAINS, NodeRef(D, "serve"), NodeRef(E, "rayserve"), conf=0.95),
                edge_row(RelType.DEFINES, NodeRef(S, "code-def"), NodeRef(E, "run"), conf=0.95),
                edge_row(RelType.USES, NodeRef(S, "ex-use"), NodeRef(E, "run"), conf=0.7),
                EdgeRow(
                    rel=RelType.REFERENCES,
                    src=NodeRef(S, "ex-use"),
                    dst=NodeRef(S, "serve-s1"),
                    confidence=0.9,
                    source=EdgeSource.LINK,
                ),
                edge_row(RelType.SOLVES, NodeRef(S, "err-fix"), NodeRef(E, "mnfe"), conf=0.8),
                edge_row(RelType.MENTIONS, NodeRef(S, "err-log"), NodeRef(E, "mnfe"), conf=0.7),
            ),
        )
    )
    yield st
    st.drop_namespace()
    st.close()


@pytest.fixture(scope="module")
def trav(store: GraphStore) -> Iterator[GraphTraversal]:
    t = GraphTraversal(store, GraphSettings())
    yield t
    t.close()


def ids(hits: list[Hit]) -> list[str]:
    return [h.id for h in hits]


def by_id(hits: list[Hit]) -> dict[str, Hit]:
    return {h.id: h for h in hits}


pytestmark = pytest.mark.integration


class TestExpand:
    def test_parent_siblings_children_with_paths(self, trav: GraphTraversal) -> None:
        hits = by_id(trav.expand([Seed(chunk_id="serve-s1", score=0.9)]))
        assert set(hits) == {"serve-sum", "serve-s0", "serve-s2", "serve-p0", "serve-p1"}
        parent = hits["serve-sum"]
        assert parent.level is Level.DOCUMENT
        assert parent.doc_id == "serve"
        assert parent.paths[0].nodes == ("serve-s1", "serve")
        assert parent.paths[0].relationships == ("HAS_CHILD",)
        assert hits["serve-s2"].paths[0].relationships == ("NEXT",)
        assert hits["serve-p0"].score > hits["serve-p1"].score  # earlier child first

    def test_depth_limits_the_sequence(self, trav: GraphTraversal) -> None:
        one = ids(
            trav.expand(
                [Seed(chunk_id="serve-s0")], TraversalProfile(sequence=1.0, sequence_depth=1)
            )
        )
        two = by_id(
            trav.expand(
                [Seed(chunk_id="serve-s0")], TraversalProfile(sequence=1.0, sequence_depth=2)
            )
        )
        assert one == ["serve-s1"]
        assert set(two) == {"serve-s1", "serve-s2"}
        assert two["serve-s2"].paths[0].relationships == ("NEXT", "NEXT")
        assert two["serve-s1"].score > two["serve-s2"].score

    def test_sequence_stays_within_the_parent(self, trav: GraphTraversal) -> None:
        hits = ids(
            trav.expand(
                [Seed(chunk_id="serve-p0")], TraversalProfile(sequence=1.0, sequence_depth=3)
            )
        )
        assert hits == ["serve-p1"]

    def test_unknown_seed_gives_nothing(self, trav: GraphTraversal) -> None:
        assert trav.expand([Seed(chunk_id="no-such-chunk")]) == []


class TestEntitySearch:
    def test_explains_first_then_mentions(self, trav: GraphTraversal) -> None:
        hits = trav.entity_search("what is a replica?")
        assert hits[0].id == "serve-p0"
        assert hits[0].paths[0].nodes == ("replica", "serve-p0")
        assert hits[0].paths[0].relationships == ("EXPLAINS",)
        assert {"serve-p1", "serve-s2"} <= set(ids(hits))

    def test_plural_and_alias_match(self, trav: GraphTraversal) -> None:
        assert trav.entity_search("tell me about replicas")[0].id == "serve-p0"

    def test_title_entity_finds_the_document(self, trav: GraphTraversal) -> None:
        (hit,) = trav.entity_search(
            "Ray Serve", profile=TraversalProfile(entity=1.0, entity_rels={RelType.EXPLAINS: 1.0})
        )
        assert (hit.id, hit.doc_id, hit.level) == ("serve-sum", "serve", Level.DOCUMENT)

    def test_expand_entities_over_related_to(self, trav: GraphTraversal) -> None:
        prof = TraversalProfile(entity=1.0, entity_rels={RelType.EXPLAINS: 1.0}, entity_expand=True)
        hits = by_id(trav.entity_search("replica", profile=prof))
        path = hits["serve-s2"].paths[0]
        assert path.nodes == ("replica", "autoscaler", "serve-s2")
        assert path.relationships == ("RELATED_TO", "EXPLAINS")
        flat = by_id(
            trav.entity_search(
                "replica",
                profile=TraversalProfile(
                    entity=1.0, entity_rels={RelType.EXPLAINS: 1.0}, entity_expand=False
                ),
            )
        )
        assert "serve-s2" not in flat

    def test_error_query_finds_the_solution(self, trav: GraphTraversal) -> None:
        hits = trav.search(query_text="ModuleNotFoundError when importing ray", query_type="error")
        assert hits[0].id == "err-fix"
        assert hits[0].paths[0].relationships == ("SOLVES",)


class TestProfiles:
    def test_code_profile_follows_symbols(self, trav: GraphTraversal) -> None:
        hits = by_id(trav.search(query_text="", seeds=[Seed(chunk_id="ex-use")], query_type="code"))
        assert hits["code-def"].paths[0].nodes == ("ex-use", "run", "code-def")
        assert hits["code-def"].paths[0].relationships == ("USES", "DEFINES")
        assert "serve-s1" in hits  # REFERENCES

    def test_how_to_profile_returns_usage_examples_and_steps(self, trav: GraphTraversal) -> None:
        hits = by_id(
            trav.search(
                query_text="", seeds=[Seed(chunk_id="code-def")], query_type=QueryType.HOW_TO
            )
        )
        assert hits["ex-use"].paths[0].relationships == ("DEFINES", "USES")
        steps = by_id(
            trav.search(
                query_text="", seeds=[Seed(chunk_id="serve-s0")], query_type=QueryType.HOW_TO
            )
        )
        assert {"serve-s1", "serve-s2"} <= set(steps)

    def test_why_profile_walks_related_concepts(self, trav: GraphTraversal) -> None:
        hits = by_id(
            trav.search(query_text="", seeds=[Seed(chunk_id="serve-p1")], query_type="why")
        )
        assert hits["serve-s2"].paths[0].relationships in {
            ("MENTIONS", "RELATED_TO", "EXPLAINS"),
            ("NEXT",),
        }
        assert any(
            p.relationships == ("MENTIONS", "RELATED_TO", "EXPLAINS")
            for p in hits["serve-s2"].paths
        )

    def test_error_profile_from_a_seed(self, trav: GraphTraversal) -> None:
        hits = by_id(
            trav.search(query_text="", seeds=[Seed(chunk_id="err-log")], query_type="error")
        )
        assert hits["err-fix"].paths[0].relationships in {("MENTIONS", "SOLVES"), ("NEXT",)}
        assert any(p.relationships == ("MENTIONS", "SOLVES") for p in hits["err-fix"].paths)

    def test_seeds_are_not_returned(self, trav: GraphTraversal) -> None:
        hits = trav.search(
            query_text="replica", seeds=[Seed(chunk_id="serve-p0")], query_type="what_is"
        )
        assert "serve-p0" not in ids(hits)


# question: "Which magazine did Arthur's Magazine merge into, and where was it published?"
HOTPOT_DOCS = {  # document id: (title, its one section's text)
    "A": (
        "Arthur's Magazine",
        "Arthur's Magazine was an American literary periodical. "
        "In 1846 it was merged into Godey's Lady's Book.",
    ),
    "B": (
        "Godey's Lady's Book",
        "Godey's Lady's Book was a women's magazine published in Philadelphia.",
    ),
    "C": ("Philadelphia", "Philadelphia is a city in Pennsylvania."),
    "X": ("First for Women", "First for Women is a magazine published by Bauer Media."),
    "Y": ("Bauer Media Group", "Bauer Media Group is a German publisher."),
}
HOTPOT = [
    section(f"{doc.lower()}0", doc, text, 0, title=title)
    for doc, (title, text) in HOTPOT_DOCS.items()
]


@pytest.fixture(scope="module")
def hotpot(graph_target: GraphStore) -> Iterator[GraphTraversal]:
    st = graph_target.for_namespace(f"hp{uuid.uuid4().hex[:10]}")
    st.write_chunks(HOTPOT)
    st.write_batch(build_graph(HOTPOT))
    t = GraphTraversal(st, GraphSettings(max_hops=2, beam_width=4))
    yield t
    t.close()
    st.drop_namespace()
    st.close()


class TestBridge:
    def test_bridge_finds_the_second_document(self, hotpot: GraphTraversal) -> None:
        hits = hotpot.bridge([Seed(chunk_id="a0", score=0.8)])
        assert hits[0].doc_id == "B"
        path = hits[0].paths[0]
        assert path.relationships == ("MENTIONS", "EXPLAINS")
        assert path.nodes[0] == "a0"
        assert path.nodes[-1] in {"b0", "B"}
        assert "A" not in {h.doc_id for h in hits}
        assert "X" not in {h.doc_id for h in hits}

    def test_second_hop_reaches_further_with_decay(self, hotpot: GraphTraversal) -> None:
        hits = {h.doc_id: h for h in hotpot.bridge([Seed(chunk_id="a0")])}
        assert hits["C"].score < hits["B"].score
        assert hits["C"].paths[0].relationships == ("MENTIONS", "EXPLAINS", "MENTIONS", "EXPLAINS")
        one_hop = GraphTraversal(hotpot.store, GraphSettings(max_hops=1))
        try:
            assert "C" not in {h.doc_id for h in one_hop.bridge([Seed(chunk_id="a0")])}
        finally:
            one_hop.close()

    def test_multi_hop_search_combines_entity_search_and_bridge(
        self, hotpot: GraphTraversal
    ) -> None:
        question = "Which magazine did Arthur's Magazine merge into?"
        hits = hotpot.search(
            query_text=question, seeds=[Seed(chunk_id="a0", score=0.7)], query_type="multi_hop"
        )
        docs = [h.doc_id for h in hits]
        assert docs[0] == "B"
        # Entity search alone finds A (named in the question); the bridge is needed for B.
        alone = hotpot.entity_search(question)
        assert [h.doc_id for h in alone][:1] == ["A"]
        assert "B" not in {h.doc_id for h in alone}

    def test_links_are_the_first_hop_of_each_seed(self, hotpot: GraphTraversal) -> None:
        hits, links = hotpot.search_with_links(
            query_text="",
            seeds=[Seed(chunk_id="a0", score=0.9), Seed(chunk_id="x0", score=0.5)],
            query_type="multi_hop",
        )
        pairs = {(lk.paths[0].nodes[0], lk.doc_id) for lk in links}
        # A links to B (Godey's); B's own link to C is a second hop, not a link of A; X names
        # "Bauer Media", which no document explains ("Bauer Media Group" does).
        assert pairs == {("a0", "B")}
        assert all(lk.paths[0].relationships == ("MENTIONS", "EXPLAINS") for lk in links)
        assert "C" in {h.doc_id for h in hits}  # the board still goes two hops
        # A profile without a bridge asks for no links.
        _, none = hotpot.search_with_links(
            query_text="", seeds=[Seed(chunk_id="a0")], query_type="what_is"
        )
        assert none == []


class TestConversation:
    def test_conversation_concepts_boost_documents_that_explain_them(
        self, store: GraphStore, trav: GraphTraversal
    ) -> None:
        store.add_message(
            conversation_id="conv-a",
            message_id="m1",
            text="how does the autoscaler decide?",
            user_id="u-conv",
        )
        hits = [
            Hit(id="far", doc_id="far", text="", score=0.9),
            Hit(id="serve-s2", doc_id="serve", text="", score=0.7),
        ]
        plain = trav.conversation_rerank(hits, "conv-none")
        assert ids(plain) == ["far", "serve-s2"]
        boosted = trav.conversation_rerank(hits, "conv-a")
        assert ids(boosted) == ["serve-s2", "far"]
        assert boosted[0].score == pytest.approx(0.7 * 0.7 / 0.9 + 0.3)
        assert boosted[0].paths[-1].relationships == ("PART_OF", "MENTIONS", "EXPLAINS")
        vector_only = trav.conversation_rerank(
            hits, "conv-a", vector_weight=1.0, concept_weight=0.0
        )
        assert ids(vector_only) == ["far", "serve-s2"]

    def test_discovery_of_unseen_related_documents(
        self, store: GraphStore, trav: GraphTraversal
    ) -> None:
        store.add_message(
            conversation_id="conv-b", message_id="m2", text="what is a replica", user_id="u-disc"
        )
        found = trav.discover("u-disc")
        assert [h.doc_id for h in found] == ["serve"]
        assert found[0].paths[0].nodes == ("u-disc", "replica", "autoscaler", "serve")
        store.record_view(user_id="u-disc", doc_id="serve")
        assert trav.discover("u-disc") == []
