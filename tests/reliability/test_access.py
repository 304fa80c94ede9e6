"""Access control and limits on the HTTP API, secrets kept out of logs, loopback-only servers.

The API runs in-process over ASGI (the same `create_api` the Serve ingress serves) against the
real search service, vector store and graph server; `tests/serve/test_app.py` covers the same
validation over real HTTP through Ray Serve.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from fastapi.testclient import TestClient
from tests_support import SAMPLE_CORPUS

from rayweave.cluster.settings import Settings
from rayweave.graph.schema import NodeLabel
from rayweave.serve.local import LocalSearch

from .figures import record

pytestmark = [pytest.mark.reliability, pytest.mark.integration]

KEY_A, KEY_B = "key-a-3f9c1d2e7b", "key-b-8a6e0c4f1d"
RATE = 6


@pytest.fixture(scope="module")
def settings(ray_stack: Settings, graph_connection: object) -> Settings:
    return Settings(
        **{
            **ray_stack.model_dump(),
            "qdrant": {**ray_stack.qdrant.model_dump(), "collection": "access"},
            "serve": {
                **ray_stack.serve.model_dump(),
                "api_keys": (KEY_A, KEY_B),
                "rate_limit_per_minute": RATE,
            },
        }
    )


@pytest.fixture(scope="module")
def search(settings: Settings) -> Iterator[LocalSearch]:
    from rayweave.ingest.pipeline import run_ingest

    run_ingest(settings, [SAMPLE_CORPUS / "docs" / "concepts"], collection="access")
    local = LocalSearch(settings, collection="access")
    try:
        yield local
    finally:
        local.close()


@pytest.fixture(scope="module")
def client(search: LocalSearch, settings: Settings) -> Iterator[TestClient]:
    from rayweave.serve.api import create_api

    with TestClient(create_api(search.service, settings.serve)) as http:
        yield http


def messages_stored(settings: Settings) -> int:
    from rayweave.graph.store import open_graph_store

    graph = open_graph_store(settings, namespace="access")
    try:
        return graph.counts().node(NodeLabel.MESSAGE)
    finally:
        graph.close()


def test_requests_without_a_key_get_401_and_touch_nothing(
    client: TestClient, settings: Settings
) -> None:
    before = messages_stored(settings)
    sent = failed = 0
    for headers in ({}, {"X-API-Key": "wrong"}, {"Authorization": "Bearer wrong"}):
        for method, path, body in (
            ("POST", "/v1/search", {"query": "What is a lease?"}),
            ("POST", "/v1/conversations/c1/messages", {"role": "user", "content": "leases"}),
            ("GET", "/v1/graph/neighbourhood?ids=x", None),
        ):
            resp = client.request(method, path, json=body, headers=headers)
            sent += 1
            failed += resp.status_code == 401
            assert resp.status_code == 401, (path, headers, resp.text)
            assert "API key" in resp.json()["detail"]
    assert messages_stored(settings) == before
    assert client.get("/healthz").status_code == 200
    record(test="auth", requests_without_key=sent, rejected_401=failed, messages_written=0)


def test_both_key_headers_work_and_the_rate_limit_is_per_key(client: TestClient) -> None:
    ok = client.post("/v1/search", json={"query": "lease"}, headers={"X-API-Key": KEY_A})
    assert ok.status_code == 200, ok.text
    assert ok.json()["results"]
    bearer = client.post(
        "/v1/search", json={"query": "lease"}, headers={"Authorization": f"Bearer {KEY_B}"}
    )
    assert bearer.status_code == 200
    statuses = [
        client.post("/v1/search", json={"query": "lease"}, headers={"X-API-Key": KEY_A}).status_code
        for _ in range(RATE + 2)
    ]
    assert 429 in statuses
    assert statuses[: RATE - 1] == [200] * (RATE - 1)
    limited = client.post("/v1/search", json={"query": "lease"}, headers={"X-API-Key": KEY_A})
    assert limited.status_code == 429
    assert int(limited.headers["retry-after"]) >= 1
    # The other key has its own bucket.
    other = client.post("/v1/search", json={"query": "lease"}, headers={"X-API-Key": KEY_B})
    assert other.status_code == 200
    record(test="rate_limit", limit_per_minute=RATE, first_429_at=statuses.index(429) + 2)


def test_limits_and_no_cors_by_default(client: TestClient, settings: Settings) -> None:
    key = {"X-API-Key": KEY_B}
    too_big = client.post(
        "/v1/search",
        content=b'{"query": "' + b"x" * (settings.serve.max_body_bytes + 10) + b'"}',
        headers={**key, "Content-Type": "application/json"},
    )
    assert too_big.status_code == 413
    preflight = client.options(
        "/v1/search",
        headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
    )
    assert "access-control-allow-origin" not in preflight.headers
    simple = client.get("/healthz", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in simple.headers


def test_no_secrets_in_logs_and_servers_on_loopback(client: TestClient, settings: Settings) -> None:
    from rayweave.cluster.services.graph_server import GraphServer

    server = GraphServer.from_settings(settings)
    password = server.secret_path.read_text().strip()
    assert len(password) >= 16
    scanned = 0
    for path in Path(settings.home).rglob("*"):
        if not path.is_file() or path == server.secret_path or path.stat().st_size > 50 << 20:
            continue
        if path.suffix not in {".log", ".out", ".err", ".txt", ".json", ".jsonl", ""}:
            continue
        data = path.read_bytes()
        scanned += 1
        for secret in (password, KEY_A, KEY_B):
            assert secret.encode() not in data, f"secret found in {path}"

    status = server.status()
    assert status.running
    assert status.pid is not None
    listening = [
        c.laddr
        for c in psutil.Process(status.pid).net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN
    ]
    assert listening
    assert {a.ip for a in listening} <= {"127.0.0.1", "::ffff:127.0.0.1"}, listening
    assert settings.serve.host == "127.0.0.1"
    record(test="secrets_and_binding", log_files_scanned=scanned, graph_listen=str(listening))


def test_chunked_bodies_are_limited_before_parsing(client: TestClient, settings: Settings) -> None:
    """Without a Content-Length the body is counted as it arrives, then handed on whole."""
    key = {"X-API-Key": KEY_B, "Content-Type": "application/json"}
    limit = settings.serve.max_body_bytes

    def chunks(body: bytes) -> Iterator[bytes]:
        for i in range(0, len(body), 4096):
            yield body[i : i + 4096]

    big = b'{"query": "' + b"x" * (limit + 10) + b'"}'
    too_big = client.post("/v1/search", content=chunks(big), headers=key)
    assert too_big.status_code == 413
    assert "exceeds" in too_big.json()["detail"]
    small = client.post("/v1/search", content=chunks(b'{"query": "What is a lease?"}'), headers=key)
    assert small.status_code == 200, small.text
    assert small.json()["results"]


def test_openapi_declares_the_key_on_guarded_routes(
    client: TestClient, search: LocalSearch, settings: Settings
) -> None:
    from rayweave.serve.api import create_api

    doc = client.get("/openapi.json").json()
    schemes = doc["components"]["securitySchemes"]
    assert schemes["ApiKey"] == {
        "type": "apiKey",
        "in": "header",
        "name": "X-API-Key",
        "description": schemes["ApiKey"]["description"],
    }
    assert schemes["Bearer"]["type"] == "http"
    assert schemes["Bearer"]["scheme"] == "bearer"
    either = [{"ApiKey": []}, {"Bearer": []}]
    guarded = [
        ("post", "/v1/search"),
        ("post", "/v1/answer"),
        ("post", "/v1/conversations/{conversation_id}/messages"),
        ("get", "/v1/documents/{doc_id}"),
        ("get", "/v1/graph/neighbourhood"),
    ]
    for method, path in guarded:
        assert doc["paths"][path][method]["security"] == either, path
    assert "security" not in doc["paths"]["/healthz"]["get"]
    # Without keys nothing is required, and nothing is declared.
    open_settings = settings.serve.model_copy(update={"api_keys": ()})
    with TestClient(create_api(search.service, open_settings)) as http:
        open_doc = http.get("/openapi.json").json()
    assert "securitySchemes" not in open_doc.get("components", {})
    assert "security" not in open_doc["paths"]["/v1/search"]["post"]
