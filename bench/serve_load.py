"""The load driver of `rayweave bench serve` and its per-cell figures.

A cell (profile x concurrency) runs `concurrency` clients that each send their next request as
soon as the previous one answers (closed loop, like users waiting for results), for a fixed number
of requests. Latency is the client-side wall time of one POST /v1/search; QPS is requests over the
cell's wall time.
"""

from __future__ import annotations

import asyncio
import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx

from rayweave.cluster.errors import InputError, ServiceError

ANCHOR_PROFILE = "anchor"
"""The profile name of the anchor server's rows."""


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation between order statistics (NumPy's
    default), so p99 of 50 samples lies between the two slowest rather than being the maximum."""
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile q must lie in [0, 100], got {q}")
    if not values:
        return math.nan
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


@dataclass(frozen=True, slots=True, kw_only=True)
class CellResult:
    """Raw outcome of one cell: latencies (s) of the successful requests, failures, wall time."""

    latencies_s: tuple[float, ...]
    errors: int
    degraded: int
    wall_s: float
    first_error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeBenchRow:
    profile: str
    concurrency: int
    requests: int
    errors: int
    degraded: int
    """Answers in which a retriever was dropped (failed or missed the deadline)."""
    p50_ms: float
    p95_ms: float
    p99_ms: float
    mean_ms: float
    qps: float
    wall_s: float
    cpu_ms_per_request: Mapping[str, float] = field(default_factory=dict)
    """CPU milliseconds per answered request by stage (empty when not measured)."""
    round_no: int = 1
    """Which round of the run (`--rounds`): ratios pair rows of one round."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: a cell without a successful request has null latencies, not NaN."""
        return {k: json_safe(v) for k, v in asdict(self).items()}


def json_safe(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    return value


def summarize(
    profile: str,
    concurrency: int,
    cell: CellResult,
    cpu_ms_per_request: Mapping[str, float] | None = None,
    *,
    round_no: int = 1,
) -> ServeBenchRow:
    """One table row from a cell's raw result (latency percentiles over successful requests)."""
    ms = [s * 1000.0 for s in cell.latencies_s]
    total = len(ms) + cell.errors
    return ServeBenchRow(
        profile=profile,
        concurrency=concurrency,
        requests=total,
        errors=cell.errors,
        degraded=cell.degraded,
        p50_ms=percentile(ms, 50),
        p95_ms=percentile(ms, 95),
        p99_ms=percentile(ms, 99),
        mean_ms=sum(ms) / len(ms) if ms else math.nan,
        qps=len(ms) / cell.wall_s if cell.wall_s > 0 else 0.0,
        wall_s=cell.wall_s,
        cpu_ms_per_request=dict(cpu_ms_per_request or {}),
        round_no=round_no,
    )


async def _drive(
    url: str,
    bodies: Sequence[dict[str, Any]],
    concurrency: int,
    *,
    headers: dict[str, str],
    timeout_s: float,
    on_answer: Callable[[], None],
) -> CellResult:
    latencies: list[float] = []
    errors = degraded = 0
    first_error: str | None = None
    cursor = iter(range(len(bodies)))
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)

    async def client(http: httpx.AsyncClient) -> None:
        nonlocal errors, degraded, first_error
        for i in cursor:  # a shared iterator: each request is taken by exactly one client
            t0 = time.perf_counter()
            try:
                resp = await http.post(url, json=bodies[i], headers=headers)
                elapsed = time.perf_counter() - t0
                if resp.status_code != 200:
                    raise ServiceError(f"HTTP {resp.status_code}: {resp.text[:200]}")
                if resp.json().get("degraded"):
                    degraded += 1
                latencies.append(elapsed)
            except (httpx.HTTPError, ServiceError, ValueError) as exc:
                errors += 1
                first_error = first_error or f"{type(exc).__name__}: {exc}"
            on_answer()

    async with httpx.AsyncClient(timeout=timeout_s, limits=limits) as http:
        started = time.perf_counter()
        await asyncio.gather(*(client(http) for _ in range(concurrency)))
        wall = time.perf_counter() - started
    return CellResult(
        latencies_s=tuple(latencies),
        errors=errors,
        degraded=degraded,
        wall_s=wall,
        first_error=first_error,
    )


def drive(
    url: str,
    bodies: Sequence[dict[str, Any]],
    concurrency: int,
    *,
    headers: dict[str, str] | None = None,
    timeout_s: float = 60.0,
    on_answer: Callable[[], None] = lambda: None,
) -> CellResult:
    """POST every body to `url` from `concurrency` closed-loop clients; one cell's raw result.

    `on_answer` is called after each request, answered or failed (a progress bar's tick)."""
    if concurrency < 1:
        raise InputError(f"concurrency must be >= 1, got {concurrency}")
    return asyncio.run(
        _drive(
            url,
            bodies,
            concurrency,
            headers=headers or {},
            timeout_s=timeout_s,
            on_answer=on_answer,
        )
    )


def anchor_ratios(rows: Sequence[ServeBenchRow]) -> list[tuple[float, float]]:
    """(QPS / anchor QPS, p50 / anchor p50) per row, against the anchor row at the same client
    count in the same round; NaN where there is no anchor row or its figure is zero or missing."""
    anchors = {(r.round_no, r.concurrency): r for r in rows if r.profile == ANCHOR_PROFILE}

    def ratio(value: float, base: float | None) -> float:
        if base is None or math.isnan(base) or base == 0 or math.isnan(value):
            return math.nan
        return value / base

    out: list[tuple[float, float]] = []
    for r in rows:
        anchor = anchors.get((r.round_no, r.concurrency))
        out.append(
            (
                ratio(r.qps, anchor.qps if anchor else None),
                ratio(r.p50_ms, anchor.p50_ms if anchor else None),
            )
        )
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class RatioSpread:
    """One (profile, client count) over the rounds of a run: the median ratio to the anchor
    and the smallest and largest, so a change is read against the run's own spread. `rounds`
    counts the rounds that had an anchor to compare with."""

    profile: str
    concurrency: int
    rounds: int
    qps_median: float
    qps_low: float
    qps_high: float
    p50_median: float
    p50_low: float
    p50_high: float


def ratio_spread(rows: Sequence[ServeBenchRow]) -> list[RatioSpread]:
    """Per (profile, client count), in first-seen order, the rounds' anchor ratios summarised
    (rounds without a ratio left out; all NaN when no round has one)."""
    cells: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for r, pair in zip(rows, anchor_ratios(rows), strict=True):
        if r.profile != ANCHOR_PROFILE:
            cells.setdefault((r.profile, r.concurrency), []).append(pair)

    def spread(values: list[float]) -> tuple[float, float, float]:
        kept = sorted(v for v in values if not math.isnan(v))
        if not kept:
            return math.nan, math.nan, math.nan
        return statistics.median(kept), kept[0], kept[-1]

    out = []
    for (profile, level), ratios in cells.items():
        qps = spread([q for q, _ in ratios])
        p50 = spread([p for _, p in ratios])
        out.append(
            RatioSpread(
                profile=profile,
                concurrency=level,
                rounds=sum(not math.isnan(q) for q, _ in ratios),
                qps_median=qps[0],
                qps_low=qps[1],
                qps_high=qps[2],
                p50_median=p50[0],
                p50_low=p50[1],
                p50_high=p50[2],
            )
        )
    return out
