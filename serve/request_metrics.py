"""Request count and latency per route template and status, as pure ASGI middleware; every
response carries the replica's entry and exit times (`ENTRY_HEADER`, `EXIT_HEADER`: Unix
seconds), so that a slow request's wait can be placed before the replica (proxy, routing), in it,
or after it (the response path)."""

from __future__ import annotations

import time
from typing import Protocol

from starlette.types import ASGIApp, Message, Receive, Scope, Send

ENTRY_HEADER = "x-rayweave-entry"
EXIT_HEADER = "x-rayweave-exit"


class RequestRecorder(Protocol):
    def request(self, *, route: str, status: int, seconds: float) -> None: ...


class RequestMetrics:
    """Records every HTTP request once it ends: its route template (read from the scope, where
    the router leaves it; 'unmatched' otherwise), the status it was answered with (500 when the
    app raised before answering) and its duration.

    Pure ASGI rather than Starlette's `@app.middleware("http")`, which runs each request through
    an extra task and a re-streamed response (a bare FastAPI app on this machine: 0.6 ms of CPU
    per request with it, 0.2 with this or with none).
    """

    def __init__(self, app: ASGIApp, recorder: RequestRecorder) -> None:
        self.app = app
        self.recorder = recorder

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        entry = f"{time.time():.6f}".encode()
        status = 500

        async def answer(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                stamps = [
                    (ENTRY_HEADER.encode(), entry),
                    (EXIT_HEADER.encode(), f"{time.time():.6f}".encode()),
                ]
                message = {**message, "headers": [*message.get("headers", ()), *stamps]}
            await send(message)

        try:
            await self.app(scope, receive, answer)
        finally:
            route = getattr(scope.get("route"), "path", "unmatched")
            self.recorder.request(route=route, status=status, seconds=time.perf_counter() - started)
