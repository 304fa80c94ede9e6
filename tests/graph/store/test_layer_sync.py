"""The entity layer written as a difference from the stored one, against a real Bolt server."""

from __future__ import annotations

import dataclasses

import pytest

from rayweave.graph.schema import (
    CORPUS_SOURCES,
    ColumnsDelta,
    EdgeColumns,
    EdgeRow,
    EdgeSource,
    GraphBatch,
    NodeLabel,
    NodeRef,
    RelType,
    RowsDelta,
)
from rayweave.graph.store import GraphStore

from .store_samples import entity, two_doc_edges, write_two_docs

pytestmark = pytest.mark.integration


def _alias_links(store: GraphStore) -> set[tuple[str, str]]:
    rows = store.read(
        "MATCH (a:Alias {ns: $ns})-[:ALIAS_OF]->(e:Entity) RETURN a.norm AS a, e.id AS e"
    )
    return {(r["a"], r["e"]) for r in rows}


def test_a_synced_entity_loses_the_aliases_it_no_longer_lists_and_only_it(
    graph_store: GraphStore,
) -> None:
    write_two_docs(graph_store)  # shared: "ray serve", "serve"; lonely: "lonely thing"
    # An unlisted link on an entity the sync below does not write: only a whole cleanup sees it.
    graph_store.write_entities([entity("lonely", "Lonely Thing", aliases=("hermit",))])
    graph_store.write_entities([entity("lonely", "Lonely Thing")], mode="replace")

    written, _, _ = graph_store.sync_entities(
        [entity("shared", "Ray Serve"), entity("lonely", "Lonely Thing")]
    )
    assert written == [graph_store.key("shared")]  # lonely's name, kind and aliases are equal
    graph_store.delete_unlisted_aliases(among=written)
    assert _alias_links(graph_store) == {
        ("ray serve", "shared"),
        ("lonely thing", "lonely"),
        ("hermit", "lonely"),
    }
    assert graph_store.counts().node(NodeLabel.ALIAS) == 3  # "serve", left unlinked, went

    graph_store.delete_unlisted_aliases()
    assert ("hermit", "lonely") not in _alias_links(graph_store)
    assert graph_store.counts().node(NodeLabel.ALIAS) == 2


def test_entities_sync_against_a_known_stored_view_and_return_it_as_written(
    graph_store: GraphStore,
) -> None:
    write_two_docs(graph_store)
    first, view, _ = graph_store.sync_entities([entity("shared", "Ray Serve")])
    assert view == graph_store.stored_entities()
    assert graph_store.stored_entities([*first, graph_store.key("absent")]) == {
        k: view[k] for k in first
    }
    # Given the view, what it says is stored is not written again, even when the store
    # differs (the caller vouches for it); what differs from it is written, and it follows.
    graph_store.write_entities([entity("shared", "Ray Serve Renamed")], mode="replace")
    written, after, _ = graph_store.sync_entities(
        [entity("shared", "Ray Serve"), entity("new", "New Thing")], dict(view)
    )
    assert written == [graph_store.key("new")]
    assert after == {**view, graph_store.key("new"): after[graph_store.key("new")]}
    assert graph_store.stored_entities([graph_store.key("new")]) == {
        graph_store.key("new"): after[graph_store.key("new")]
    }


def test_a_row_held_as_synced_is_not_compared_again_and_any_other_is(
    graph_store: GraphStore,
) -> None:
    write_two_docs(graph_store)
    same = entity("shared", "Ray Serve")
    _, view, rows = graph_store.sync_entities([same])
    assert rows == {graph_store.key("shared"): same}
    # The stored view says otherwise, but the row is the one the last sync made it equal: the
    # caller vouches for both (a layer snapshot drops a key any write logged since).
    stale = {**view, graph_store.key("shared"): ("Elsewhere", "concept", ("elsewhere",))}
    written, _, _ = graph_store.sync_entities([same], dict(stale), dict(rows))
    assert written == []
    # An equal row that is another object is compared, and so is one no longer held.
    equal = entity("shared", "Ray Serve")
    assert graph_store.sync_entities([equal], dict(stale), dict(rows))[0] == [
        graph_store.key("shared")
    ]
    written, _, held = graph_store.sync_entities([same], dict(stale), {})
    assert written == [graph_store.key("shared")]
    assert held == {graph_store.key("shared"): same}


def test_sync_writes_what_changed_deletes_what_went_and_ignores_extra_stored_properties(
    graph_store: GraphStore,
) -> None:
    write_two_docs(graph_store)
    edges = list(two_doc_edges())
    related = next(i for i, e in enumerate(edges) if e.rel is RelType.RELATED_TO)
    # A property that an older pass stored and today's rows no longer carry.
    graph_store.write_batch(
        GraphBatch(edges=(dataclasses.replace(edges[related], props={"npmi": 0.3}),)),
        mode="replace",
    )
    assert graph_store.sync_edges(edges, CORPUS_SOURCES).edges_written == 0

    edges[related] = dataclasses.replace(edges[related], weight=0.5)
    gone = edges.pop(2)  # a-p0 MENTIONS lonely
    sync = graph_store.sync_edges(edges, CORPUS_SOURCES, keep_view=True)
    assert (sync.edges_written, sync.edges_deleted, sync.edges_unchanged) == (1, 1, 4)
    assert sync.entity_ends == {graph_store.key("shared"), graph_store.key("lonely")}
    assert sync.view is not None
    assert len(sync.view) == 5
    assert gone.rel is RelType.MENTIONS
    assert graph_store.counts().rel(RelType.MENTIONS) == 2

    again = graph_store.sync_edges(edges, CORPUS_SOURCES, stored=sync.view)
    assert (again.edges_written, again.edges_deleted, again.edges_unchanged) == (0, 0, 5)


def _columns(pairs: list[tuple[str, str, float, int]]) -> EdgeColumns:
    return EdgeColumns(
        rel=RelType.RELATED_TO,
        source=EdgeSource.COOCCURRENCE,
        src=[p[0] for p in pairs],
        dst=[p[1] for p in pairs],
        weight=[p[2] for p in pairs],
        confidence=[p[2] for p in pairs],
        count=[p[3] for p in pairs],
    )


def test_columns_sync_as_their_rows_do(graph_store: GraphStore) -> None:
    write_two_docs(graph_store)
    graph_store.write_entities([entity("third", "Third Thing")])
    rows = [e for e in two_doc_edges() if e.rel is not RelType.RELATED_TO]
    before = _columns([("shared", "lonely", 0.4, 1)])  # as `two_doc_edges` stored it
    same = graph_store.sync_edges(rows, CORPUS_SOURCES, columns=[before])
    assert (same.edges_written, same.edges_deleted, same.edges_unchanged) == (0, 0, 6)

    # One weight moved and a pair came; then the first pair went.
    after = _columns([("shared", "lonely", 0.5, 2), ("shared", "third", 0.3, 3)])
    by_columns = graph_store.sync_edges(rows, CORPUS_SOURCES, columns=[after], keep_view=True)
    assert (by_columns.edges_written, by_columns.edges_unchanged) == (2, 5)
    assert by_columns.entity_ends == {graph_store.key(e) for e in ("lonely", "shared", "third")}
    related = graph_store.read(
        "MATCH (a:Entity {ns: $ns})-[r:RELATED_TO]->(b) "
        "RETURN a.id AS a, b.id AS b, r.weight AS w, r.count AS n ORDER BY a, b"
    )
    assert [(r["a"], r["b"], r["w"], r["n"]) for r in related] == [
        ("shared", "lonely", 0.5, 2),
        ("shared", "third", 0.3, 3),
    ]
    # The view it keeps is the one the same edges as rows give.
    by_rows = graph_store.sync_edges([*rows, *after.rows()], CORPUS_SOURCES, keep_view=True)
    assert by_rows.edges_unchanged == 7
    assert by_columns.view == by_rows.view

    last = _columns([("shared", "third", 0.3, 3)])
    gone = graph_store.sync_edges(rows, CORPUS_SOURCES, columns=[last], stored=by_rows.view)
    assert (gone.edges_written, gone.edges_deleted, gone.edges_unchanged) == (0, 1, 6)
    assert graph_store.counts().rel(RelType.RELATED_TO) == 1


def _related(store: GraphStore) -> list[tuple[str, str, float, str]]:
    rows = store.read(
        "MATCH (a:Entity {ns: $ns})-[r:RELATED_TO]->(b) "
        "RETURN a.id AS a, b.id AS b, r.weight AS w, r.source AS src ORDER BY a, b"
    )
    return [(r["a"], r["b"], r["w"], r["src"]) for r in rows]


def test_a_delta_compares_and_deletes_only_the_pairs_it_names(graph_store: GraphStore) -> None:
    write_two_docs(graph_store)
    graph_store.write_entities([entity("third", "Third Thing")])
    rows = [e for e in two_doc_edges() if e.rel is not RelType.RELATED_TO]
    first = _columns([("shared", "lonely", 0.4, 1), ("shared", "third", 0.3, 3)])
    view = graph_store.sync_edges(rows, CORPUS_SOURCES, columns=[first], keep_view=True).view
    assert view is not None

    # The columns say the first pair's weight moved and the second's did not; the delta names
    # only the first, so the second is not even looked at (the store's copy of it is stale).
    stale = _columns([("shared", "third", 0.9, 3)])
    graph_store.write_batch(GraphBatch(edges=tuple(stale.rows())), mode="replace")
    after = _columns([("shared", "lonely", 0.5, 2), ("shared", "third", 0.3, 3)])
    moved = ColumnsDelta(now=_columns([("shared", "lonely", 0.5, 2)]), gone=[])
    sync = graph_store.sync_edges(
        rows, CORPUS_SOURCES, columns=[after], delta=moved, stored=view, keep_view=True
    )
    assert (sync.edges_written, sync.edges_deleted, sync.edges_unchanged) == (1, 0, 5)
    assert _related(graph_store) == [
        ("shared", "lonely", 0.5, "cooccurrence"),
        ("shared", "third", 0.9, "cooccurrence"),
    ]
    assert sync.view is view  # changed in place

    # A pair that went is deleted when the delta names it.
    last = _columns([("shared", "third", 0.3, 3)])
    went = ColumnsDelta(now=_columns([]), gone=[("shared", "lonely"), ("lonely", "third")])
    sync = graph_store.sync_edges(rows, CORPUS_SOURCES, columns=[last], delta=went, stored=view)
    assert (sync.edges_written, sync.edges_deleted) == (0, 1)
    assert [(a, b) for a, b, _, _ in _related(graph_store)] == [("shared", "third")]


def test_a_stored_row_that_columns_did_not_write_makes_a_delta_compare_every_pair(
    graph_store: GraphStore,
) -> None:
    """An extractor's statement merged into a pair is stored as a row with its predicate: once
    the statement goes, the pair must be written as the columns have it, which no delta of
    co-occurrence names."""
    write_two_docs(graph_store)
    graph_store.write_entities([entity("third", "Third Thing")])
    rows = [e for e in two_doc_edges() if e.rel is not RelType.RELATED_TO]
    said = EdgeRow(
        rel=RelType.RELATED_TO,
        src=NodeRef(NodeLabel.ENTITY, "shared"),
        dst=NodeRef(NodeLabel.ENTITY, "third"),
        weight=0.8,
        confidence=0.8,
        source=EdgeSource.LLM,
        props={"predicate": "calls"},
    )
    cols = _columns([("shared", "lonely", 0.4, 1)])
    view = graph_store.sync_edges(
        [*rows, said], CORPUS_SOURCES, columns=[cols], keep_view=True
    ).view
    now = _columns([("shared", "lonely", 0.4, 1), ("shared", "third", 0.3, 3)])
    moved = ColumnsDelta(now=_columns([]), gone=[])
    sync = graph_store.sync_edges(rows, CORPUS_SOURCES, columns=[now], delta=moved, stored=view)
    assert (sync.edges_written, sync.edges_deleted) == (1, 0)
    assert _related(graph_store) == [
        ("shared", "lonely", 0.4, "cooccurrence"),
        ("shared", "third", 0.3, "cooccurrence"),
    ]

    # Rows of the columns' type in this sync (a statement that stays) also compare every pair.
    now = _columns([("shared", "lonely", 0.6, 2)])
    sync = graph_store.sync_edges(
        [*rows, said],
        CORPUS_SOURCES,
        columns=[now],
        delta=moved,
        stored=graph_store.stored_edges(CORPUS_SOURCES),
    )
    assert (sync.edges_written, sync.edges_deleted) == (2, 0)
    assert _related(graph_store) == [
        ("shared", "lonely", 0.6, "cooccurrence"),
        ("shared", "third", 0.8, "llm"),
    ]


def test_a_rows_delta_keeps_the_stored_edges_of_its_type_it_does_not_name(
    graph_store: GraphStore,
) -> None:
    write_two_docs(graph_store)
    rows = list(two_doc_edges())
    belongs = [e for e in rows if e.rel is RelType.BELONGS_TO]
    assert belongs
    view = graph_store.sync_edges(rows, CORPUS_SOURCES, keep_view=True).view
    before = graph_store.counts().rel(RelType.BELONGS_TO)
    others = [e for e in rows if e.rel is not RelType.BELONGS_TO]
    # Without a delta, edges of the type the rows do not hold go; with one, only those named.
    keep = RowsDelta(rel=RelType.BELONGS_TO, gone=[])
    sync = graph_store.sync_edges(others, CORPUS_SOURCES, stored=view, rows_delta=keep)
    assert (sync.edges_written, sync.edges_deleted) == (0, 0)
    assert graph_store.counts().rel(RelType.BELONGS_TO) == before
    went = RowsDelta(rel=RelType.BELONGS_TO, gone=[(belongs[0].src, belongs[0].dst)])
    sync = graph_store.sync_edges(
        others, CORPUS_SOURCES, stored=graph_store.stored_edges(CORPUS_SOURCES), rows_delta=went
    )
    assert (sync.edges_written, sync.edges_deleted) == (0, 1)
    assert graph_store.counts().rel(RelType.BELONGS_TO) == before - 1
    sync = graph_store.sync_edges(others, CORPUS_SOURCES)
    assert graph_store.counts().rel(RelType.BELONGS_TO) == 0
