"""HTTP client used by `rayweave query` (and usable from scripts)."""

from __future__ import annotations

from typing import Any

import httpx

from rayweave.cluster.errors import QueryError, ServiceError
from rayweave.cluster.settings import Settings


def search_over_http(
    settings: Settings,
    text: str,
    *,
    top_k: int | None = None,
    profile: str | None = None,
    url: str | None = None,
    timeout_s: float = 60.0,
    answer: bool = False,
) -> dict[str, Any]:
    """POST the query to `/v1/search` (or `/v1/answer` with `answer`) and return the JSON body."""
    base = (url or f"http://{settings.serve.host}:{settings.serve.port}").rstrip("/")
    body: dict[str, Any] = {"query": text, "include_context": False}
    if top_k is not None:
        body["top_k"] = top_k
    if profile is not None:
        body["profile"] = profile
    headers = {}
    if settings.serve.api_keys:
        headers["X-API-Key"] = settings.serve.api_keys[0].get_secret_value()
    try:
        endpoint = "answer" if answer else "search"
        resp = httpx.post(f"{base}/v1/{endpoint}", json=body, headers=headers, timeout=timeout_s)
    except httpx.ConnectError as exc:
        raise ServiceError(
            f"nothing answers on {base}: start the app with `rayweave serve`"
        ) from exc
    except httpx.HTTPError as exc:
        raise ServiceError(f"request to {base} failed: {exc}") from exc
    if resp.status_code in (400, 413, 422):
        raise QueryError(resp.json().get("detail", resp.text))
    if resp.status_code >= 400:
        raise ServiceError(f"{base} answered {resp.status_code}: {resp.text[:500]}")
    data: dict[str, Any] = resp.json()
    return data
