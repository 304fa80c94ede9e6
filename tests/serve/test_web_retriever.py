from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from tests_support import http_server, reply_json

from rayweave.cluster.errors import ConfigError, ServiceError
from rayweave.cluster.settings import RetrievalSettings
from rayweave.serve.schemas import ContentScope, Profile, QueryType
from rayweave.serve.search import RetrievalPlan, RetrievalQuery
from rayweave.serve.web_retriever import WebSearch, parse_results

RESULTS = {
    "results": [
        {"url": "https://example.org/a", "title": "A", "content": "about retries"},
        {"url": "https://example.org/b", "title": "B", "content": "about queues"},
    ]
}


class _Searx(BaseHTTPRequestHandler):
    delay = 0.0

    def do_GET(self) -> None:
        time.sleep(self.delay)
        if not self.path.startswith("/search?"):
            self.send_error(404)
            return
        with contextlib.suppress(BrokenPipeError):  # the client gave up (the timeout test)
            reply_json(self, json.dumps(RESULTS).encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def searx() -> Iterator[ThreadingHTTPServer]:
    with http_server(_Searx) as server:
        yield server


def query() -> RetrievalQuery:
    plan = RetrievalPlan(
        profile=Profile.GRAPH, query_type=QueryType.GENERAL, scope=ContentScope.DOCS, candidates=5
    )
    return RetrievalQuery(text="retries", plan=plan)


def test_searxng_over_real_http(searx: ThreadingHTTPServer) -> None:
    url = f"http://127.0.0.1:{searx.server_address[1]}"
    web = WebSearch(RetrievalSettings(web_provider="searxng", web_url=url))
    hits = asyncio.run(web.retrieve(query()))["web"]
    assert [h.source for h in hits] == ["https://example.org/a", "https://example.org/b"]
    assert hits[0].metadata["external"] is True
    assert hits[0].score > hits[1].score


def test_a_hanging_provider_fails_within_its_timeout(searx: ThreadingHTTPServer) -> None:
    _Searx.delay = 2.0
    try:
        url = f"http://127.0.0.1:{searx.server_address[1]}"
        web = WebSearch(RetrievalSettings(web_provider="searxng", web_url=url, web_timeout_s=0.3))
        started = time.monotonic()
        with pytest.raises(ServiceError, match="searxng"):
            asyncio.run(web.retrieve(query()))
        assert time.monotonic() - started < 1.5
    finally:
        _Searx.delay = 0.0


def test_provider_shapes() -> None:
    tavily = {"results": [{"url": "u", "title": "t", "content": "c", "score": 0.7}]}
    brave = {"web": {"results": [{"url": "u", "title": "t", "description": "d"}]}}
    assert parse_results("tavily", tavily, 5)[0].score == 0.7
    assert parse_results("brave", brave, 5)[0].text == "d"
    with pytest.raises(ConfigError, match="searxng"):
        parse_results("bing", {}, 5)


def test_off_is_a_configuration_error() -> None:
    with pytest.raises(ConfigError, match="off"):
        WebSearch(RetrievalSettings())
