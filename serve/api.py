"""The HTTP API as a plain FastAPI factory: Ray Serve's ingress builds it on each replica, and
tests can build it around in-process components.

Cross-cutting rules live here, once: body-size limit (413), API-key/bearer auth when keys are
configured (401, checked before any work), per-key rate limit (429, shared by every replica
when deployed: `serve/rate_limit.py`), CORS only when origins are
configured, metrics through Ray's metrics API (`cluster/services/telemetry.py`: exported, with
Serve's own, by every node's metrics agent, so there is no per-replica `/metrics` route), and
the error mapping of `serve/errors.py`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Query
from fastapi.responses import FileResponse, JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from rayweave.cluster import __version__
from rayweave.cluster.services.telemetry import ApiMetrics, api_metrics
from rayweave.cluster.settings import ServeSettings
from rayweave.serve.api_auth import authorizer
from rayweave.serve.body_limit import BodyLimit
from rayweave.serve.conversation import ConversationMessage
from rayweave.serve.errors import install_error_handlers
from rayweave.serve.rate_limit import RateLimiter
from rayweave.serve.request_metrics import RequestMetrics
from rayweave.serve.schemas import AnswerResponse, ResultItem, SearchRequest, SearchResponse
from rayweave.serve.service import SearchService

STATIC = Path(__file__).parent / "static"


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


def create_api(
    service: SearchService,
    settings: ServeSettings,
    *,
    health: Callable[[], Awaitable[tuple[int, dict[str, Any]]]] | None = None,
    limiter: RateLimiter | None = None,
) -> FastAPI:
    """`limiter` counts requests per key (default: in this process, when a rate is configured);
    replicas of a deployed app pass one shared by all of them.

    `health` is readiness (`/healthz`): the status code and body that report each dependency's
    state (`serve/health.py`: 503 when a required one is down). `/livez` is liveness: no
    dependency, only that the replica answers."""
    app = FastAPI(
        title="rayweave",
        version=__version__,
        description="Hybrid dense+sparse+graph retrieval over technical documentation and code.",
    )
    install_error_handlers(app)
    metrics = api_metrics()
    _install_middleware(app, settings, metrics)
    guarded = [Depends(authorizer(settings, limiter))]

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
        message = ConversationMessage(
            role=body.role,
            content=body.content,
            user_id=body.user_id,
            document_ids=tuple(body.document_ids),
        )
        message_id = await service.add_message(conversation_id, message)
        return MessageResponse(id=message_id, conversation_id=conversation_id)

    @app.get("/v1/documents/{doc_id}", response_model=DocumentResponse, dependencies=guarded)
    async def document(doc_id: str) -> DocumentResponse:
        return DocumentResponse(doc_id=doc_id, chunks=await service.document(doc_id))

    @app.get("/v1/graph/neighbourhood", dependencies=guarded)
    async def neighbourhood(
        ids: Annotated[list[str], Query(description="Chunk, document or entity ids.")],
        depth: Annotated[int, Query(description="Hops from the given nodes (1-3).")] = 1,
    ) -> dict[str, Any]:
        view: dict[str, Any] = await service.neighbourhood(ids, depth)
        return view

    @app.get("/healthz")
    async def healthz() -> JSONResponse:
        code, body = await health() if health is not None else (200, {"status": "ok"})
        return JSONResponse({**body, "version": __version__}, status_code=code)

    @app.get("/livez")
    async def livez() -> dict[str, str]:
        return {"status": "ok", "version": __version__}

    if (STATIC / "index.html").is_file():

        @app.get("/", include_in_schema=False)
        async def index() -> FileResponse:
            return FileResponse(STATIC / "index.html")

    return app


def _install_middleware(app: FastAPI, settings: ServeSettings, metrics: ApiMetrics) -> None:
    """Body limit, CORS when origins are configured, and request metrics (outermost: added
    last)."""
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    if settings.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["*"],
        )

    app.add_middleware(RequestMetrics, recorder=metrics)
