"""RequestMetrics: one record per request, with the route template and the status it got."""

from __future__ import annotations

import asyncio

import httpx
from fastapi import FastAPI, HTTPException

from rayweave.serve.request_metrics import RequestMetrics


class Records:
    def __init__(self) -> None:
        self.seen: list[tuple[str, int, float]] = []

    def request(self, *, route: str, status: int, seconds: float) -> None:
        self.seen.append((route, status, seconds))


def app_with(records: Records) -> FastAPI:
    app = FastAPI()

    @app.get("/items/{item_id}")
    async def item(item_id: int) -> dict[str, int]:
        if item_id == 404:
            raise HTTPException(status_code=404)
        if item_id == 500:
            raise RuntimeError("boom")
        return {"id": item_id}

    app.add_middleware(RequestMetrics, recorder=records)
    return app


def get(app: FastAPI, path: str) -> int:
    async def call() -> int:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return (await client.get(path)).status_code

    return asyncio.run(call())


def test_each_request_is_recorded_by_route_template_and_status() -> None:
    records = Records()
    app = app_with(records)
    assert [get(app, p) for p in ("/items/1", "/items/404", "/nowhere")] == [200, 404, 404]
    assert [(route, status) for route, status, _ in records.seen] == [
        ("/items/{item_id}", 200),
        ("/items/{item_id}", 404),
        ("unmatched", 404),
    ]
    assert all(seconds >= 0 for *_, seconds in records.seen)


def test_a_request_whose_handler_raised_is_recorded_as_a_500() -> None:
    records = Records()
    assert get(app_with(records), "/items/500") == 500
    assert [(route, status) for route, status, _ in records.seen] == [("/items/{item_id}", 500)]


def test_responses_carry_the_replicas_entry_and_exit_times() -> None:
    import time

    from rayweave.serve.request_metrics import ENTRY_HEADER, EXIT_HEADER

    async def call() -> httpx.Response:
        transport = httpx.ASGITransport(app=app_with(Records()), raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.get("/items/404")

    before = time.time()
    response = asyncio.run(call())
    entry, exit_ = float(response.headers[ENTRY_HEADER]), float(response.headers[EXIT_HEADER])
    assert before <= entry <= exit_ <= time.time()
