"""Graph schema: namespaces, endpoint rules of edges, source sets and the DDL."""

from __future__ import annotations

import re

import pytest

from rayweave.cluster.errors import ConfigError
from rayweave.cluster.types import Level
from rayweave.graph import schema as gs

DOC = gs.NodeRef(gs.NodeLabel.DOCUMENT, "d")
SEC = gs.NodeRef(gs.NodeLabel.SECTION, "s")
ENT = gs.NodeRef(gs.NodeLabel.ENTITY, "e")
MSG = gs.NodeRef(gs.NodeLabel.MESSAGE, "m")
USER = gs.NodeRef(gs.NodeLabel.USER, "u")


class TestNamespace:
    @pytest.mark.parametrize("ns", ["a", "corpus_1", "v1.2-dev", "A" * 64, "9lives"])
    def test_valid(self, ns: str) -> None:
        assert gs.check_namespace(ns) == ns

    @pytest.mark.parametrize(
        "ns", ["", "_lead", ".lead", "-lead", "has space", "a:b", "a/b", "A" * 65, "é"]
    )
    def test_invalid_names_the_input(self, ns: str) -> None:
        with pytest.raises(ConfigError, match=re.escape(repr(ns))):
            gs.check_namespace(ns)

    def test_trailing_newline_is_rejected(self) -> None:
        with pytest.raises(ConfigError):
            gs.check_namespace("abc\n")

    def test_non_string_is_a_config_error(self) -> None:
        with pytest.raises(ConfigError):
            gs.check_namespace(None)  # type: ignore[arg-type]

    def test_node_key(self) -> None:
        assert gs.node_key("ns", "id:1") == "ns:id:1"


class TestLabels:
    def test_every_level_has_a_chunk_label(self) -> None:
        assert [gs.label_for_level(level) for level in Level] == list(gs.CHUNK_LABELS)
        assert gs.label_for_level("section") is gs.NodeLabel.SECTION

    def test_unknown_level_is_rejected(self) -> None:
        with pytest.raises(ValueError, match="chapter"):
            gs.label_for_level("chapter")

    def test_every_relationship_has_endpoints(self) -> None:
        assert set(gs.ENDPOINTS) == set(gs.RelType)

    def test_entity_anchors_end_at_entities(self) -> None:
        for rel in gs.ENTITY_ANCHORS:
            assert gs.ENDPOINTS[rel][1] == frozenset({gs.NodeLabel.ENTITY}), rel


class TestSources:
    def test_structural_and_user_edges_are_never_inferred(self) -> None:
        for kept in (gs.EdgeSource.STRUCTURE, gs.EdgeSource.CONVERSATION, gs.EdgeSource.USER):
            assert kept not in gs.INFERRED_SOURCES
            assert kept not in gs.CORPUS_SOURCES

    def test_corpus_pass_owns_and_replaces_sentence_links(self) -> None:
        assert gs.EdgeSource.SENTENCE in gs.CORPUS_SOURCES
        assert gs.EdgeSource.SENTENCE in gs.INFERRED_SOURCES
        assert gs.ENDPOINTS[gs.RelType.CO_MENTIONED] == (
            frozenset({gs.NodeLabel.ENTITY}),
            frozenset({gs.NodeLabel.ENTITY}),
        )

    def test_corpus_pass_does_not_own_other_writers_edges(self) -> None:
        assert gs.EdgeSource.SYNONYMY in gs.INFERRED_SOURCES
        assert gs.EdgeSource.SYNONYMY not in gs.CORPUS_SOURCES

    def test_corpus_pass_owns_extracted_relations(self) -> None:
        # Built from the extractions kept on chunks, so replaced with the rest of the layer.
        assert gs.EdgeSource.LLM in gs.INFERRED_SOURCES
        assert gs.EdgeSource.LLM in gs.CORPUS_SOURCES


class TestEdgeRow:
    def test_allowed_edges(self) -> None:
        gs.EdgeRow(rel=gs.RelType.CHUNK_OF, src=SEC, dst=DOC)
        gs.EdgeRow(rel=gs.RelType.MENTIONS, src=MSG, dst=ENT, confidence=0.0)
        gs.EdgeRow(rel=gs.RelType.CREATED, src=USER, dst=MSG, confidence=1.0)

    @pytest.mark.parametrize(
        ("rel", "src", "dst"),
        [
            (gs.RelType.CHUNK_OF, DOC, DOC),  # a document is not a chunk of itself
            (gs.RelType.CHUNK_OF, SEC, SEC),
            (gs.RelType.MENTIONS, ENT, ENT),
            (gs.RelType.RELATED_TO, SEC, ENT),
            (gs.RelType.PART_OF, USER, gs.NodeRef(gs.NodeLabel.CONVERSATION, "c")),
            (gs.RelType.ALIAS_OF, ENT, ENT),
        ],
    )
    def test_wrong_endpoints_are_named(
        self, rel: gs.RelType, src: gs.NodeRef, dst: gs.NodeRef
    ) -> None:
        with pytest.raises(ValueError, match=f"{rel} cannot link {src.label} -> {dst.label}"):
            gs.EdgeRow(rel=rel, src=src, dst=dst)

    @pytest.mark.parametrize("confidence", [-0.01, 1.01, float("nan")])
    def test_confidence_outside_unit_interval(self, confidence: float) -> None:
        with pytest.raises(ValueError, match="confidence must lie in"):
            gs.EdgeRow(rel=gs.RelType.CHUNK_OF, src=SEC, dst=DOC, confidence=confidence)

    def test_equal_rows_are_equal(self) -> None:
        a = gs.EdgeRow(rel=gs.RelType.EXPLAINS, src=SEC, dst=ENT, weight=0.5)
        b = gs.EdgeRow(rel=gs.RelType.EXPLAINS, src=SEC, dst=ENT, weight=0.5)
        assert a == b
        assert a.source is gs.EdgeSource.STRUCTURE


class TestGraphBatch:
    def test_addition_concatenates_in_order(self) -> None:
        e1, e2 = gs.EntityRow(id="1", name="a"), gs.EntityRow(id="2", name="b")
        t = gs.TopicRow(id="t", name="topic", keywords=("k",))
        edge = gs.EdgeRow(rel=gs.RelType.CHUNK_OF, src=SEC, dst=DOC)
        total = gs.GraphBatch(entities=(e1,), edges=(edge,)) + gs.GraphBatch(
            entities=(e2,), topics=(t,)
        )
        assert total.entities == (e1, e2)
        assert total.topics == (t,)
        assert total.edges == (edge,)
        assert gs.GraphBatch() + gs.GraphBatch() == gs.GraphBatch()


class TestDdl:
    def test_one_key_constraint_and_ns_index_per_label(self) -> None:
        statements = gs.schema_statements()
        for label in gs.NodeLabel:
            low = label.value.lower()
            assert (
                f"CREATE CONSTRAINT rw_{low}_key IF NOT EXISTS "
                f"FOR (n:{label.value}) REQUIRE n.key IS UNIQUE"
            ) in statements
            assert f"CREATE INDEX rw_{low}_ns IF NOT EXISTS FOR (n:{label.value}) ON (n.ns)" in (
                statements
            )

    def test_chunk_lookup_indexes(self) -> None:
        statements = gs.schema_statements()
        assert "CREATE INDEX rw_document_ckey IF NOT EXISTS FOR (n:Document) ON (n.ckey)" in (
            statements
        )
        assert any("rw_section_doc" in s and "(n.dkey)" in s for s in statements)
        assert any("rw_proposition_doc" in s and "(n.dkey)" in s for s in statements)

    def test_statements_are_idempotent_and_uniquely_named(self) -> None:
        statements = gs.schema_statements()
        assert all("IF NOT EXISTS" in s for s in statements)
        names = [s.split()[2] for s in statements]
        assert len(names) == len(set(names))
        assert len(statements) == 2 * len(gs.NodeLabel) + 4  # + the change log's index
        assert gs.schema_statements() == statements


class TestEdgeColumns:
    def columns(self, rel: gs.RelType = gs.RelType.RELATED_TO, **kw: object) -> gs.EdgeColumns:
        values: dict[str, object] = {
            "src": ["a", "a"],
            "dst": ["b", "c"],
            "weight": [0.5, 0.25],
            "confidence": [0.5, 0.25],
            "count": [3, 2],
        }
        values.update(kw)
        return gs.EdgeColumns(rel=rel, source=gs.EdgeSource.COOCCURRENCE, **values)  # type: ignore[arg-type]

    def test_rows_are_the_edges_the_columns_hold(self) -> None:
        a, b, c = (gs.NodeRef(gs.NodeLabel.ENTITY, x) for x in "abc")
        made = {"source": gs.EdgeSource.COOCCURRENCE, "rel": gs.RelType.RELATED_TO}
        assert self.columns().rows() == [
            gs.EdgeRow(src=a, dst=b, weight=0.5, confidence=0.5, count=3, **made),  # type: ignore[arg-type]
            gs.EdgeRow(src=a, dst=c, weight=0.25, confidence=0.25, count=2, **made),  # type: ignore[arg-type]
        ]
        batch = gs.GraphBatch(columns=(self.columns(),))
        assert len(batch.edge_rows()) == 2
        assert not batch.edges

    def test_checked_once_as_each_row_would_be(self) -> None:
        with pytest.raises(ValueError, match="cannot link entities"):
            self.columns(gs.RelType.MENTIONS)
        with pytest.raises(ValueError, match="length"):
            self.columns(count=[1])
        with pytest.raises(ValueError, match="confidences"):
            self.columns(confidence=[0.5, 1.5])
