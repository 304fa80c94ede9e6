"""The full rebuild as a Ray job over shares of the corpus: it leaves the graph a fresh ingest
built, repairs a damaged layer, and on three raylets puts its shares on all three; its tasks run
with the cyclic collector paused."""

from __future__ import annotations

import gc
import uuid
from pathlib import Path

import pytest
from tests_support import joined_nodes, namespace_snapshot

from rayweave.cluster.settings import Settings
from rayweave.graph.store import open_graph_store
from rayweave.ingest.corpus_rebuild import _paused, rebuild_on_cluster
from rayweave.ingest.pipeline import finalize, run_ingest

SAMPLE = Path(__file__).resolve().parents[2] / "ingest" / "sample_corpus"


def test_a_task_runs_with_the_collector_paused_and_keeps_its_name() -> None:
    def tally(share: list[int]) -> tuple[int, bool]:
        return sum(share), gc.isenabled()

    task = _paused(tally)
    assert task([1, 2]) == (3, False)
    assert gc.isenabled()
    assert task.__name__ == "tally"  # Ray names the task after it


def small_shares(settings: Settings, documents: int) -> Settings:
    graph = settings.graph.model_copy(update={"rebuild_share_documents": documents})
    return settings.model_copy(update={"graph": graph})


@pytest.fixture(scope="module")
def ingested(ray_stack: Settings, graph_connection: object) -> tuple[Settings, str]:
    collection = f"rebuild-{uuid.uuid4().hex[:8]}"
    summary = run_ingest(ray_stack, [SAMPLE], collection=collection)
    assert summary.documents_failed == 0
    assert summary.documents_inserted > 20
    return ray_stack, collection


@pytest.mark.integration
def test_a_rebuild_in_shares_repairs_the_layer_a_fresh_ingest_built(
    ingested: tuple[Settings, str],
) -> None:
    settings, collection = ingested
    fresh = namespace_snapshot(settings, collection)
    store = open_graph_store(settings, namespace=collection)
    try:  # damage: a rule-made edge gone, a stray entity, a topic's edges gone
        store.write(
            "MATCH (c {ns: $ns})-[r:MENTIONS]->(e:Entity) WITH r LIMIT 5 DELETE r", op="test"
        )
        store.write(
            "CREATE (:Entity {ns: $ns, key: $key, id: 'stray', name: 'stray', kind: 'concept'})",
            {"key": store.key("stray")},
            op="test",
        )
        store.write("MATCH (d {ns: $ns})-[r:BELONGS_TO]->(t:Topic) DELETE r", op="test")
        version = store.version().version
    finally:
        store.close()
    assert namespace_snapshot(settings, collection) != fresh

    done = finalize(small_shares(settings, 4), collection, rebuild=True)

    assert namespace_snapshot(settings, collection) == fresh
    assert done.entities > 0
    assert done.edges_written > 0
    assert list(done.seconds) == ["rebuild", "facts", "vector index"]
    store = open_graph_store(settings, namespace=collection)
    try:  # replicas reload whole: a rebuild may have touched anything
        changes = store.changes_since(version)
        assert changes.full
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.integration
def test_on_three_raylets_every_node_gets_shares(ingested: tuple[Settings, str]) -> None:
    settings, collection = ingested
    fresh = namespace_snapshot(settings, collection)
    with joined_nodes(settings, ("worker_a", "worker_b")):
        report = rebuild_on_cluster(small_shares(settings, 2), collection)
    assert report.shares >= 12
    assert report.nodes == 3
    assert report.edges_written > 0
    assert report.edges_deleted == 0
    assert namespace_snapshot(settings, collection) == fresh
