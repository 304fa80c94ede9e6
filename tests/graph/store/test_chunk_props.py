"""Chunk <-> graph property conversion, without a server."""

from __future__ import annotations

from rayweave.cluster.types import Chunk, ContentType, Entity, Level
from rayweave.graph.store.chunk_props import (
    chunk_from_props,
    chunk_row,
    decode_mentions,
    encode_mentions,
    structure_links,
    unique_rows,
)


def key(node_id: str) -> str:
    return f"ns:{node_id}"


SECTION = Chunk(
    id="d-s1",
    doc_id="d",
    level=Level.SECTION,
    text="body",
    position=1,
    parent_id="d-sum",
    prev_id="d-s0",
    next_id="d-s2",
    children_ids=("d-p0", "d-p1"),
    section_path=("Intro",),
    title="Intro",
    source="d.md",
    content_type=ContentType.MARKDOWN,
    keywords=("alpha",),
    error_codes=("E42",),
)


def test_mentions_round_trip_and_an_empty_list_is_kept() -> None:
    entities = [Entity(id="", name="Ray Serve", kind="product", aliases=("serve",))]
    assert decode_mentions(encode_mentions(entities)) == entities
    assert encode_mentions([]) == "[]"


def test_a_stored_row_reads_back_as_the_same_chunk_without_its_links() -> None:
    row = chunk_row(SECTION, ns="ns", key=key, mentions=())
    assert (row["key"], row["dkey"], row["title"]) == ("ns:d-s1", "ns:d", "Intro")
    assert row["props"]["mentions"] == "[]"
    back = chunk_from_props({**row["props"], "title": row["title"]}, level=Level.SECTION)
    assert back.id == SECTION.id
    assert (back.text, back.position, back.parent_id) == ("body", 1, "d-sum")
    assert (back.section_path, back.keywords, back.error_codes) == (
        ("Intro",),
        ("alpha",),
        ("E42",),
    )
    assert back.content_type == ContentType.MARKDOWN
    assert (back.prev_id, back.next_id, back.children_ids) == (None, None, ())


def test_structure_links_come_from_both_directions_fields() -> None:
    children, successors = structure_links(SECTION, key)
    assert children == [
        {"a": "ns:d-sum", "b": "ns:d-s1"},
        {"a": "ns:d-s1", "b": "ns:d-p0"},
        {"a": "ns:d-s1", "b": "ns:d-p1"},
    ]
    assert successors == [{"a": "ns:d-s0", "b": "ns:d-s1"}, {"a": "ns:d-s1", "b": "ns:d-s2"}]
    rows = [{"a": "x", "b": "y"}, {"a": "x", "b": "y"}, {"a": "y", "b": "x"}]
    assert unique_rows(rows) == [{"a": "x", "b": "y"}, {"a": "y", "b": "x"}]
