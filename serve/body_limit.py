"""Request body size limit as pure ASGI middleware."""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rayweave.serve.errors import error_body


class BodyLimit:
    """413 before the app reads a body over `max_bytes` (pure ASGI middleware).

    A declared Content-Length is checked at once; a chunked body is read here up to the limit
    and replayed to the app through its own `receive`, so nothing parses a body past the limit.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._too_big(scope, receive, send)
            return
        if scope["method"] not in ("POST", "PUT", "PATCH") or declared is not None:
            await self.app(scope, receive, send)
            return
        messages: list[Message] = []
        size = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break  # the client went away; the app sees the disconnect
            size += len(message.get("body", b""))
            if size > self.max_bytes:
                await self._too_big(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        buffered = iter(messages)

        async def replay() -> Message:
            return next(buffered, None) or await receive()

        await self.app(scope, replay, send)

    async def _too_big(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = JSONResponse(
            error_body("PayloadTooLarge", f"request body exceeds {self.max_bytes} bytes"),
            status_code=413,
        )
        await response(scope, receive, send)
