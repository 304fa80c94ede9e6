"""Tracing: one span per search stage under the request's span, in process and through Serve's
file exporter (the session's stack traces every request, tests/conftest.py)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from rayweave.cluster.settings import Settings
from rayweave.cluster.types import Hit
from rayweave.serve.search import RetrievalQuery, SearchPipeline

STAGES = {"classify", "retrieve vector", "fuse", "read page"}


class Stored:
    def __init__(self) -> None:
        self.hits = [
            Hit(id=f"c{i}", doc_id=f"d{i}", text=f"t{i}", score=1 - i / 10) for i in range(5)
        ]

    async def retrieve(self, query: RetrievalQuery) -> dict[str, list[Hit]]:
        return {"dense": list(self.hits)}

    async def hydrate(self, ids: list[str]) -> dict[str, Hit]:
        return {h.id: h for h in self.hits if h.id in ids}


@pytest.fixture(scope="module")
def spans() -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)  # once per process; nothing else in the tests sets one
    return exporter


def test_each_stage_is_a_span_under_the_request(spans: InMemorySpanExporter) -> None:
    from rayweave.serve.classifier import RuleClassifier
    from rayweave.serve.fusion import FusionRanker
    from rayweave.serve.planning import planner
    from rayweave.serve.schemas import Profile

    retrieval = Settings().serve.retrieval
    stored = Stored()
    pipeline = SearchPipeline(
        classifier=RuleClassifier(),
        planner=planner(retrieval),
        vector=stored,
        hydrator=stored,
        fuser=FusionRanker(retrieval),
    )

    async def request() -> None:
        with trace.get_tracer("test").start_as_current_span("request"):
            await pipeline.search("leases", top_k=3, profile=Profile.DENSE)

    spans.clear()
    asyncio.run(request())
    finished = {s.name: s for s in spans.get_finished_spans()}
    assert set(finished) >= STAGES
    root = finished["request"]
    for name in STAGES:
        assert finished[name].context.trace_id == root.context.trace_id
        assert finished[name].parent is not None
        assert finished[name].parent.span_id == root.context.span_id  # type: ignore[union-attr]


def _spans(folder: Path) -> list[dict[str, Any]]:
    """Every span in Serve's file exporter's files (pretty-printed JSON objects, one by one)."""
    decoder = json.JSONDecoder()
    out = []
    for path in folder.glob("*.json"):
        text, at = path.read_text(), 0
        while True:
            while at < len(text) and text[at].isspace():
                at += 1
            if at >= len(text):
                break
            span, at = decoder.raw_decode(text, at)
            out.append(span)
    return out


@pytest.mark.integration
def test_a_served_requests_trace_shows_every_stage(app_url: str, layout: str) -> None:
    import ray

    response = httpx.post(
        f"{app_url}/v1/search",
        json={"query": "how do I configure retries?", "top_k": 3},
        timeout=120,
    )
    assert response.status_code == 200
    folder = Path(ray._private.worker._global_node.get_session_dir_path()) / "logs/serve/spans"
    wanted = STAGES | {"encode", "retrieve graph"}
    deadline = time.monotonic() + 30
    complete: list[str] = []
    while not complete and time.monotonic() < deadline:
        traces: dict[str, set[str]] = {}
        for span in _spans(folder):
            traces.setdefault(span["context"]["trace_id"], set()).add(span["name"])
        complete = [t for t, names in traces.items() if wanted <= names]
        time.sleep(0.5)
    assert complete, f"no trace in {folder} holds every stage of {sorted(wanted)} ({layout})"
