"""Web search as a retriever: SearxNG (JSON API), Tavily or Brave, chosen by configuration.

Off by default: a retrieval cluster should not send users' questions to a third party unless
asked to. Web hits are external (not in the vector store), so they skip hydration and carry their
URL as both id source and `source`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from rayweave.cluster.errors import ConfigError, ServiceError
from rayweave.cluster.settings import RetrievalSettings, Settings
from rayweave.cluster.types import Hit, Level, stable_id
from rayweave.serve.search import RankedLists, RetrievalQuery

EXTERNAL = "external"

_DEFAULT_URLS = {
    "tavily": "https://api.tavily.com/search",
    "brave": "https://api.search.brave.com/res/v1/web/search",
}


def _hit(url: str, title: str, text: str, rank: int, score: float | None = None) -> Hit:
    return Hit(
        id=f"web:{stable_id(url)}",
        doc_id=url,
        text=text,
        score=score if score is not None else 1.0 / (1 + rank),
        level=Level.SECTION,
        source=url,
        title=title,
        retrievers=("web",),
        metadata={EXTERNAL: True},
    )


def parse_results(provider: str, body: Mapping[str, Any], limit: int) -> list[Hit]:
    """Provider JSON -> hits (pure; tested on recorded shapes)."""
    if provider == "searxng":
        items = body.get("results", [])
        return [
            _hit(r["url"], r.get("title", ""), r.get("content", ""), i)
            for i, r in enumerate(items[:limit])
            if r.get("url")
        ]
    if provider == "tavily":
        items = body.get("results", [])
        return [
            _hit(r["url"], r.get("title", ""), r.get("content", ""), i, r.get("score"))
            for i, r in enumerate(items[:limit])
            if r.get("url")
        ]
    if provider == "brave":
        items = body.get("web", {}).get("results", [])
        return [
            _hit(r["url"], r.get("title", ""), r.get("description", ""), i)
            for i, r in enumerate(items[:limit])
            if r.get("url")
        ]
    raise ConfigError(f"unknown web provider {provider!r}; valid: 'searxng', 'tavily', 'brave'")


class WebSearch:
    def __init__(
        self, settings: RetrievalSettings, *, client: httpx.AsyncClient | None = None
    ) -> None:
        if settings.web_provider == "off":
            raise ConfigError("web retrieval is off (serve.retrieval.web_provider='off')")
        url = settings.web_url or _DEFAULT_URLS.get(settings.web_provider)
        if not url:
            raise ConfigError(
                f"serve.retrieval.web_url is required for provider {settings.web_provider!r}"
            )
        self.provider = settings.web_provider
        self.url = url
        self.api_key = settings.web_api_key.get_secret_value() if settings.web_api_key else None
        self.client = client or httpx.AsyncClient(timeout=settings.web_timeout_s)

    async def retrieve(self, query: RetrievalQuery) -> RankedLists:
        limit = query.plan.candidates
        try:
            if self.provider == "searxng":
                resp = await self.client.get(
                    self.url.rstrip("/") + "/search", params={"q": query.text, "format": "json"}
                )
            elif self.provider == "tavily":
                resp = await self.client.post(
                    self.url,
                    json={
                        "api_key": self.api_key,
                        "query": query.text,
                        "max_results": min(limit, 20),
                    },
                )
            else:
                headers = {"X-Subscription-Token": self.api_key or "", "Accept": "application/json"}
                resp = await self.client.get(
                    self.url, params={"q": query.text, "count": min(limit, 20)}, headers=headers
                )
            resp.raise_for_status()
        except httpx.HTTPError as exc:
            raise ServiceError(
                f"web search ({self.provider}) failed: {type(exc).__name__}"
            ) from exc
        return {"web": parse_results(self.provider, resp.json(), limit)}


def from_settings(settings: Settings) -> WebSearch | None:
    """The `web` entry of the retriever registry (`serve/retrievers.py`): None while
    `serve.retrieval.web_provider` is off."""
    retrieval = settings.serve.retrieval
    return WebSearch(retrieval) if retrieval.web_provider != "off" else None
