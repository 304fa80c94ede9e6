"""GraphSearch over the real graph store: walks from the query's entities (phase 1) and from the
seeds (phase 2) on the in-memory projection, bridge links for bridging profiles, and a
projection refreshed after writes."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest

from rayweave.cluster.services.graph_server import GraphConnection
from rayweave.cluster.settings import GraphSettings
from rayweave.cluster.types import Chunk, Hit, Level
from rayweave.graph.schema import EdgeRow, EdgeSource, EntityRow, GraphBatch, NodeLabel, NodeRef
from rayweave.graph.schema import RelType as R
from rayweave.graph.store import GraphStore
from rayweave.serve.fusion import LINKS
from rayweave.serve.graph_retriever import GraphSearch
from rayweave.serve.schemas import ContentScope, Profile, QueryType
from rayweave.serve.search import RetrievalPlan, RetrievalQuery

pytestmark = pytest.mark.integration

S, E = NodeLabel.SECTION, NodeLabel.ENTITY


def _section(cid: str, doc: str, text: str) -> Chunk:
    return Chunk(id=cid, doc_id=doc, level=Level.SECTION, text=text)


def _edge(rel: R, chunk: str, entity: str) -> EdgeRow:
    return EdgeRow(
        rel=rel, src=NodeRef(S, chunk), dst=NodeRef(E, entity), source=EdgeSource.EXTRACTOR
    )


@pytest.fixture
def search(graph_connection: GraphConnection) -> Iterator[GraphSearch]:
    store = GraphStore(graph_connection, GraphSettings(), namespace=f"gr{uuid.uuid4().hex[:10]}")
    store.ensure_schema()
    store.write_chunks(
        [
            _section("green", "d-green", "Green is a song by Steve Hillage."),
            _section("hillage", "d-hillage", "Steve Hillage married Miquette Giraudy."),
            _section("other", "d-other", "An unrelated passage."),
        ]
    )
    store.write_batch(
        GraphBatch(
            entities=(
                EntityRow(id="e-green", name="Green"),
                EntityRow(id="e-hillage", name="Steve Hillage"),
            ),
            edges=(
                _edge(R.EXPLAINS, "green", "e-green"),
                _edge(R.MENTIONS, "green", "e-hillage"),
                _edge(R.EXPLAINS, "hillage", "e-hillage"),
            ),
        )
    )
    graph = GraphSearch(store, refresh_s=0)
    yield graph
    store.drop_namespace()
    graph.close()


def _query(text: str, query_type: QueryType, seeds: tuple[Hit, ...] = ()) -> RetrievalQuery:
    plan = RetrievalPlan(profile=Profile.GRAPH, query_type=query_type, scope=ContentScope.DOCS)
    return RetrievalQuery(text=text, plan=plan, seeds=seeds)


def test_phase_one_walks_from_the_named_entities(search: GraphSearch) -> None:
    lists = asyncio.run(search.retrieve(_query("Who did Steve Hillage marry?", QueryType.GENERAL)))
    hits = lists["graph"]
    assert hits[0].id == "hillage"
    assert hits[0].retrievers == ("graph",)
    assert all(h.id != "other" for h in hits)


def test_phase_two_walks_from_the_seeds_and_links_for_bridging_types(search: GraphSearch) -> None:
    seed = Hit(id="green", doc_id="d-green", text="", score=0.9)
    multi_hop = asyncio.run(
        search.expand(_query("spouse of the Green performer", QueryType.MULTI_HOP, (seed,)))
    )
    ranked = [h.id for h in multi_hop["graph-expand"]]
    assert ranked[:2] == ["green", "hillage"]
    assert [h.id for h in multi_hop[LINKS]] == ["hillage"]
    assert multi_hop[LINKS][0].paths[0].nodes == ("green", "e-hillage", "hillage")
    code = asyncio.run(
        search.expand(_query("spouse of the Green performer", QueryType.CODE, (seed,)))
    )
    assert LINKS not in code  # the code profile does not bridge


def test_projection_follows_writes_and_deletes(search: GraphSearch) -> None:
    store = search.store
    store.write_chunks([_section("giraudy", "d-giraudy", "Miquette Giraudy, musician.")])
    store.write_batch(
        GraphBatch(
            entities=(EntityRow(id="e-giraudy", name="Miquette Giraudy"),),
            edges=(_edge(R.EXPLAINS, "giraudy", "e-giraudy"),),
        )
    )
    query = _query("Miquette Giraudy", QueryType.WHAT_IS)
    assert asyncio.run(search.retrieve(query))["graph"] == []  # the old projection
    assert search.projections.refresh()
    assert [h.id for h in asyncio.run(search.retrieve(query))["graph"]] == ["giraudy"]
    store.delete_document("d-giraudy")
    assert search.projections.refresh()
    assert asyncio.run(search.retrieve(query))["graph"] == []
