"""Serving when a node dies: four raylets join the session's head, the composed app places its
two VectorRetriever replicas on two nodes (`max_replicas_per_node: 1`, everything else pinned to
the head), and a node holding a replica is SIGKILLed under a bounded load on 127.0.0.1, three
times in a run (each time on a node that still lives, so the replacement always has a free one).

Every kill: no request of the 300 is lost (each answered 200 with vector results); the cluster
declares the node dead while the load still runs; requests in flight at the kill finish within
the retrieval deadline, the page read's retries and the detection bound; requests sent after the
node was declared dead stay within the warm load's p99 plus that bound; afterwards the app is
whole again without a restart. Responses carry the Ingress's entry and exit times, so the
slowest requests' figures say whether a wait was before, in or after the replica.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from tests_support import SAMPLE_CORPUS, alive_actors, alive_nodes, joined_nodes, scrape

from rayweave.cluster.services.runtime import stop_processes
from rayweave.cluster.settings import Settings

from .figures import record
from .serve_load import drive, healthy, kill_under_load, p99

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.timeout(1800),
]

HEAD = {"node:__internal_head__": 0.001}
NODES = ("serve_a", "serve_b", "serve_c", "serve_d")
KILLS = 3
DETECTION_S = 2.0
"""A SIGKILLed raylet is declared dead within this (tests/reliability/test_node_detection.py)."""
SCHEDULING_S = 1.0
"""What a loaded 2-core machine adds to a request's own bound (client, proxy and event loops)."""


@pytest.fixture(scope="module")
def spread_app(
    ray_stack: Settings, graph_connection: object, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Settings, dict[str, Path]]]:
    from ray import serve

    from rayweave.ingest.pipeline import run_ingest
    from rayweave.serve.app import DEFAULT_SERVE_CONFIG, deploy

    config = yaml.safe_load(DEFAULT_SERVE_CONFIG.read_text())
    # All nodes share this machine's HTTP port: one proxy, on the head.
    config["proxy_location"] = "HeadOnly"
    for deployment in config["applications"][0]["deployments"]:
        if deployment["name"] == "VectorRetriever":
            deployment.pop("autoscaling_config", None)
            deployment["num_replicas"] = 2
            deployment["max_replicas_per_node"] = 1
        else:
            options = deployment.setdefault("ray_actor_options", {})
            options["resources"] = {**options.get("resources", {}), **HEAD}
    path = tmp_path_factory.mktemp("failover") / "serve.yaml"
    path.write_text(yaml.safe_dump(config))
    base = ray_stack.model_dump()
    settings = Settings(
        **{
            **base,
            "qdrant": {**base["qdrant"], "collection": "sample"},
            "serve": {**base["serve"], "layout": "composed", "serve_config": path},
        }
    )
    run_ingest(settings, [SAMPLE_CORPUS], collection="sample")
    with joined_nodes(ray_stack, NODES) as dirs:
        # A Serve instance that an earlier module started keeps its proxies (one on every node
        # with a replica, sharing the port through SO_REUSEPORT, so the victim's proxy would
        # drop the connections it holds), and `deploy` refuses HeadOnly while it runs: restart.
        serve.shutdown()
        url = deploy(settings)
        try:
            yield url, settings, dirs
        finally:
            serve.shutdown()  # later modules start Serve with the default proxies again


def replica_nodes(app_name: str) -> dict[str, str]:
    """VectorRetriever replica actor name -> node id."""
    return {
        a.name: a.node_id
        for a in alive_actors()
        if a.class_name == f"ServeReplica:{app_name}:VectorRetriever"
    }


def test_nodes_with_a_replica_die_under_load_and_no_request_is_lost(
    spread_app: tuple[str, Settings, dict[str, Path]],
) -> None:
    from ray import serve

    from rayweave.serve.search import READ_TRIES

    url, settings, dirs = spread_app
    app = settings.serve.app_name
    warm = drive(url, 100, "hybrid")
    assert [o for o in warm if o.failed] == []
    baseline_p99 = p99([o.seconds for o in warm])
    # Retrieval deadline, then the page read: each try waits at least the read floor.
    own_bound = settings.serve.deadline_ms / 1000 + READ_TRIES * settings.serve.read_floor_ms / 1000
    node_names = {
        n["NodeID"]: name for n in alive_nodes() for name in dirs if name in n["Resources"]
    }
    proxies = set(serve.status().proxies)
    assert len(proxies) == 1, proxies  # the head's alone
    assert not proxies & set(node_names), proxies

    for round_ in range(KILLS):
        live = {n["NodeID"] for n in alive_nodes()}
        placed = replica_nodes(app)
        assert len(placed) == 2
        off_head = [node for node in placed.values() if node in node_names and node in live]
        assert off_head, f"no replica off the head: {placed}"
        dead = off_head[0]
        victim = node_names[dead]

        def is_dead(node: str = dead) -> bool:
            return node not in {n["NodeID"] for n in alive_nodes()}

        def recovered(node: str = dead) -> bool:
            """The cluster knows the node is gone, both replicas run on live nodes and Serve
            calls the app RUNNING again."""
            live = {n["NodeID"] for n in alive_nodes()}
            nodes = replica_nodes(app)
            return (
                node not in live
                and len(nodes) == 2
                and set(nodes.values()) <= live
                and healthy(app, 2)
            )

        hedged_before = hedged_reads()
        run = kill_under_load(
            url, lambda d=dirs[victim]: stop_processes(d, hard=True), recovered, dead=is_dead
        )
        time.sleep(15)  # Ray exports the hedged-read counter every few seconds
        hedged = {read: n - hedged_before.get(read, 0.0) for read, n in hedged_reads().items()}
        record(
            test="node_kill",
            round=round_ + 1,
            victim=victim,
            warm_p99_ms=round(1000 * baseline_p99, 1),
            **run.figures(),
            hedged_reads=hedged,
        )
        assert len(run.during) == 300
        assert run.failed == [], [
            (o.status, o.degraded, o.error, round(o.at, 2)) for o in run.failed
        ]
        assert [o for o in run.after if o.failed] == []
        assert run.dead_at is not None, "the node was not declared dead while the load ran"
        slow = [o for o in run.in_flight if o.seconds > own_bound + DETECTION_S + SCHEDULING_S]
        assert slow == [], [(round(o.seconds, 2), o.placed_ms(), o.timings_ms) for o in slow]
        late = [
            o
            for o in run.after_detection()
            if o.seconds > baseline_p99 + DETECTION_S + SCHEDULING_S
        ]
        assert late == [], [(round(o.seconds, 2), o.placed_ms(), o.timings_ms) for o in late]


def hedged_reads() -> dict[str, float]:
    """The stack's hedged-read counter per read, summed over Ingress replicas and nodes."""
    total: dict[str, float] = {}
    for labels, value in scrape("rayweave_hedged_reads").items():
        read = dict(labels)["read"]
        total[read] = total.get(read, 0.0) + value
    return total
