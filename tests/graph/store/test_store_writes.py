"""Entities, topics and edges written against a real Bolt server: idempotence and merges."""

from __future__ import annotations

from typing import Any

import pytest

from rayweave.graph.schema import EdgeSource, GraphBatch, NodeLabel, NodeRef, RelType
from rayweave.graph.store import GraphStore

from .store_samples import E, S, doc_chunks, edge, entity, write_mention_ends, write_two_docs

pytestmark = pytest.mark.integration


class TestWrites:
    def test_writes_are_idempotent(self, graph_store: GraphStore) -> None:
        write_two_docs(graph_store)
        first = graph_store.counts()
        write_two_docs(graph_store)
        assert graph_store.counts() == first
        assert first.node(E) == 2
        assert first.node(NodeLabel.ALIAS) == 3  # ray serve, serve, lonely thing
        assert first.rel(RelType.MENTIONS) == 3

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
