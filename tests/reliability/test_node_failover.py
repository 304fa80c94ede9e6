"""Serving when a node dies: two raylets join the session's head, the composed app places one of
its two VectorRetriever replicas off the head (`max_replicas_per_node: 1`, everything else pinned
to the head), and the node holding a replica is SIGKILLed under a bounded load on 127.0.0.1.

Under 1% of requests may fail; afterwards the app is whole again without a restart, with the
replacement replica on a live node, and answers every request.
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
from .serve_load import drive, healthy, kill_under_load

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.timeout(1800),
]

HEAD = {"node:__internal_head__": 0.001}


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
    with joined_nodes(ray_stack, ("serve_a", "serve_b")) as dirs:
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


def test_a_node_with_a_replica_dies_under_load(
    spread_app: tuple[str, Settings, dict[str, Path]],
) -> None:
    from ray import serve

    url, settings, dirs = spread_app
    app = settings.serve.app_name
    warm = drive(url, 16, "hybrid")
    assert [o for o in warm if o.failed] == []
    node_names = {
        n["NodeID"]: name for n in alive_nodes() for name in dirs if name in n["Resources"]
    }
    placed = replica_nodes(app)
    assert len(placed) == 2
    proxies = set(serve.status().proxies)
    assert len(proxies) == 1, proxies  # the head's alone
    assert not proxies & set(node_names), proxies
    off_head = [node_names[node] for node in placed.values() if node in node_names]
    assert off_head, f"no replica left the head: {placed}"
    victim = off_head[0]

    dead = next(node for node, name in node_names.items() if name == victim)

    def recovered() -> bool:
        """The cluster knows the node is gone, both replicas run on live nodes and Serve calls
        the app RUNNING again."""
        live = {n["NodeID"] for n in alive_nodes()}
        nodes = replica_nodes(app)
        return (
            dead not in live and len(nodes) == 2 and set(nodes.values()) <= live and healthy(app, 2)
        )

    hedged_before = hedged_reads()
    run = kill_under_load(url, lambda: stop_processes(dirs[victim], hard=True), recovered)
    assert len(run.during) == 300
    assert [o for o in run.after if o.failed] == []
    assert len(run.failed) / len(run.during) < 0.01, [
        (o.status, o.degraded, o.error, round(o.at, 2)) for o in run.failed
    ]
    # Reads sent twice (the Ingress's counter; Ray exports it every few seconds): a figure, not
    # a bound, since how many calls the dead replica held depends on where the load stood.
    time.sleep(15)
    hedged = {read: n - hedged_before.get(read, 0.0) for read, n in hedged_reads().items()}
    record(test="node_kill", **run.figures(), hedged_reads=hedged)


def hedged_reads() -> dict[str, float]:
    """The stack's hedged-read counter per read, summed over Ingress replicas and nodes."""
    total: dict[str, float] = {}
    for labels, value in scrape("rayweave_hedged_reads").items():
        read = dict(labels)["read"]
        total[read] = total.get(read, 0.0) + value
    return total
