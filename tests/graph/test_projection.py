"""The in-memory projection: built by hand (pure) and loaded from the real graph store."""

from __future__ import annotations

import numpy as np
import pytest
from tests_support import edge_row, entity_row, linked_chunks, summary_chunk

from rayweave.cluster.types import Chunk, Level
from rayweave.graph import projection
from rayweave.graph.projection import (
    NodeKind,
    ProjectionBuilder,
    ProjectionHolder,
    describe,
    entity_rows_for,
    load_projection,
)
from rayweave.graph.projection_delta import projection_updates
from rayweave.graph.schema import EdgeSource, GraphBatch, NodeLabel, NodeRef, RelType
from rayweave.graph.store import GraphStore


class TestBuilder:
    def test_edges_keep_direction_and_the_strongest_duplicate(self) -> None:
        b = ProjectionBuilder()
        b.add_chunk("k:a", "a", "d1", Level.SECTION)
        b.add_entity("k:e", "e", "Entity", 3)
        assert b.add_edge("mentions", "k:a", "k:e", 0.4)
        assert b.add_edge("mentions", "k:a", "k:e", 0.9)  # parallel: the strongest stays
        assert not b.add_edge("mentions", "k:a", "k:missing", 1.0)
        assert not b.add_edge("mentions", "k:a", "k:a", 1.0)  # no self loops
        p = b.build(stamp="s1")
        m = p.relations["mentions"]
        a, e = p.chunk_rows["a"], p.entity_rows["e"]
        assert m.nnz == 1
        assert m[a, e] == pytest.approx(0.9)
        assert m[e, a] == 0
        assert p.reversed("mentions")[e, a] == pytest.approx(0.9)
        assert p.stamp == "s1"
        assert p.edges == 1
        assert p.nodes.kinds[a] == NodeKind.CHUNK
        assert p.nodes.kinds[e] == NodeKind.ENTITY
        assert p.doc_id(a) == "d1"
        assert p.doc_id(e) == ""
        assert p.level_of(a) is Level.SECTION

    def test_transitions_are_cached_per_weighting(self) -> None:
        b = ProjectionBuilder()
        b.add_chunk("k:a", "a", "d", Level.SECTION)
        b.add_entity("k:e", "e", "E", 1)
        b.add_edge("mentions", "k:a", "k:e", 1.0)
        p = b.build()
        first = p.transition({"mentions": (1.0, 0.0)})
        assert p.transition({"mentions": (1.0, 0.0), "sequence": (0.0, 0.0)}) is first
        assert p.transition({"mentions": (1.0, 1.0)}) is not first
        assert describe(p)["bytes"] > 0

    def test_views_name_the_unit_each_chunk_resolves_to_before_fusion(self) -> None:
        b = ProjectionBuilder()
        for key, level, doc in (
            ("sA", Level.DOCUMENT, "A"),
            ("cA", Level.SECTION, "A"),
            ("pA", Level.PROPOSITION, "A"),
            ("sB", Level.DOCUMENT, "B"),
            ("cB1", Level.SECTION, "B"),
            ("cB2", Level.SECTION, "B"),
        ):
            b.add_chunk(f"k:{key}", key, doc, level)
        b.add_document("k:C", "C")  # no summary chunk: its section has no summary view
        b.add_chunk("k:cC", "cC", "C", Level.SECTION)
        for parent, child in (
            ("sA", "cA"),
            ("cA", "pA"),
            ("sB", "cB1"),
            ("sB", "cB2"),
            ("C", "cC"),
        ):
            assert b.add_edge("structure", f"k:{parent}", f"k:{child}", 1.0)
        views = b.build().views()
        assert views == {
            "sA": ("cA", "cA", True),
            "cA": ("cA", "cA", True),
            "pA": ("pA", "cA", False),
        }

    def test_a_document_without_summary_is_its_opening_chunk(self) -> None:
        b = ProjectionBuilder()
        b.add_chunk("k:s0", "s0", "doc", Level.SECTION)
        assert b.add_document("k:doc", "doc", first_chunk="k:s0") == 0
        junction = b.add_document("k:empty", "empty")
        b.add_entity("k:t", "t", "Title", 1)
        assert b.add_edge("explains", "k:doc", "k:t", 1.0)
        p = b.build()
        assert p.relations["explains"][p.chunk_rows["s0"], p.entity_rows["t"]] == 1.0
        assert p.nodes.kinds[junction] == NodeKind.DOCUMENT

    def test_aliases_name_entity_rows(self) -> None:
        b = ProjectionBuilder()
        e = b.add_entity("k:e", "e", "United States", 5)
        b.add_alias("united states", "k:e")
        b.add_alias("u.s.", "k:e")
        b.add_alias("u.s.", "k:unknown")
        p = b.build()
        assert entity_rows_for(p, ["u.s.", "nothing"]) == {e: "u.s."}
        np.testing.assert_array_equal(p.aliases["united states"], [e])


def _chunks() -> list[Chunk]:
    sections = linked_chunks(
        "guide", Level.SECTION, {"s0": "Install.", "s1": "Run it."}, parent_id="sum"
    )
    return [
        summary_chunk("sum", "Guide", sections, title="Guide"),
        *sections,
        Chunk(id="t0", doc_id="titled", level=Level.SECTION, text="About replicas.", position=0),
        Chunk(id="t1", doc_id="titled", level=Level.SECTION, text="More.", position=1),
    ]


def _write(store: GraphStore) -> None:
    store.write_chunks(_chunks())
    store.write_batch(
        GraphBatch(
            entities=(entity_row("replica", "replica", aliases=("replicas",)),),
            edges=(
                edge_row(
                    RelType.MENTIONS,
                    NodeRef(NodeLabel.SECTION, "s1"),
                    NodeRef(NodeLabel.ENTITY, "replica"),
                    conf=0.8,
                    weight=0.5,
                ),
                edge_row(
                    RelType.EXPLAINS,
                    NodeRef(NodeLabel.DOCUMENT, "titled"),
                    NodeRef(NodeLabel.ENTITY, "replica"),
                    weight=1.0,
                    source=EdgeSource.TITLE,
                ),
            ),
        )
    )


@pytest.mark.integration
class TestLoad:
    def test_loads_chunks_entities_aliases_and_relations(self, graph_store: GraphStore) -> None:
        _write(graph_store)
        p = load_projection(graph_store)
        assert set(p.chunk_rows) == {"sum", "s0", "s1", "t0", "t1"}
        assert p.level_of(p.chunk_rows["sum"]) is Level.DOCUMENT
        assert p.doc_id(p.chunk_rows["s1"]) == "guide"
        replica = p.entity_rows["replica"]
        assert entity_rows_for(p, ["replicas"]) == {replica: "replicas"}
        s1, t0 = p.chunk_rows["s1"], p.chunk_rows["t0"]
        assert p.relations["mentions"][s1, replica] == pytest.approx(0.4)  # weight x confidence
        # `titled` has no summary chunk: its title's EXPLAINS lands on its opening section.
        assert p.relations["explains"][t0, replica] == pytest.approx(0.9)
        assert p.relations["structure"][p.chunk_rows["sum"], p.chunk_rows["s0"]] > 0
        assert p.relations["sequence"][p.chunk_rows["s0"], s1] > 0
        assert p.stamp is not None

    def test_edges_read_in_batches_of_start_nodes_are_every_edge(
        self, graph_store: GraphStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        _write(graph_store)
        whole = load_projection(graph_store)
        monkeypatch.setattr(projection, "_EDGE_BATCH", 1)  # one start node per read
        batched = load_projection(graph_store)
        assert batched.keys == whole.keys
        assert set(batched.relations) == set(whole.relations)
        for group, matrix in whole.relations.items():
            assert (batched.relations[group] != matrix).nnz == 0, group
        assert whole.relations["structure"].nnz > 0

    def test_sentence_links_are_walked_only_when_switched_on(
        self, graph_store: GraphStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        _write(graph_store)
        ends = [NodeRef(NodeLabel.ENTITY, e) for e in ("hillage", "replica")]
        link = edge_row(
            RelType.CO_MENTIONED, *ends, conf=0.5, weight=0.8, source=EdgeSource.SENTENCE
        )
        entity = entity_row("hillage", "Steve Hillage")
        graph_store.write_batch(GraphBatch(entities=(entity,), edges=(link,)))
        on = graph_store.settings.model_copy(update={"sentence_links": True})
        monkeypatch.setattr(graph_store, "settings", on)
        p = load_projection(graph_store)
        hillage, replica = p.entity_rows["hillage"], p.entity_rows["replica"]
        assert p.relations["comention"][hillage, replica] == pytest.approx(0.4)
        off = graph_store.settings.model_copy(update={"sentence_links": False})
        monkeypatch.setattr(graph_store, "settings", off)
        assert "comention" not in load_projection(graph_store).relations

    def test_holder_swaps_in_a_rebuild_only_after_a_write(self, graph_store: GraphStore) -> None:
        _write(graph_store)
        holder = ProjectionHolder(
            lambda: load_projection(graph_store), projection_updates(graph_store), refresh_s=0
        )
        first = holder.current
        assert holder.refresh() is False
        assert holder.current is first
        graph_store.delete_document("titled")
        assert holder.refresh() is True
        assert "t0" not in holder.current.chunk_rows
        assert "s0" in holder.current.chunk_rows
        holder.close()

    def test_stamp_changes_on_every_write_path(self, graph_store: GraphStore) -> None:
        assert graph_store.stamp() is None
        _write(graph_store)
        from rayweave.graph.indexing import rebuild_corpus_edges

        seen = {graph_store.stamp()}
        rebuild_corpus_edges(graph_store)
        seen.add(graph_store.stamp())
        graph_store.delete_document("guide")
        seen.add(graph_store.stamp())
        assert len(seen) == 3
        assert None not in seen
        graph_store.drop_namespace()
        assert graph_store.stamp() is None
