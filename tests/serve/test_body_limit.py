"""`BodyLimit`: 413 before an app reads a body over the limit, declared or chunked."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

from fastapi.testclient import TestClient
from starlette.types import Message, Receive, Scope, Send

from rayweave.serve.body_limit import BodyLimit

LIMIT = 100


class EchoApp:
    """Reads the whole body and answers its length; remembers whether it ran."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert scope["type"] == "http"
        self.calls += 1
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": str(len(body)).encode()})


def _client() -> tuple[TestClient, EchoApp]:
    app = EchoApp()
    return TestClient(BodyLimit(app, max_bytes=LIMIT)), app


def _chunks(body: bytes, size: int = 30) -> Iterator[bytes]:
    for i in range(0, len(body), size):
        yield body[i : i + size]


class TestDeclaredLength:
    def test_over_the_limit_is_413_without_calling_the_app(self) -> None:
        client, app = _client()
        resp = client.post("/", content=b"x" * (LIMIT + 1))
        assert resp.status_code == 413
        assert resp.json() == {
            "error": "PayloadTooLarge",
            "detail": f"request body exceeds {LIMIT} bytes",
        }
        assert app.calls == 0

    def test_at_the_limit_passes(self) -> None:
        client, app = _client()
        resp = client.post("/", content=b"x" * LIMIT)
        assert resp.status_code == 200
        assert resp.text == str(LIMIT)
        assert app.calls == 1

    def test_declared_length_is_checked_for_any_method(self) -> None:
        client, app = _client()
        resp = client.request("DELETE", "/", content=b"x" * (LIMIT + 1))
        assert resp.status_code == 413
        assert app.calls == 0


class TestChunkedBody:
    def test_over_the_limit_is_413_without_calling_the_app(self) -> None:
        client, app = _client()
        resp = client.post("/", content=_chunks(b"x" * (LIMIT + 1)))
        assert resp.status_code == 413
        assert "exceeds" in resp.json()["detail"]
        assert app.calls == 0

    def test_under_the_limit_is_replayed_whole(self) -> None:
        client, app = _client()
        for method in ("POST", "PUT", "PATCH"):
            resp = client.request(method, "/", content=_chunks(b"y" * LIMIT, size=7))
            assert resp.status_code == 200, method
            assert resp.text == str(LIMIT)
        assert app.calls == 3


def _run(middleware: BodyLimit, scope: Scope, incoming: list[Message]) -> list[Message]:
    """Drive the middleware directly; returns what the app received."""
    queue = list(incoming)

    async def receive() -> Message:
        return queue.pop(0)

    async def send(message: Message) -> None:
        pass

    asyncio.run(middleware(scope, receive, send))
    return queue


class TestDirect:
    def _scope(
        self, method: str = "POST", headers: list[tuple[bytes, bytes]] | None = None
    ) -> Scope:
        return {"type": "http", "method": method, "headers": headers or [], "path": "/"}

    def test_disconnect_while_buffering_reaches_the_app(self) -> None:
        seen: list[Message] = []

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            seen.append(await receive())
            seen.append(await receive())
            seen.append(await receive())  # past the replay: the real receive

        incoming: list[Message] = [
            {"type": "http.request", "body": b"ab", "more_body": True},
            {"type": "http.disconnect"},
            {"type": "http.disconnect"},
        ]
        _run(BodyLimit(app, max_bytes=LIMIT), self._scope(), incoming)
        assert [m["type"] for m in seen] == ["http.request", "http.disconnect", "http.disconnect"]
        assert seen[0]["body"] == b"ab"

    def test_get_without_length_is_not_buffered(self) -> None:
        calls: list[str] = []

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            calls.append(scope["method"])

        incoming: list[Message] = [{"type": "http.request", "body": b"", "more_body": False}]
        left = _run(BodyLimit(app, max_bytes=LIMIT), self._scope("GET"), incoming)
        assert calls == ["GET"]
        assert len(left) == 1  # nothing was read on the app's behalf

    def test_non_numeric_length_is_left_to_the_server(self) -> None:
        calls: list[str] = []

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            calls.append("app")

        scope = self._scope(headers=[(b"content-length", b"lots")])
        left = _run(BodyLimit(app, max_bytes=LIMIT), scope, [{"type": "http.request"}])
        assert calls == ["app"]
        assert len(left) == 1

    def test_other_scopes_pass_through(self) -> None:
        seen: list[str] = []

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            seen.append(scope["type"])

        _run(BodyLimit(app, max_bytes=1), {"type": "lifespan"}, [])
        _run(BodyLimit(app, max_bytes=1), {"type": "websocket", "headers": []}, [])
        assert seen == ["lifespan", "websocket"]
