"""Serving under faults, over real HTTP on 127.0.0.1 with a bounded load.

- one of two VectorRetriever replicas is killed mid-load: under 1% of requests fail, none after
  the controller has replaced it;
- the graph server is stopped: every query is still answered, the graph lists from the
  retriever's in-memory projection (none degraded); once it is back, answers stay whole;
- the web retriever's endpoint hangs (and its own timeout is far longer than the deadline):
  responses still arrive within the deadline plus a small margin.

A request "fails" when it is not a 200, or when the vector retriever is missing from it (an
empty answer is a failure to the user even if it is well-formed).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest
import yaml
from tests_support import SAMPLE_CORPUS, http_server, reply_json

from rayweave.cluster.settings import Settings

from .figures import record
from .serve_load import drive, healthy, kill_under_load, p99, vector_replicas

pytestmark = [pytest.mark.reliability, pytest.mark.integration, pytest.mark.timeout(1800)]

DEADLINE_MS = 2000
# A 2-core machine running Ray, Serve, the graph server and the load generator: scheduling
# jitter on top of the deadline.
MARGIN_S = 1.5


class HangingSearch(BaseHTTPRequestHandler):
    """A SearxNG-shaped endpoint that answers at once, or hangs while `hang` is set."""

    hang = threading.Event()
    released = threading.Event()

    def do_GET(self) -> None:
        if self.hang.is_set():
            self.released.wait(timeout=120)
        with contextlib.suppress(OSError):  # the retriever gave up and closed the connection
            reply_json(self, b'{"results": []}')

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def web_endpoint() -> Iterator[str]:
    with http_server(HangingSearch) as server:
        yield f"http://127.0.0.1:{server.server_port}/search"
        HangingSearch.released.set()


@pytest.fixture(scope="module")
def fault_app(
    ray_stack: Settings, graph_connection: object, web_endpoint: str, tmp_path_factory
) -> Iterator[tuple[str, Settings]]:  # type: ignore[no-untyped-def]
    """The sample corpus served with two fixed VectorRetriever replicas and a web retriever
    whose timeout (30 s) is far beyond the request deadline."""
    from rayweave.ingest.pipeline import run_ingest
    from rayweave.serve.app import DEFAULT_SERVE_CONFIG, deploy, shutdown

    config = yaml.safe_load(DEFAULT_SERVE_CONFIG.read_text())
    for deployment in config["applications"][0]["deployments"]:
        if deployment["name"] == "VectorRetriever":
            deployment.pop("autoscaling_config", None)
            deployment["num_replicas"] = 2
    config_path = tmp_path_factory.mktemp("faults") / "serve.yaml"
    config_path.write_text(yaml.safe_dump(config))
    base = ray_stack.model_dump()
    settings = Settings(
        **{
            **base,
            "qdrant": {**base["qdrant"], "collection": "sample"},
            "serve": {
                **base["serve"],
                # The fault figures are the composed graph's: a retriever replica dies, not the
                # whole pipeline (in the fused layout a killed replica takes its requests along).
                "layout": "composed",
                "serve_config": config_path,
                "deadline_ms": DEADLINE_MS,
                # These faults measure what the pipeline does while a dependency is gone (the
                # projection serving without its graph server); Serve replacing a replica whose
                # dependency stays down is tests/serve/test_health.py's, so health checks here
                # come slowly enough never to fire within one test.
                "health_check_period_s": 60.0,
                "retrieval": {
                    **base["serve"]["retrieval"],
                    "web_provider": "searxng",
                    "web_url": web_endpoint,
                    "web_timeout_s": 30.0,
                },
            },
        }
    )
    run_ingest(settings, [SAMPLE_CORPUS], collection="sample")
    shutdown(settings)  # another module's app holds the same name and route
    url = deploy(settings)
    try:
        yield url, settings
    finally:
        shutdown(settings)


def test_killing_a_vector_replica_under_load(fault_app: tuple[str, Settings]) -> None:
    import ray

    url, settings = fault_app
    app = settings.serve.app_name
    drive(url, 8, "hybrid")  # warm every replica's models
    assert len(vector_replicas(app)) == 2

    def kill() -> None:
        name, namespace = vector_replicas(app)[0]
        ray.kill(ray.get_actor(name, namespace=namespace), no_restart=True)

    run = kill_under_load(url, kill, lambda: healthy(app, 2))
    assert len(run.during) == 300
    assert [o for o in run.after if o.failed] == []
    assert len(run.failed) / len(run.during) < 0.01, [
        (o.status, o.degraded, o.error, round(o.at, 2)) for o in run.failed
    ]
    record(test="replica_kill", **run.figures())


def test_graph_server_stopped_queries_still_walk_the_projection(
    fault_app: tuple[str, Settings],
) -> None:
    """The graph retriever walks its in-memory projection: a stopped graph server costs
    freshness (the projection cannot refresh), not answers; nothing is degraded."""
    from rayweave.cluster.services.graph_server import GraphServer, resolve_graph_connection

    url, settings = fault_app
    server = GraphServer.from_settings(settings)
    assert server.stop()
    try:
        during = drive(url, 40, "hybrid+graph")
    finally:
        resolve_graph_connection(settings)  # the session's graph server comes back
    answered = [(o.status, o.results, o.error, round(o.at, 2)) for o in during]
    assert all(o.status == 200 and o.results > 0 for o in during), answered
    graph_lists = ("graph", "graph-expand")
    assert not any(g in o.degraded for o in during for g in graph_lists), [
        o.degraded for o in during
    ]
    assert all("vector" not in o.degraded for o in during), [o.degraded for o in during]

    # Back: still whole, and the projection's refresh thread reconnects by itself.
    again = drive(url, 4, "hybrid+graph")
    assert all(o.status == 200 and "graph" not in o.degraded for o in again), [
        (o.status, o.degraded, o.error, o.timings_ms) for o in again
    ]
    record(
        test="graph_server_stopped",
        requests=len(during),
        failed=sum(o.failed for o in during),
        degraded_graph=sum("graph" in o.degraded for o in during),
        p99_ms=round(1000 * p99([o.seconds for o in during]), 1),
    )


def test_a_hanging_web_retriever_is_cut_at_the_deadline(fault_app: tuple[str, Settings]) -> None:
    url, _ = fault_app
    HangingSearch.hang.set()
    try:
        during = drive(url, 20, "hybrid+graph")
    finally:
        HangingSearch.hang.clear()
    slowest = max(o.seconds for o in during)
    assert all(o.status == 200 and o.results > 0 for o in during)
    assert all("web" in o.degraded for o in during)
    assert slowest <= DEADLINE_MS / 1000 + MARGIN_S, slowest
    record(
        test="web_retriever_hangs",
        requests=len(during),
        failed=sum(o.failed for o in during),
        deadline_ms=DEADLINE_MS,
        p99_ms=round(1000 * p99([o.seconds for o in during]), 1),
        max_ms=round(1000 * slowest, 1),
    )
