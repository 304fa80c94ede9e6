"""Ingest on a three-node Ray cluster on one machine: two more raylets (1 CPU each) joined to the
session's head, stopped by process id afterwards so later tests see one node again."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from rayweave.cluster.runtime import join_node, ray_temp_dir, stop_processes
from rayweave.cluster.settings import Settings
from rayweave.ingest.pipeline import run_ingest
from rayweave.ingest.writers import DocumentWriter

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SAMPLE = Path(__file__).resolve().parents[2] / "ingest" / "sample_corpus"
FUSED_ACTOR = "MapWorker(MapBatches(IngestBatches))"


def _alive_nodes() -> int:
    import ray

    return sum(1 for n in ray.nodes() if n.get("Alive"))


def _wait_nodes(count: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while _alive_nodes() != count:
        assert time.monotonic() < deadline, f"{_alive_nodes()} alive nodes, waited for {count}"
        time.sleep(0.5)


@pytest.fixture
def three_nodes(ray_stack: Settings) -> Iterator[Settings]:
    before = _alive_nodes()
    dirs = [ray_temp_dir(ray_stack) / "nodes" / name for name in ("worker_a", "worker_b")]
    try:
        for d in dirs:
            join_node(ray_stack, d, num_cpus=1, resources={d.name: 1.0})
        _wait_nodes(before + 2, timeout_s=60)
        yield ray_stack
    finally:
        for d in dirs:
            stop_processes(d)
        _wait_nodes(before, timeout_s=90)


def _fused_actor_nodes() -> dict[str, str]:
    from ray.util.state import list_actors

    return {
        a.actor_id: a.node_id
        for a in list_actors(filters=[("class_name", "=", FUSED_ACTOR)], limit=10_000, detail=True)
    }


def _stored(settings: Settings, collection: str) -> tuple[list[str], list[str]]:
    writer = DocumentWriter.open(settings, collection=collection, shared=True)
    try:
        points = writer.vectors.scroll(filter={"visible": True}, limit=10_000)[0]
        assert writer.graph is not None
        rows = writer.graph.read(
            "MATCH (c) WHERE c.ns = $ns AND (c:Section OR c:Proposition OR c:Document) "
            "RETURN c.id AS id"
        )
    finally:
        writer.close()
    return sorted(str(p.payload["chunk_id"]) for p in points), sorted(r["id"] for r in rows)


def test_default_ingest_uses_every_node_and_stores_what_one_actor_stores(
    three_nodes: Settings, graph_connection: object
) -> None:
    # Small batches, so that the 33 documents make enough batches for three actors.
    small = three_nodes.ingest.model_copy(update={"batch_size": 4})
    spread = three_nodes.model_copy(update={"ingest": small})
    known = set(_fused_actor_nodes())
    collection = f"mn-{uuid.uuid4().hex[:8]}"
    summary = run_ingest(spread, [SAMPLE], collection=collection)
    used = {node for actor, node in _fused_actor_nodes().items() if actor not in known}
    assert len(used) >= 2, used
    assert summary.documents_failed == 0

    one = spread.model_copy(update={"ingest": small.model_copy(update={"fused_actors": 1})})
    baseline = f"mn-{uuid.uuid4().hex[:8]}"
    alone = run_ingest(one, [SAMPLE], collection=baseline)
    assert (summary.documents_inserted, summary.chunks) == (alone.documents_inserted, alone.chunks)
    vectors, graph = _stored(spread, collection)
    assert vectors
    assert (vectors, graph) == _stored(one, baseline)
