"""The entity layer written as a difference from the stored one, against a real Bolt server."""

from __future__ import annotations

import dataclasses

import pytest

from rayweave.graph.schema import CORPUS_SOURCES, GraphBatch, NodeLabel, RelType
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

    written = graph_store.sync_entities(
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
