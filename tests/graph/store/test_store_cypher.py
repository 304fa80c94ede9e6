"""The store's Cypher text builders, pure: labels come only from schema enums, values only as
parameters, and every combination builds balanced query text."""

from __future__ import annotations

import itertools
import re
from typing import Any, get_args

import pytest

from rayweave.graph.schema import ENDPOINTS, ENTITY_ANCHORS, EdgeSource, NodeLabel, RelType
from rayweave.graph.store.cypher import (
    ANCHOR_PATTERN,
    INTRODUCED,
    NEIGHBOUR_IN,
    NEIGHBOUR_OUT,
    NEIGHBOUR_START,
    REFRESH_DF,
    REFRESH_DF_ALL,
    WriteMode,
    delete_edges_query,
    detach_delete_query,
    link_chunks_query,
    merge_edges_query,
    q,
    upsert_entities_query,
)

MODES: tuple[WriteMode, ...] = get_args(WriteMode)


def params(text: str) -> set[str]:
    return set(re.findall(r"\$(\w+)", text))


def assert_balanced(text: str) -> None:
    """Every bracket closes, and no doubled brace of a format string leaked into the text."""
    assert "{{" not in text
    assert "}}" not in text
    for opening, closing in ("()", "[]", "{}"):
        assert text.count(opening) == text.count(closing), (opening, text)


def test_the_mode_literal_is_max_or_replace() -> None:
    assert set(MODES) == {"max", "replace"}


def test_q_hands_the_text_back_unchanged() -> None:
    text = "MATCH (n {key: $k}) RETURN n"
    assert q(text) is text


class TestDetachDelete:
    def test_each_label_deletes_its_keyed_nodes(self) -> None:
        for label in NodeLabel:
            text = detach_delete_query(label)
            assert f"MATCH (n:{label.value} {{key: k}})" in text
            assert "DETACH DELETE n" in text
            assert params(text) == {"keys"}
            assert_balanced(text)

    def test_a_plain_string_is_not_a_label(self) -> None:
        hostile: Any = "Entity) DETACH DELETE n //"
        with pytest.raises(AttributeError):
            detach_delete_query(hostile)


class TestDeleteEdges:
    def test_the_where_clause_filters_out_edges_of_the_namespace(self) -> None:
        text = delete_edges_query(NodeLabel.SECTION, "r.confidence < $min")
        assert "MATCH (s:Section {ns: $ns})-[r]->()" in text
        assert "WHERE r.confidence < $min" in text
        assert "DELETE r" in text
        assert params(text) == {"ns", "min"}
        assert_balanced(text)

    def test_a_plain_string_is_not_a_label(self) -> None:
        hostile: Any = "Section"
        with pytest.raises(AttributeError):
            delete_edges_query(hostile, "true")


class TestUpsertEntities:
    @pytest.mark.parametrize("mode", MODES)
    def test_values_travel_as_row_parameters(self, mode: WriteMode) -> None:
        text = upsert_entities_query(mode)
        assert params(text) == {"rows", "ns"}
        assert "MERGE (e:Entity {key: r.key})" in text
        assert "ON CREATE SET e.ns = $ns" in text
        assert_balanced(text)

    def test_replace_overwrites_name_kind_and_aliases(self) -> None:
        text = upsert_entities_query("replace")
        assert "SET e.name = r.name, e.kind = r.kind, e.aliases = r.aliases" in text

    def test_max_only_adds_aliases_and_refines_a_generic_kind(self) -> None:
        text = upsert_entities_query("max")
        assert "SET e.name" not in text  # the name is set only when the entity is created
        assert "WHEN e.kind = 'concept' THEN r.kind ELSE e.kind" in text
        assert "e.aliases + [a IN r.aliases WHERE NOT a IN e.aliases]" in text

    def test_a_description_is_kept_once_set(self) -> None:
        for mode in MODES:
            assert "coalesce(e.description, r.description)" in upsert_entities_query(mode)


class TestLinkChunks:
    @pytest.mark.parametrize("rel", [RelType.HAS_CHILD, RelType.NEXT])  # what chunk writes link
    def test_both_ends_resolve_at_any_level_and_missing_ends_are_dropped(
        self, rel: RelType
    ) -> None:
        text = link_chunks_query(rel)
        assert f"MERGE (a)-[e:{rel.value}]->(b)" in text
        for var, key in (("a", "r.a"), ("b", "r.b")):
            assert f"({var}1:Document {{ckey: {key}}})" in text  # a Document holds its summary
            assert f"({var}2:Section {{key: {key}}})" in text
            assert f"({var}3:Proposition {{key: {key}}})" in text
            assert f"WHERE {var} IS NOT NULL" in text
        assert "e.source = 'structure'" in text
        assert params(text) == {"rows"}
        assert_balanced(text)


class TestMergeEdges:
    @pytest.mark.parametrize("mode", MODES)
    def test_every_edge_the_schema_allows_builds_parameterised_text(self, mode: WriteMode) -> None:
        for rel, (sources, targets) in ENDPOINTS.items():
            for src, dst in itertools.product(sorted(sources), sorted(targets)):
                text = merge_edges_query(rel, src, dst, mode)
                assert f"MATCH (s:{src.value} {{key: r.s}})" in text
                assert f"MATCH (d:{dst.value} {{key: r.d}})" in text
                assert f"MERGE (s)-[e:{rel.value}]->(d)" in text
                assert "SET e += r.props" in text
                assert params(text) == ({"rows", "run"} if mode == "replace" else {"rows"})
                assert_balanced(text)

    def test_replace_overwrites_every_field_and_stamps_the_run(self) -> None:
        text = merge_edges_query(RelType.MENTIONS, NodeLabel.SECTION, NodeLabel.ENTITY, "replace")
        assert (
            "SET e.weight = r.w, e.confidence = r.c, e.source = r.src, e.count = r.n, e.run = $run"
        ) in text
        assert "CASE" not in text

    def test_max_keeps_the_larger_values_and_the_gazetteer_never_takes_over(self) -> None:
        text = merge_edges_query(RelType.MENTIONS, NodeLabel.SECTION, NodeLabel.ENTITY, "max")
        for field, row in (("weight", "w"), ("confidence", "c"), ("count", "n")):
            keep = f"CASE WHEN r.{row} > e.{field} THEN r.{row} ELSE e.{field} END"
            assert f"e.{field} = {keep}" in text
        gaz = EdgeSource.GAZETTEER.value
        assert f"WHEN (r.src = '{gaz}') <> (e.source = '{gaz}')" in text
        assert f"THEN CASE WHEN r.src = '{gaz}' THEN e.source ELSE r.src END" in text
        assert "$run" not in text


class TestEntityLiveness:
    def test_anchor_pattern_lists_every_anchor_relationship(self) -> None:
        assert ANCHOR_PATTERN.split("|") == [r.value for r in ENTITY_ANCHORS]

    def test_only_a_non_gazetteer_anchor_introduces_an_entity(self) -> None:
        assert f"[r:{ANCHOR_PATTERN}]" in INTRODUCED
        assert f"r.source <> '{EdgeSource.GAZETTEER.value}'" in INTRODUCED
        assert_balanced(INTRODUCED)

    def test_df_counts_mentions_for_keyed_rows_or_the_whole_namespace(self) -> None:
        assert params(REFRESH_DF) == {"rows"}
        assert params(REFRESH_DF_ALL) == {"ns"}
        for text in (REFRESH_DF, REFRESH_DF_ALL):
            assert "OPTIONAL MATCH (e)<-[m:MENTIONS]-()" in text  # an unmentioned entity gets 0
            assert "SET e.df = df" in text
            assert_balanced(text)


class TestNeighbourhoodText:
    def test_start_nodes_resolve_by_key_or_summary_chunk_key(self) -> None:
        assert params(NEIGHBOUR_START) == {"keys"}
        assert "(c:Document {ckey: k})" in NEIGHBOUR_START
        assert "RETURN DISTINCT" in NEIGHBOUR_START
        assert_balanced(NEIGHBOUR_START)

    @pytest.mark.parametrize(
        ("text", "pattern", "out"),
        [(NEIGHBOUR_OUT, "(n)-[r]->(m)", "true"), (NEIGHBOUR_IN, "(n)<-[r]-(m)", "false")],
    )
    def test_hops_go_one_way_and_leave_bookkeeping_out(
        self, text: str, pattern: str, out: str
    ) -> None:
        assert f"MATCH {pattern}" in text
        assert f"{out} AS out" in text
        for label in ("Alias", "Message", "Conversation", "User"):
            assert f"NOT m:{label}" in text
        assert "m.ns = $ns" in text  # never a neighbour from another namespace
        assert params(text) == {"keys", "ns", "limit"}
        assert_balanced(text)
