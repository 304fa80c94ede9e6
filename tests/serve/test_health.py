"""Failures that speak, and health that means something.

- a retriever's failure is logged with its exception (the same one once per window) and counted;
- a search of a collection that does not exist answers 404 naming it and the fix, not an empty
  200 (the real embedded vector store's error);
- with the real embedded Bolt server stopped by its pid, `/healthz` answers 503 naming the graph,
  and the deployments' `check_health` raises; the vector store's states read ok and `missing`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests_support import with_collection

from rayweave.cluster.errors import ServiceError
from rayweave.cluster.settings import Settings
from rayweave.cluster.types import Hit
from rayweave.cluster.vectors.store import CollectionSpec, VectorQuery, VectorStore
from rayweave.serve.health import Health, graph_dependency, vector_dependency
from rayweave.serve.search import RetrievalQuery, SearchPipeline


class StoreRetriever:
    """A vector retriever that searches a real store with a fixed vector (no encoder)."""

    def __init__(self, store: VectorStore) -> None:
        self.store = store

    async def retrieve(self, query: RetrievalQuery) -> dict[str, list[Hit]]:
        points = await asyncio.to_thread(
            self.store.query, VectorQuery(mode="dense", dense=[1.0, 0.0, 0.0, 0.0], limit=5)
        )
        return {"dense": [Hit(id=p.id, doc_id="d", text="", score=p.score) for p in points]}

    async def hydrate(self, ids: list[str]) -> dict[str, Hit]:
        return {}


class Failing:
    async def retrieve(self, query: RetrievalQuery) -> dict[str, list[Hit]]:
        raise RuntimeError("web endpoint refused the connection")


def pipeline(vector: Any, *, web: Any = None, hook: Any = None) -> SearchPipeline:
    from rayweave.serve.classifier import RuleClassifier
    from rayweave.serve.fusion import FusionRanker
    from rayweave.serve.planning import planner

    retrieval = Settings().serve.retrieval.model_copy(update={"web_provider": "searxng"})
    return SearchPipeline(
        classifier=RuleClassifier(),
        planner=planner(retrieval),
        vector=vector,
        hydrator=vector,
        fuser=FusionRanker(retrieval),
        retrievers={"web": web} if web is not None else None,
        on_retriever_failure=hook,
    )


def edge_store(root: Path, name: str) -> VectorStore:
    from rayweave.cluster.settings import QdrantSettings
    from rayweave.cluster.vectors.factory import open_vector_store

    return open_vector_store(QdrantSettings(backend="edge"), path=root, collection=name)


def test_a_failed_retriever_is_logged_once_per_window_and_counted(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    from rayweave.serve.schemas import Profile

    store = edge_store(tmp_path, "present")
    store.ensure_collection(CollectionSpec(name="present", dense_dim=4, sparse=False))
    counted: list[tuple[str, str]] = []
    search = pipeline(
        StoreRetriever(store),
        web=Failing(),
        hook=lambda name, exc: counted.append((name, type(exc).__name__)),
    )
    # With a web provider set, the hybrid+graph profile runs the web retriever (no graph here).
    with caplog.at_level(logging.WARNING, logger="rayweave.serve.search"):
        for _ in range(3):
            outcome = asyncio.run(
                search.search("how do leases renew", top_k=3, profile=Profile.GRAPH)
            )
            assert "web" in outcome.degraded
    store.close()
    assert counted == [("web", "RuntimeError")] * 3
    lines = [r for r in caplog.records if "retriever web failed" in r.getMessage()]
    assert len(lines) == 1, [r.getMessage() for r in caplog.records]
    assert "web endpoint refused the connection" in lines[0].getMessage()
    assert lines[0].exc_info is not None


def test_a_search_of_a_missing_collection_answers_404_naming_it_and_the_fix(
    tmp_path: Path,
) -> None:
    from rayweave.serve.api import create_api
    from rayweave.serve.service import SearchService

    store = edge_store(tmp_path, "never-ingested")
    retriever = StoreRetriever(store)
    settings = Settings().serve
    service = SearchService(settings=settings, pipeline=pipeline(retriever), documents=retriever)  # type: ignore[arg-type]
    client = TestClient(create_api(service, settings))
    response = client.post("/v1/search", json={"query": "how do leases renew"})
    store.close()
    assert response.status_code == 404, response.text
    body = response.json()
    assert body["error"] == "NotFoundError"
    assert "never-ingested" in body["detail"]
    assert "rayweave ingest PATH" in body["detail"]


def _stop_by_pid(settings: Settings) -> None:
    from rayweave.cluster.services.graph_server import GraphServer
    from rayweave.cluster.services.runtime import process_exists

    pid = GraphServer.from_settings(settings).status().pid
    assert pid is not None
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 60
    while process_exists(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not process_exists(pid)


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_a_stopped_graph_server_is_named_by_healthz_and_fails_check_health(
    stack_settings: Settings, graph_connection: object, tmp_path: Path
) -> None:
    from rayweave.cluster.services.graph_server import resolve_graph_connection
    from rayweave.graph.store import open_graph_store
    from rayweave.serve.api import create_api
    from rayweave.serve.deployments import GraphRetrieverDeployment
    from rayweave.serve.service import SearchService

    graph = open_graph_store(stack_settings, namespace="health")
    vector = edge_store(tmp_path, "present")
    vector.ensure_collection(CollectionSpec(name="present", dense_dim=4, sparse=False))
    health = Health(
        [vector_dependency(vector), graph_dependency(graph)], timeout_s=5.0, where="test replica"
    )
    # A GraphRetriever replica, built as Serve builds it (its projection loads on first use).
    replica = GraphRetrieverDeployment.func_or_class(with_collection(stack_settings, "health"))

    settings = stack_settings.serve
    retriever = StoreRetriever(vector)
    service = SearchService(settings=settings, pipeline=pipeline(retriever), documents=retriever)  # type: ignore[arg-type]
    client = TestClient(create_api(service, settings, health=health.readiness))
    try:
        ready = client.get("/healthz")
        assert ready.status_code == 200, ready.text
        assert ready.json()["status"] == "ok"
        assert {d["state"] for d in ready.json()["dependencies"].values()} == {"ok"}
        asyncio.run(replica.check_health())

        _stop_by_pid(stack_settings)
        started = time.monotonic()
        down = client.get("/healthz")
        assert time.monotonic() - started < 15
        assert down.status_code == 503, down.text
        body = down.json()
        assert body["down"] == ["graph"]
        assert body["dependencies"]["graph"]["state"] == "down"
        assert body["dependencies"]["vector"]["state"] == "ok"
        with pytest.raises(ServiceError, match="graph is down"):
            asyncio.run(replica.check_health())
        assert client.get("/livez").status_code == 200  # liveness asks no dependency
    finally:
        resolve_graph_connection(stack_settings)  # the session's graph server comes back
    assert client.get("/healthz").status_code == 200
    graph.close()
    replica.impl.close()

    # A collection that was never ingested: reported, with the fix, but not a 503.
    absent = edge_store(tmp_path, "absent")
    states = asyncio.run(Health([vector_dependency(absent)], timeout_s=5.0, where="t").states())
    absent.close()
    vector.close()
    assert states[0].state == "missing"
    assert "rayweave ingest PATH" in states[0].detail
