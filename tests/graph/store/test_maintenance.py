"""`prune_graph` (`rayweave graph prune`) against the session's real ArcadeDB Bolt server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rayweave.cluster.errors import InputError
from rayweave.cluster.settings import Settings
from rayweave.cluster.types import Chunk, ContentType, Document, Level
from rayweave.graph.schema import (
    EdgeRow,
    EdgeSource,
    EntityRow,
    GraphBatch,
    NodeLabel,
    NodeRef,
    RelType,
)
from rayweave.graph.store import GraphStore
from rayweave.graph.store.maintenance import prune_graph, retention_cutoff

pytestmark = pytest.mark.integration

DAY = 86_400.0
NOW = 1_800_000_000.0
S, E = NodeLabel.SECTION, NodeLabel.ENTITY


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path, graph={"prune_min_confidence": 0.5})


def _doc(doc_id: str) -> Document:
    return Document(
        id=doc_id, source=f"{doc_id}.md", title=doc_id, content_type=ContentType.MARKDOWN, text="."
    )


def _section(doc_id: str, i: int) -> Chunk:
    return Chunk(id=f"{doc_id}-s{i}", doc_id=doc_id, level=Level.SECTION, text=f"{doc_id} {i}")


def _mention(section: str, entity: str, confidence: float, source: EdgeSource) -> EdgeRow:
    return EdgeRow(
        rel=RelType.MENTIONS,
        src=NodeRef(S, section),
        dst=NodeRef(E, entity),
        confidence=confidence,
        source=source,
    )


def _populate(store: GraphStore) -> None:
    """Doc `a` (2 sections) mentions `kept` strongly and `weak` weakly; `talk` is named only by
    messages; the `ghost` section's Document node is gone (as after an interrupted delete)."""
    store.write_documents([_doc("a")])
    store.write_chunks([_section("a", 0), _section("a", 1), _section("ghost", 0)])
    store.write_batch(
        GraphBatch(
            entities=(
                EntityRow(id="kept", name="Lease Renewal"),
                EntityRow(id="weak", name="Weak Thing"),
                EntityRow(id="talk", name="Dead Letter Queue"),
            ),
            edges=(
                _mention("a-s0", "kept", 0.9, EdgeSource.EXTRACTOR),
                _mention("a-s1", "weak", 0.3, EdgeSource.COOCCURRENCE),
            ),
        )
    )
    store.write("MATCH (d:Document {key: $k}) DETACH DELETE d", {"k": store.key("ghost")})
    store.add_message(
        conversation_id="old",
        message_id="old-1",
        text="the dead letter queue keeps filling",
        user_id="u-old",
        entity_names=["Dead Letter Queue"],
        timestamp=NOW - 200 * DAY,
    )
    store.add_message(
        conversation_id="new",
        message_id="new-1",
        text="how does lease renewal work?",
        user_id="u-new",
        timestamp=NOW - 1 * DAY,
    )


class TestPruneGraph:
    def test_dry_run_reports_exact_counts_and_changes_nothing(
        self, graph_store: GraphStore, settings: Settings
    ) -> None:
        _populate(graph_store)
        before = graph_store.counts()
        dry = prune_graph(settings, store=graph_store, dry_run=True, now=NOW)
        assert graph_store.counts() == before
        assert dry.dry_run
        assert "would remove" in dry.render()
        real = prune_graph(settings, store=graph_store, now=NOW)
        assert real.removed == dry.removed
        assert "removed" in str(real)
        assert "would" not in str(real)

    def test_removes_weak_edges_orphans_detached_chunks_and_stale_conversations(
        self, graph_store: GraphStore, settings: Settings
    ) -> None:
        _populate(graph_store)
        summary = prune_graph(settings, store=graph_store, retention_days=90, now=NOW)
        r = summary.removed
        assert r.edges == 1  # the 0.3 co-occurrence MENTIONS, below the 0.5 setting
        assert r.chunks == 1  # ghost-s0
        assert (r.conversations, r.messages, r.users) == (1, 1, 1)
        # `weak` lost its only anchor; `talk` was named only by the expired message.
        assert r.entities == 2
        c = graph_store.counts()
        assert c.node(NodeLabel.ENTITY) == 1
        assert c.node(NodeLabel.SECTION) == 2
        assert c.node(NodeLabel.CONVERSATION) == 1
        assert c.node(NodeLabel.MESSAGE) == 1
        assert c.node(NodeLabel.USER) == 1
        assert c.rel(RelType.CHUNK_OF) == 2  # structure is never pruned
        # Survivor stats are refreshed: one section and the recent message mention it.
        assert graph_store.lookup_entities(["lease renewal"])[0].df == 2
        assert summary.after.node(NodeLabel.ENTITY) == 1
        assert summary.before.node(NodeLabel.ENTITY) == 3
        # A second pass finds nothing left to do.
        again = prune_graph(settings, store=graph_store, retention_days=90, now=NOW).removed
        assert (again.edges, again.entities, again.chunks, again.conversations) == (0, 0, 0, 0)

    def test_zero_retention_keeps_conversations_and_what_they_mention(
        self, graph_store: GraphStore, settings: Settings
    ) -> None:
        _populate(graph_store)
        summary = prune_graph(settings, store=graph_store, retention_days=0, now=NOW)
        assert summary.conversations_before is None
        assert (summary.removed.conversations, summary.removed.messages) == (0, 0)
        assert graph_store.lookup_entities(["dead letter queue"])
        assert "retention off" in summary.render()

    def test_explicit_threshold_overrides_the_setting(
        self, graph_store: GraphStore, settings: Settings
    ) -> None:
        _populate(graph_store)
        summary = prune_graph(settings, store=graph_store, min_confidence=0.95, now=NOW)
        assert summary.removed.edges == 2  # 0.9 extractor too
        # `kept` lost its section mention but the recent message's (never pruned) still anchors it.
        assert [m.id for m in graph_store.lookup_entities(["lease renewal"])] == ["kept"]
        assert graph_store.counts().node(NodeLabel.ENTITY) == 1

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [({"min_confidence": 1.5}, "min_confidence"), ({"retention_days": -1}, "retention_days")],
    )
    def test_bad_arguments_name_the_problem(
        self,
        graph_store: GraphStore,
        settings: Settings,
        kwargs: dict[str, Any],
        message: str,
    ) -> None:
        with pytest.raises(InputError, match=message):
            prune_graph(settings, store=graph_store, **kwargs)


def test_retention_cutoff() -> None:
    assert retention_cutoff(0, now=NOW) is None
    assert retention_cutoff(2, now=NOW) == NOW - 2 * DAY
