"""Messages and document views against a real Bolt server."""

from __future__ import annotations

import pytest

from rayweave.cluster.errors import InputError, NotFoundError
from rayweave.graph.schema import NodeLabel, RelType
from rayweave.graph.store import GraphStore

from .store_samples import write_two_docs

pytestmark = pytest.mark.integration


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
