"""Walks over a small hand-built projection: the bridge passage, its path, links, entities."""

from __future__ import annotations

import pytest

from rayweave.cluster.settings import GraphSettings
from rayweave.cluster.types import Hit, Level, QueryType
from rayweave.graph.profiles import PROFILES
from rayweave.graph.projection import GraphProjection, ProjectionBuilder
from rayweave.graph.walk import (
    WalkRequest,
    bridge_links,
    query_entities,
    relation_weights,
    reset_distribution,
    seed_rows,
    walk,
)

MULTI_HOP = relation_weights(PROFILES[QueryType.MULTI_HOP])


def bridge_graph() -> GraphProjection:
    """`green` (about the song Green) mentions Steve Hillage; `hillage` is about him and names
    his spouse; `lookalike` is about another song called Green Day and mentions nobody; `crowd`
    docs mention Steve Hillage without being about him."""
    b = ProjectionBuilder()
    for chunk, doc in [
        ("green", "d-green"),
        ("hillage", "d-hillage"),
        ("lookalike", "d-look"),
        ("crowd1", "d-crowd1"),
        ("crowd2", "d-crowd2"),
        ("green-2", "d-green"),
    ]:
        b.add_chunk(chunk, chunk, doc, Level.SECTION)
    for eid, name, df in [
        ("e-green", "Green", 1),
        ("e-hillage", "Steve Hillage", 4),
        ("e-giraudy", "Miquette Giraudy", 1),
        ("e-greenday", "Green Day", 1),
    ]:
        b.add_entity(eid, eid, name, df)
        b.add_alias(name.lower(), eid)
    b.add_alias("steve", "e-hillage")
    edges = [
        ("explains", "green", "e-green", 1.0),
        ("mentions", "green", "e-hillage", 0.8),
        ("explains", "hillage", "e-hillage", 1.0),
        ("mentions", "hillage", "e-giraudy", 0.8),
        ("explains", "lookalike", "e-greenday", 1.0),
        ("mentions", "crowd1", "e-hillage", 0.8),
        ("mentions", "crowd2", "e-hillage", 0.8),
        ("structure", "green", "green-2", 1.0),
    ]
    for group, a, c, w in edges:
        assert b.add_edge(group, a, c, w)
    return b.build(stamp="t")


def test_walk_reaches_the_bridge_passage_with_its_path() -> None:
    p = bridge_graph()
    request = WalkRequest(entities={}, seeds={p.chunk_rows["green"]: 1.0}, weights=MULTI_HOP)
    hits = walk(p, request, GraphSettings(walk_tolerance=1e-9), limit=10)
    ranked = [h.id for h in hits]
    assert ranked[0] == "green"  # the seed, confirmed
    assert ranked.index("hillage") < len(ranked)
    assert "lookalike" not in ranked  # no path from the seed
    # An entity hands mass only to the passages about it: the crowd that names him gets none.
    assert "crowd1" not in ranked
    assert "crowd2" not in ranked
    hit = next(h for h in hits if h.id == "hillage")
    assert hit.doc_id == "d-hillage"
    assert hit.level is Level.SECTION
    assert hit.text == ""
    path = hit.paths[0]
    assert path.nodes == ("green", "e-hillage", "hillage")
    assert path.relationships == ("MENTIONS", "EXPLAINS")
    assert hit.retrievers == ("graph",)


def test_profile_weights_decide_which_relations_walk() -> None:
    p = bridge_graph()
    seed = {p.chunk_rows["green"]: 1.0}
    how_to = relation_weights(PROFILES[QueryType.HOW_TO])
    code = relation_weights(PROFILES[QueryType.CODE])
    assert how_to["sequence"][0] > 0
    assert MULTI_HOP["sequence"] == (0.0, 0.0)
    assert code["defines"][0] > 0
    assert MULTI_HOP["defines"] == (0.0, 0.0)
    no_structure = {**MULTI_HOP, "structure": (0.0, 0.0)}
    with_structure = {**MULTI_HOP, "structure": (1.0, 1.0)}
    settings = GraphSettings(walk_tolerance=1e-9)
    off = [
        h.id
        for h in walk(
            p, WalkRequest(entities={}, seeds=seed, weights=no_structure), settings, limit=10
        )
    ]
    on = [
        h.id
        for h in walk(
            p, WalkRequest(entities={}, seeds=seed, weights=with_structure), settings, limit=10
        )
    ]
    assert "green-2" not in off
    assert "green-2" in on


def test_query_entities_prefer_the_longest_name_and_rare_ones() -> None:
    p = bridge_graph()
    found = query_entities(p, "Who is the spouse of Steve Hillage?", (), 6)
    names = {p.nodes.names[r]: w for r, w in found.items()}
    assert set(names) == {"Steve Hillage"}  # "steve" alone is inside the longer match
    rare = query_entities(p, "Green and Steve Hillage", (), 6)
    by_name = {p.nodes.names[r]: w for r, w in rare.items()}
    assert by_name["Green"] > by_name["Steve Hillage"]  # df 1 vs 4
    assert query_entities(p, "nothing known here", (), 6) == {}


def test_reset_splits_mass_between_entities_and_seeds() -> None:
    both = reset_distribution(
        WalkRequest(entities={1: 1.0}, seeds={2: 3.0, 3: 1.0}, weights={}), 0.5
    )
    assert both == pytest.approx({1: 0.5, 2: 0.375, 3: 0.125})
    alone = reset_distribution(WalkRequest(entities={}, seeds={2: 1.0}, weights={}), 0.5)
    assert alone == {2: 1.0}
    assert reset_distribution(WalkRequest(entities={}, seeds={}, weights={}), 0.5) == {}


def test_entities_alone_lead_to_the_passage_about_them() -> None:
    p = bridge_graph()
    ents = query_entities(p, "Steve Hillage", (), 6)
    hits = walk(
        p, WalkRequest(entities=ents, seeds={}, weights=MULTI_HOP), GraphSettings(), limit=5
    )
    assert hits[0].id == "hillage"


def test_seed_rows_normalise_and_skip_unknown_ids() -> None:
    p = bridge_graph()
    seeds = [
        Hit(id="green", doc_id="d-green", text="", score=0.8),
        Hit(id="hillage", doc_id="d-hillage", text="", score=0.4),
        Hit(id="gone", doc_id="x", text="", score=0.9),
    ]
    assert seed_rows(p, seeds) == {p.chunk_rows["green"]: 1.0, p.chunk_rows["hillage"]: 0.5}


def test_bridge_links_follow_the_seeds_rare_explained_entities() -> None:
    p = bridge_graph()
    links = bridge_links(p, {p.chunk_rows["green"]: 1.0}, GraphSettings())
    assert [(h.id, h.paths[0].nodes) for h in links] == [
        ("hillage", ("green", "e-hillage", "hillage"))
    ]
    assert links[0].metadata["graph_kinds"] == ["link"]
    # A seed's own document is never a link target; an entity nobody explains links nowhere.
    assert bridge_links(p, {p.chunk_rows["hillage"]: 1.0}, GraphSettings()) == []


def test_a_sentence_comention_carries_the_walk_to_the_next_hop() -> None:
    """Multi-hop walks follow CO_MENTIONED both ways, code walks do not; the edge lifts the
    next hop's passage in a walk that restarts on the question's entity alone."""
    assert MULTI_HOP["comention"] == (1.0, 1.0)
    assert relation_weights(PROFILES[QueryType.CODE])["comention"] == (0.0, 0.0)
    base = bridge_graph()
    b = ProjectionBuilder()
    for row, node in enumerate(base.nodes.ids):
        if row in base.nodes.names:
            b.add_entity(node, node, base.nodes.names[row], float(base.nodes.df[row]))
        else:
            b.add_chunk(node, node, base.doc_id(row), base.level_of(row))
    for group, matrix in base.relations.items():
        coo = matrix.tocoo()
        for u, v, w in zip(coo.row.tolist(), coo.col.tolist(), coo.data.tolist(), strict=True):
            b.add_edge(group, base.nodes.ids[u], base.nodes.ids[v], float(w))
    assert b.add_edge("comention", "e-green", "e-hillage", 0.5)
    linked = b.build(stamp="t")
    settings = GraphSettings(walk_tolerance=1e-9)

    def hillage_score(p: GraphProjection) -> float:
        request = WalkRequest(entities={p.entity_rows["e-green"]: 1.0}, seeds={}, weights=MULTI_HOP)
        return next(h.score for h in walk(p, request, settings, limit=10) if h.id == "hillage")

    assert hillage_score(linked) > hillage_score(base)


def test_facts_seed_the_entities_they_name_weighted_by_score_and_rarity() -> None:
    from rayweave.graph.walk import fact_entities

    graph = bridge_graph()
    facts = [
        Hit(
            id="f1",
            doc_id="",
            text="Steve Hillage married Miquette Giraudy",
            score=0.8,
            metadata={"subject": "Steve Hillage", "object": "Miquette Giraudy"},
        ),
        Hit(id="f2", doc_id="", text="x", score=0.9, metadata={"subject": "Nobody", "object": ""}),
    ]
    rows = fact_entities(graph, facts)
    names = {graph.nodes.names[r]: w for r, w in rows.items()}
    assert set(names) == {"Steve Hillage", "Miquette Giraudy"}
    # The rarer entity (df 1 against 4) weighs more for the same fact.
    assert names["Miquette Giraudy"] > names["Steve Hillage"] > 0
    request = WalkRequest(entities=rows, seeds={}, weights=MULTI_HOP, entity_share=0.95)
    hits = walk(graph, request, GraphSettings(), limit=3)
    assert hits[0].id == "hillage"  # the passage the fact's entities run through
