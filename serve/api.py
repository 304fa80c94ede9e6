"""The HTTP API as a plain FastAPI factory: Ray Serve's ingress builds it on each replica, and
tests can build it around in-process components.

Cross-cutting rules live here, once: body-size limit (413), API-key/bearer auth when keys are
configured (401, checked before any work), per-key rate limit (429, shared by every replica
when deployed: `serve/rate_limit.py`), CORS only when origins are
configured, metrics through Ray's metrics API (`cluster/telemetry.py`: exported, with Serve's own,
by every node's metrics agent, so there is no per-replica `/metrics` route), and the error mapping
of `serve/errors.py`.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Query, Request, Security
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rayweave.cluster import __version__
from rayweave.cluster.errors import AuthError
from rayweave.cluster.settings import ServeSettings
from rayweave.cluster.telemetry import api_metrics
from rayweave.serve.errors import error_body, install_error_handlers
from rayweave.serve.rate_limit import LocalRateLimiter, RateLimiter
from rayweave.serve.schemas import AnswerResponse, ResultItem, SearchRequest, SearchResponse
from rayweave.serve.service import SearchService

STATIC = Path(__file__).parent / "static"
_KEY_DOC = "One of `serve.api_keys`, as `X-API-Key: KEY` or `Authorization: Bearer KEY`."
# FastAPI's security schemes put the key into the OpenAPI document (the /docs "Authorize" button,
# generated clients). auto_error=False leaves the 401 to `create_api`'s check, with one message
# for both headers; without configured keys no route declares them, as none requires them.
API_KEY_HEADER = APIKeyHeader(
    name="X-API-Key", scheme_name="ApiKey", auto_error=False, description=_KEY_DOC
)
BEARER = HTTPBearer(scheme_name="Bearer", auto_error=False, description=_KEY_DOC)


class MessageRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: str = Field(default="user", pattern="^(user|assistant|system)$")
    content: str
    user_id: str | None = Field(default=None, max_length=128)
    document_ids: list[str] = Field(default_factory=list, max_length=100)


class MessageResponse(BaseModel):
    id: str
    conversation_id: str


class DocumentResponse(BaseModel):
    doc_id: str
    chunks: list[ResultItem]


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


def create_api(
    service: SearchService,
    settings: ServeSettings,
    *,
    health: Callable[[], dict[str, Any]] | None = None,
    limiter: RateLimiter | None = None,
) -> FastAPI:
    """`limiter` counts requests per key (default: in this process, when a rate is configured);
    replicas of a deployed app pass one shared by all of them."""
    app = FastAPI(
        title="rayweave",
        version=__version__,
        description="Hybrid dense+sparse+graph retrieval over technical documentation and code.",
    )
    install_error_handlers(app)
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    if settings.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["*"],
        )

    metrics = api_metrics()

    @app.middleware("http")
    async def _metrics(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        started = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        path = getattr(route, "path", "unmatched")
        metrics.request(
            route=path, status=response.status_code, seconds=time.perf_counter() - started
        )
        return response

    keys = [k.get_secret_value().encode() for k in settings.api_keys]
    if limiter is None and settings.rate_limit_per_minute:
        limiter = LocalRateLimiter(settings.rate_limit_per_minute)

    async def admit(request: Request, supplied: str | None) -> str:
        """Returns a stable, non-secret key id used for rate limiting."""
        if keys and (
            not supplied or not any(hmac.compare_digest(supplied.encode(), k) for k in keys)
        ):
            raise AuthError("missing or invalid API key (send X-API-Key or Authorization: Bearer)")
        ident = supplied or (request.client.host if request.client else "anonymous")
        key_id = hashlib.sha256(ident.encode()).hexdigest()[:16]
        if limiter is not None:
            await limiter.check(key_id)
        return key_id

    def supplied_key(
        header_key: str | None, credentials: HTTPAuthorizationCredentials | None
    ) -> str | None:
        return (
            header_key if header_key is not None or credentials is None else credentials.credentials
        )

    async def authorize_key(
        request: Request,
        header_key: Annotated[str | None, Security(API_KEY_HEADER)],
        credentials: Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)],
    ) -> str:
        return await admit(request, supplied_key(header_key, credentials))

    async def authorize_open(request: Request) -> str:
        # Keys still name rate-limit buckets when sent, as with keys configured.
        return await admit(
            request, supplied_key(await API_KEY_HEADER(request), await BEARER(request))
        )

    authorize = authorize_key if keys else authorize_open
    guarded = [Depends(authorize)]

    @app.post("/v1/search", response_model=SearchResponse, dependencies=guarded)
    async def search(body: SearchRequest) -> SearchResponse:
        result = await service.search(body)
        metrics.search(timings_ms=result.timings_ms, degraded=result.degraded)
        return result

    @app.post("/v1/answer", response_model=AnswerResponse, dependencies=guarded)
    async def answer(body: SearchRequest) -> AnswerResponse:
        result = await service.answer(body)
        metrics.search(timings_ms=result.timings_ms, degraded=result.degraded)
        return result

    @app.post(
        "/v1/conversations/{conversation_id}/messages",
        response_model=MessageResponse,
        dependencies=guarded,
    )
    async def add_message(conversation_id: str, body: MessageRequest) -> MessageResponse:
        message_id = await service.add_message(
            conversation_id,
            role=body.role,
            content=body.content,
            user_id=body.user_id,
            document_ids=body.document_ids,
        )
        return MessageResponse(id=message_id, conversation_id=conversation_id)

    @app.get("/v1/documents/{doc_id}", response_model=DocumentResponse, dependencies=guarded)
    async def document(doc_id: str) -> DocumentResponse:
        return DocumentResponse(doc_id=doc_id, chunks=await service.document(doc_id))

    @app.get("/v1/graph/neighbourhood", dependencies=guarded)
    async def neighbourhood(
        ids: Annotated[list[str], Query(description="Chunk, document or entity ids.")],
        depth: Annotated[int, Query(description="Hops from the given nodes (1-3).")] = 1,
    ) -> dict[str, Any]:
        return await service.neighbourhood(ids, depth)

    @app.get("/healthz")
    async def healthz() -> dict[str, Any]:
        return {"status": "ok", "version": __version__, **(health() if health else {})}

    if (STATIC / "index.html").is_file():

        @app.get("/", include_in_schema=False)
        async def index() -> FileResponse:
            return FileResponse(STATIC / "index.html")

    return app
