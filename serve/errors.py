"""The one mapping from rayweave's exception tree to HTTP status codes."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from rayweave.cluster.errors import (
    AuthError,
    ConfigError,
    InputError,
    NotFoundError,
    RateLimitError,
    RayweaveError,
    ServiceError,
    StoreError,
)

log = logging.getLogger(__name__)

STATUS: tuple[tuple[type[RayweaveError], int], ...] = (
    (AuthError, 401),
    (RateLimitError, 429),
    (NotFoundError, 404),
    (InputError, 400),
    (StoreError, 503),
    (ServiceError, 503),
    (ConfigError, 500),
    (RayweaveError, 500),
)


def status_for(exc: RayweaveError) -> int:
    for cls, code in STATUS:
        if isinstance(exc, cls):
            return code
    return 500


def error_body(kind: str, detail: str) -> dict[str, str]:
    return {"error": kind, "detail": detail}


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RayweaveError)
    async def _rayweave(request: Request, exc: RayweaveError) -> JSONResponse:
        code = status_for(exc)
        if code >= 500:
            log.warning("request %s failed: %s", request.url.path, exc)
        headers = (
            {"Retry-After": str(int(exc.retry_after_s + 0.999))}
            if isinstance(exc, RateLimitError)
            else None
        )
        return JSONResponse(
            error_body(type(exc).__name__, str(exc)), status_code=code, headers=headers
        )

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        parts = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
            parts.append(f"{where}: {err.get('msg')}" if where else str(err.get("msg")))
        return JSONResponse(error_body("ValidationError", "; ".join(parts)), status_code=422)
