"""A bounded closed-loop HTTP load over the Serve app, and what the fault tests read from it."""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
from tests_support import alive_actors

from rayweave.serve.request_metrics import ENTRY_HEADER, EXIT_HEADER

QUERIES = (
    "What is a lease in Ferry?",
    "How do I retry a failed task?",
    "dead-letter queue",
    "How are workers scheduled?",
    "What does error E1042 mean?",
)
CLIENTS = 4


@dataclass
class Outcome:
    status: int
    seconds: float
    degraded: list[str]
    results: int
    at: float  # seconds since the load started, when the response came back
    timings_ms: dict[str, float] = field(default_factory=dict)  # the pipeline's own, per stage
    error: str = ""  # the client's exception when no response came (status 0)
    sent_at: float = 0.0  # seconds since the load started, when the request was sent
    # Unix times: sent, the Ingress replica's entry and exit (response headers), received.
    wall: tuple[float, float | None, float | None, float] = (0.0, None, None, 0.0)

    def placed_ms(self) -> dict[str, float | None]:
        """Where the request's time went: before the Ingress replica (proxy, routing), in it,
        and after it (the response path)."""
        sent, entry, exit_, received = self.wall
        if entry is None or exit_ is None:
            return {"before_replica": None, "in_replica": None, "after_replica": None}
        return {
            "before_replica": round(1000 * (entry - sent), 1),
            "in_replica": round(1000 * (exit_ - entry), 1),
            "after_replica": round(1000 * (received - exit_), 1),
        }

    @property
    def failed(self) -> bool:
        return self.status != 200 or "vector" in self.degraded or self.results == 0


def drive(url: str, requests: int, profile: str, *, origin: float | None = None) -> list[Outcome]:
    """`requests` searches shared by CLIENTS concurrent clients; times are seconds since
    `origin` (a `time.perf_counter()` value; default: the load's start)."""

    async def run() -> list[Outcome]:
        outcomes: list[Outcome] = []
        cursor = iter(range(requests))
        started = time.perf_counter() if origin is None else origin

        async def client(http: httpx.AsyncClient) -> None:
            for i in cursor:
                body = {"query": QUERIES[i % len(QUERIES)], "profile": profile, "top_k": 5}
                t0 = time.perf_counter()
                sent = time.time()
                error = ""
                stamps: tuple[float | None, float | None] = (None, None)
                try:
                    resp = await http.post(f"{url}/v1/search", json=body)
                    data = resp.json() if resp.status_code == 200 else {}
                    status = resp.status_code
                    stamps = (_stamp(resp, ENTRY_HEADER), _stamp(resp, EXIT_HEADER))
                except httpx.HTTPError as exc:
                    data, status, error = {}, 0, f"{type(exc).__name__}: {exc}"
                t1 = time.perf_counter()
                outcomes.append(
                    Outcome(
                        status=status,
                        seconds=t1 - t0,
                        degraded=list(data.get("degraded", [])),
                        results=len(data.get("results", [])),
                        at=t1 - started,
                        timings_ms=dict(data.get("timings_ms", {})),
                        error=error,
                        sent_at=t0 - started,
                        wall=(sent, *stamps, time.time()),
                    )
                )

        async with httpx.AsyncClient(timeout=60) as http:
            await asyncio.gather(*(client(http) for _ in range(CLIENTS)))
        return outcomes

    return asyncio.run(run())


def _stamp(response: httpx.Response, header: str) -> float | None:
    value = response.headers.get(header)
    return float(value) if value else None


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98] if len(values) > 1 else values[0]


def vector_replicas(app_name: str) -> list[tuple[str, str]]:
    alive = alive_actors()
    return [
        (a.name, a.ray_namespace)
        for a in alive
        if a.class_name == f"ServeReplica:{app_name}:VectorRetriever"
    ]


def healthy(app_name: str, replicas: int) -> bool:
    """The app runs with `replicas` VectorRetriever replicas alive."""
    from ray import serve
    from ray.serve.schema import ApplicationStatus

    app = serve.status().applications.get(app_name)
    return (
        app is not None
        and app.status == ApplicationStatus.RUNNING
        and len(vector_replicas(app_name)) == replicas
    )


@dataclass
class KillRun:
    """A bounded load during which something was killed, and the load after recovery."""

    during: list[Outcome]
    after: list[Outcome]
    recovery_s: float  # from the kill until the app was whole again
    killed_at: float = 0.0  # seconds since the load started
    dead_at: float | None = None  # when the cluster first reported the node dead (same clock)
    load_s: float = 0.0  # how long the load ran

    @property
    def in_flight(self) -> list[Outcome]:
        """Requests sent before the kill and answered after it."""
        return [o for o in self.during if o.sent_at <= self.killed_at < o.at]

    def after_detection(self) -> list[Outcome]:
        """Requests sent once the cluster knew the node was dead."""
        dead = self.dead_at if self.dead_at is not None else float("inf")
        return [o for o in self.during if o.sent_at >= dead]

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.during if o.failed]

    def figures(self) -> dict[str, object]:
        return {
            "requests": len(self.during),
            "failed": len(self.failed),
            "p99_ms": round(1000 * p99([o.seconds for o in self.during]), 1),
            "recovery_s": round(self.recovery_s, 1),
            "killed_at_s": round(self.killed_at, 2),
            "dead_after_s": None
            if self.dead_at is None
            else round(self.dead_at - self.killed_at, 2),
            "load_s": round(self.load_s, 2),
            "in_flight": len(self.in_flight),
            "in_flight_max_ms": round(
                1000 * max((o.seconds for o in self.in_flight), default=0), 1
            ),
            "requests_after_recovery": len(self.after),
            "failed_after_recovery": sum(o.failed for o in self.after),
            # Where the slowest request's time went: the pipeline's stages, or outside them
            # (`total` far below `ms`), so that a slow run's figures say which wait held it.
            "slowest": [
                {
                    "ms": round(1000 * o.seconds, 1),
                    "at_s": round(o.at, 2),
                    "status": o.status,
                    "degraded": o.degraded,
                    "timings_ms": o.timings_ms,
                    "placed_ms": o.placed_ms(),
                    "error": o.error,
                }
                for o in sorted(self.during, key=lambda o: -o.seconds)[:3]
            ],
        }


def kill_under_load(
    url: str,
    kill: Callable[[], None],
    recovered: Callable[[], bool],
    *,
    dead: Callable[[], bool] | None = None,
    requests: int = 300,
    timeout_s: float = 300,
) -> KillRun:
    """`requests` hybrid searches; `kill()` five seconds in, while `dead()` is polled to note
    when the cluster declares the node dead; then wait until `recovered()` and send 100 more."""
    during: list[Outcome] = []
    started = time.perf_counter()
    load = threading.Thread(
        target=lambda: during.extend(drive(url, requests, "hybrid", origin=started))
    )
    load.start()
    time.sleep(5.0)
    kill()
    killed_at = time.perf_counter()
    dead_at: float | None = None
    while load.is_alive():
        if dead_at is None and dead is not None and dead():
            dead_at = time.perf_counter()
        load.join(timeout=0.05)
    load_s = time.perf_counter() - started
    while not recovered():
        assert time.perf_counter() - killed_at < timeout_s, "the app did not recover"
        time.sleep(1.0)
    recovery_s = time.perf_counter() - killed_at
    return KillRun(
        during=during,
        after=drive(url, 100, "hybrid"),
        recovery_s=recovery_s,
        killed_at=killed_at - started,
        dead_at=None if dead_at is None else dead_at - started,
        load_s=load_s,
    )
