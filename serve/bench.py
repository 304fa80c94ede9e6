"""`rayweave bench serve`: closed-loop HTTP load on the Serve app, per profile and concurrency.

Each cell (profile x concurrency) runs `concurrency` clients that each send their next request as
soon as the previous one answers (closed loop, like users waiting for results), for a fixed number
of requests. Latency is the client-side wall time of one POST /v1/search; QPS is requests over the
cell's wall time. The client shares the machine with the app, so on a small box the figures that
carry over are the ratios between cells of one run (how latency grows with concurrency, what the
graph adds over dense), not the absolute numbers.

With `anchor`, the same cells also run against the simplest server a user could write instead
(`rayweave.serve.anchor_server`: one process, sentence-transformers and a numpy dot product over
the same chunks), and every row gets its QPS and p50 as ratios to the anchor's at the same client
count: what the pipeline's hops and stages cost over doing nothing clever. Every cell also records
CPU-ms per answered request per stage (`rayweave.serve.bench_cpu`), the figure that sizes a
deployment when throughput is CPU-bound.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

from rayweave.cluster.errors import InputError, ServiceError, SourceError
from rayweave.cluster.progress import progress_bar
from rayweave.cluster.settings import Settings
from rayweave.serve import bench_cpu
from rayweave.serve.schemas import Profile

__all__ = [
    "ANCHOR_PROFILE",
    "DEFAULT_CONCURRENCY",
    "DEFAULT_PROFILES",
    "CellResult",
    "ServeBenchRow",
    "anchor_ratios",
    "drive",
    "load_bench_queries",
    "percentile",
    "render_cpu_table",
    "render_table",
    "run_serve_bench",
    "summarize",
]

DEFAULT_PROFILES: tuple[Profile, ...] = (Profile.DENSE, Profile.HYBRID, Profile.GRAPH)
DEFAULT_CONCURRENCY: tuple[int, ...] = (1, 8, 32)
ANCHOR_PROFILE = "anchor"
_SAMPLE_QUERIES = Path("tests") / "ingest" / "sample_queries.json"


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

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: a cell without a successful request has null latencies, not NaN."""
        return {k: _json_safe(v) for k, v in asdict(self).items()}


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    return value


def summarize(
    profile: str,
    concurrency: int,
    cell: CellResult,
    cpu_ms_per_request: Mapping[str, float] | None = None,
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
    )


def load_bench_queries(
    source: Path | str | None = None, *, data_dir: Path | None = None
) -> list[str]:
    """Query texts: a BEIR folder or `queries.jsonl`, a data set name under `data_dir`, a JSON file
    shaped like the sample queries (`{"queries": [{"query": ...}]}`), or None for the questions
    over the bundled sample corpus."""
    if source is None:
        from rayweave.ingest.samples import sample_corpus

        path = sample_corpus().parents[1] / _SAMPLE_QUERIES
        if not path.is_file():
            raise SourceError(
                f"sample queries not found at {path}: pass a BEIR folder or queries file",
                path=str(path),
            )
    else:
        path = Path(source).expanduser()
        if not path.exists() and data_dir is not None and (Path(data_dir) / path).exists():
            path = Path(data_dir) / path
        if path.is_dir():
            path = path / "queries.jsonl"
        if not path.is_file():
            raise SourceError(f"bench queries {path} do not exist", path=str(path))
    if path.suffix == ".jsonl":
        from rayweave.cluster.beir import load_queries

        texts = list(load_queries(path).values())
    else:
        try:
            records = json.loads(path.read_text(encoding="utf-8"))["queries"]
            texts = [str(r["query"]) for r in records]
        except (ValueError, KeyError, TypeError) as exc:
            raise SourceError(
                f"{path}: expected {{'queries': [{{'query': ...}}]}} ({exc})", path=str(path)
            ) from exc
    texts = [t for t in texts if t.strip()]
    if not texts:
        raise SourceError(f"bench queries {path} hold no query text", path=str(path))
    return texts


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
    count; NaN where there is no anchor row or its figure is zero or missing."""
    anchors = {r.concurrency: r for r in rows if r.profile == ANCHOR_PROFILE}

    def ratio(value: float, base: float | None) -> float:
        if base is None or math.isnan(base) or base == 0 or math.isnan(value):
            return math.nan
        return value / base

    out: list[tuple[float, float]] = []
    for r in rows:
        anchor = anchors.get(r.concurrency)
        out.append(
            (
                ratio(r.qps, anchor.qps if anchor else None),
                ratio(r.p50_ms, anchor.p50_ms if anchor else None),
            )
        )
    return out


def _times(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.2f}x"


def render_table(rows: Sequence[ServeBenchRow], *, title: str = "serve bench") -> Table:
    table = Table(title=title)
    for name in ("profile", "clients", "requests", "errors", "degraded"):
        table.add_column(name, justify="left" if name == "profile" else "right")
    for name in ("p50 ms", "p95 ms", "p99 ms", "mean ms", "QPS", "QPS vs 1 client"):
        table.add_column(name, justify="right")
    for name in ("QPS vs anchor", "p50 vs anchor"):
        table.add_column(name, justify="right")
    base = {r.profile: r.qps for r in rows if r.concurrency == min(x.concurrency for x in rows)}
    for r, (qps_ratio, p50_ratio) in zip(rows, anchor_ratios(rows), strict=True):
        speedup = r.qps / base[r.profile] if base.get(r.profile) else math.nan
        table.add_row(
            r.profile,
            str(r.concurrency),
            str(r.requests),
            str(r.errors),
            str(r.degraded),
            f"{r.p50_ms:.1f}",
            f"{r.p95_ms:.1f}",
            f"{r.p99_ms:.1f}",
            f"{r.mean_ms:.1f}",
            f"{r.qps:.2f}",
            _times(speedup),
            _times(qps_ratio),
            _times(p50_ratio),
        )
    return table


def render_cpu_table(rows: Sequence[ServeBenchRow], *, title: str = "CPU-ms per request") -> Table:
    """One row per cell, one column per stage (in request order), plus the total."""
    stages = bench_cpu.stage_order(s for r in rows for s in r.cpu_ms_per_request)
    table = Table(title=title)
    table.add_column("profile")
    table.add_column("clients", justify="right")
    for name in [*stages, "total"]:
        table.add_column(name, justify="right")

    def cell(value: float | None) -> str:
        return "-" if value is None or math.isnan(value) else f"{value:.1f}"

    for r in rows:
        spent = r.cpu_ms_per_request
        total = sum(spent.values()) if spent else None
        table.add_row(
            r.profile, str(r.concurrency), *(cell(spent.get(s)) for s in stages), cell(total)
        )
    return table


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


@dataclass(frozen=True, slots=True, kw_only=True)
class _Plan:
    """What every target of one run shares: the same queries, cells and warm-up for each, so
    rows compare like with like (the anchor's included)."""

    texts: Sequence[str]
    levels: Sequence[int]
    requests: int
    warmup: int
    top_k: int
    timeout_s: float
    rows: list[ServeBenchRow]
    con: Console
    tick: Callable[[], None]
    roots: Sequence[int] | None
    """This stack's root processes for CPU staging (`bench_cpu.stack_roots`)."""


def _bench_cells(
    name: str,
    endpoint: str,
    fields: Mapping[str, Any],
    *,
    plan: _Plan,
    headers: dict[str, str],
    roles: Mapping[int, str],
) -> None:
    """One target's warm-up and cells (one per client count, CPU sampled around each), appended
    to `plan.rows` as profile `name`; `fields` are added to every request body."""

    def bodies(n: int) -> list[dict[str, Any]]:
        return [
            {
                "query": plan.texts[i % len(plan.texts)],
                **fields,
                "top_k": plan.top_k,
                "include_context": False,
            }
            for i in range(n)
        ]

    def run(n: int, clients: int) -> CellResult:
        return drive(
            endpoint,
            bodies(n),
            clients,
            headers=headers,
            timeout_s=plan.timeout_s,
            on_answer=plan.tick,
        )

    if plan.warmup:
        run(plan.warmup, 1)
    for level in plan.levels:
        before = bench_cpu.take_snapshot(roles, plan.roots)
        cell = run(plan.requests, level)
        after = bench_cpu.take_snapshot(roles, plan.roots)
        cpu = bench_cpu.cpu_ms_per_request(before, after, len(cell.latencies_s))
        plan.rows.append(summarize(name, level, cell, cpu))
        if cell.first_error:
            plan.con.print(
                f"{name} x{level}: {cell.errors} error(s), first: {cell.first_error}",
                markup=False,
                highlight=False,
            )


def _json_row(row: ServeBenchRow, ratios: tuple[float, float]) -> dict[str, Any]:
    spent = row.cpu_ms_per_request
    return {
        **row.to_dict(),
        "qps_vs_anchor": _json_safe(ratios[0]),
        "p50_vs_anchor": _json_safe(ratios[1]),
        "cpu_ms_per_request_total": _json_safe(sum(spent.values())) if spent else None,
    }


def run_serve_bench(
    settings: Settings,
    *,
    data_dir: Path | None = None,
    queries: Path | str | None = None,
    requests: int = 200,
    concurrency: Sequence[int] = DEFAULT_CONCURRENCY,
    profiles: Sequence[Profile | str] = DEFAULT_PROFILES,
    top_k: int = 10,
    warmup: int = 3,
    url: str | None = None,
    deploy_if_needed: bool = True,
    anchor: bool = False,
    json_path: Path | None = None,
    timeout_s: float = 60.0,
    console: Console | None = None,
) -> list[ServeBenchRow]:
    """Load the app at `url` (default: settings' host and port) cell by cell; print and return rows.

    When nothing answers there and `deploy_if_needed`, the app is deployed from `settings` (it
    serves `settings.qdrant.collection`, which must already be ingested) and removed afterwards.
    With `anchor`, the same cells then run against the anchor server over the same chunks, as rows
    of profile "anchor"; an app deployed here is removed first, so the anchor does not share the
    machine with an idle pipeline that the rayweave rows did not have beside them either.
    """
    if requests < 1 or warmup < 0:
        raise InputError(f"requests must be >= 1 and warmup >= 0, got {requests} and {warmup}")
    levels = sorted(set(concurrency))
    if not levels or levels[0] < 1:
        raise InputError(f"concurrency levels must be >= 1, got {list(concurrency)}")
    try:
        chosen = [Profile(p) for p in profiles]
    except ValueError:
        raise InputError(
            f"unknown profile in {list(profiles)}; valid: {', '.join(p.value for p in Profile)}"
        ) from None
    texts = load_bench_queries(queries, data_dir=data_dir)
    con = console or Console()
    base = (url or f"http://{settings.serve.host}:{settings.serve.port}").rstrip("/")
    deployed = False
    if not _answers(base):
        if not deploy_if_needed or url is not None:
            raise ServiceError(f"nothing answers on {base}: start the app with `rayweave serve`")
        from rayweave.serve.app import deploy

        con.print(f"deploying the app for {settings.qdrant.collection!r} ...", highlight=False)
        base = deploy(settings)
        deployed = True
    elif anchor or url is None:
        from rayweave.cluster.runtime import connect

        # The anchor's chunks come from the store actor; CPU staging wants this stack's raylet
        # but can do without it (titles then count machine-wide).
        try:
            connect(settings, start=False)
        except ServiceError:
            if anchor:
                raise
    headers = {}
    if settings.serve.api_keys:
        headers["X-API-Key"] = settings.serve.api_keys[0].get_secret_value()
    load = os.getloadavg()[0]
    rows: list[ServeBenchRow] = []
    roles = {os.getpid(): bench_cpu.CLIENT}
    total = (len(chosen) + int(anchor)) * (warmup + len(levels) * requests)
    chunks: tuple[list[str], list[str]] | None = None
    try:
        if anchor:
            from rayweave.serve.bench_anchor import export_chunks

            chunks = export_chunks(settings)
        with progress_bar(con, "bench serve", total, unit="requests") as advance:
            plan = _Plan(
                texts=texts,
                levels=levels,
                requests=requests,
                warmup=warmup,
                top_k=top_k,
                timeout_s=timeout_s,
                rows=rows,
                con=con,
                tick=lambda: advance(1),
                roots=bench_cpu.stack_roots(settings),
            )
            for profile in chosen:
                _bench_cells(
                    profile.value,
                    f"{base}/v1/search",
                    {"profile": profile.value},
                    headers=headers,
                    roles=roles,
                    plan=plan,
                )
            if chunks is not None:
                if deployed:
                    from rayweave.serve.app import shutdown

                    shutdown(settings)
                    deployed = False
                _bench_anchor(settings, chunks, roles=roles, plan=plan)
    finally:
        if deployed:
            from rayweave.serve.app import shutdown

            shutdown(settings)
    load_after = os.getloadavg()[0]
    con.print(
        render_table(
            rows,
            title=f"serve bench · {base} · {len(texts)} distinct queries · top_k {top_k} · "
            f"load avg {load:.1f} -> {load_after:.1f} on {os.cpu_count()} CPUs",
        )
    )
    con.print(
        render_cpu_table(
            rows,
            title="CPU-ms per answered request, by stage (every process on the machine; "
            "'other' is the rest of it)",
        )
    )
    if json_path is not None:
        json_path.write_text(
            json.dumps(
                {
                    "url": base,
                    "collection": settings.qdrant.collection,
                    "queries": len(texts),
                    "top_k": top_k,
                    "cpus": os.cpu_count(),
                    "load_avg_before": load,
                    "load_avg_after": load_after,
                    "anchor": None
                    if chunks is None
                    else {"model": settings.models.dense, "chunks": len(chunks[0])},
                    "rows": [
                        _json_row(r, ratios)
                        for r, ratios in zip(rows, anchor_ratios(rows), strict=True)
                    ],
                },
                indent=2,
            )
        )
    return rows


def _bench_anchor(
    settings: Settings,
    chunks: tuple[list[str], list[str]],
    *,
    roles: Mapping[int, str],
    plan: _Plan,
) -> None:
    """Start the anchor over `chunks` with the app's dense model, run the cells, stop it. Its
    temp folder is kept when it fails, since the error names the log inside."""
    from rayweave.serve.bench_anchor import run_anchor

    workdir = Path(tempfile.mkdtemp(prefix="rayweave-anchor-"))
    plan.con.print(
        f"starting the anchor ({settings.models.dense}, {len(chunks[0])} chunks) ...",
        highlight=False,
    )
    with run_anchor(*chunks, settings.models.dense, workdir=workdir) as server:
        _bench_cells(
            ANCHOR_PROFILE,
            f"{server.url}/v1/search",
            {},
            headers={},
            roles={**roles, server.pid: bench_cpu.ANCHOR},
            plan=plan,
        )
    shutil.rmtree(workdir, ignore_errors=True)
