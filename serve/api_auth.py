"""API-key check and rate limiting of the HTTP routes, as one FastAPI dependency."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Request, Security
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from rayweave.cluster.errors import AuthError
from rayweave.cluster.settings import ServeSettings
from rayweave.serve.rate_limit import LocalRateLimiter, RateLimiter

_KEY_DOC = "One of `serve.api_keys`, as `X-API-Key: KEY` or `Authorization: Bearer KEY`."
# FastAPI's security schemes put the key into the OpenAPI document (the /docs "Authorize" button,
# generated clients). auto_error=False leaves the 401 to `authorizer`'s check, with one message
# for both headers; without configured keys no route declares them, as none requires them.
API_KEY_HEADER = APIKeyHeader(
    name="X-API-Key", scheme_name="ApiKey", auto_error=False, description=_KEY_DOC
)
BEARER = HTTPBearer(scheme_name="Bearer", auto_error=False, description=_KEY_DOC)


def authorizer(
    settings: ServeSettings, limiter: RateLimiter | None
) -> Callable[..., Awaitable[str]]:
    """The dependency that admits a request (or raises `AuthError`) and returns its key id.

    `limiter` counts requests per key (default: in this process, when a rate is configured)."""
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

    async def authorize_key(
        request: Request,
        header_key: Annotated[str | None, Security(API_KEY_HEADER)],
        credentials: Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)],
    ) -> str:
        return await admit(request, _supplied_key(header_key, credentials))

    async def authorize_open(request: Request) -> str:
        # Keys still name rate-limit buckets when sent, as with keys configured.
        return await admit(
            request, _supplied_key(await API_KEY_HEADER(request), await BEARER(request))
        )

    return authorize_key if keys else authorize_open


def _supplied_key(
    header_key: str | None, credentials: HTTPAuthorizationCredentials | None
) -> str | None:
    return header_key if header_key is not None or credentials is None else credentials.credentials
