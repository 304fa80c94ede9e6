"""Document deletes and the prune against a real Bolt server."""

from __future__ import annotations

import pytest

from rayweave.cluster.errors import InputError, NotFoundError
from rayweave.graph.schema import EdgeSource, NodeRef, RelType
from rayweave.graph.store import GraphStore

from .store_samples import D, E, P, S, T, edge, write_two_docs

pytestmark = pytest.mark.integration


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


def test_prune_among_some_entities_refuses_expiring_conversations(graph_store: GraphStore) -> None:
    with pytest.raises(InputError, match="conversations_before"):
        graph_store.prune(0.0, among=["k"], conversations_before=0.0)
