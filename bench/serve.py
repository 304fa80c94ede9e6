"""`rayweave bench serve`: closed-loop HTTP load on the Serve app, per profile and concurrency.

Cells and their figures come from `serve_load`. The client shares the machine with the app, so on
a small box the figures that carry over are the ratios between cells of one run (how latency grows
with concurrency, what the graph adds over dense), not the absolute numbers.

With `anchor`, the same cells also run against the simplest server a user could write instead
(`rayweave.bench.anchor_server`: one process, sentence-transformers and a numpy dot product over
the same chunks), and every row gets its QPS and p50 as ratios to the anchor's at the same client
count: what the pipeline's hops and stages cost over doing nothing clever. Every cell also records
CPU-ms per answered request per stage (`rayweave.bench.serve_cpu`), the figure that sizes a
deployment when throughput is CPU-bound.

The ratios move between runs on a shared box (the anchor's own QPS by a fifth), more than a
small change moves them. `rounds` repeats the whole sequence, alternating which of the app and
the anchor goes first (so a drift in the machine's load favours neither), pairs each round's
rows with that round's anchor, and prints each cell's median ratio with the rounds' range.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

from rayweave.bench import serve_cpu
from rayweave.bench.inputs import load_bench_queries
from rayweave.bench.serve_load import (
    ANCHOR_PROFILE,
    CellResult,
    RatioSpread,
    ServeBenchRow,
    anchor_ratios,
    drive,
    json_safe,
    ratio_spread,
    summarize,
)
from rayweave.cluster.errors import InputError, ServiceError
from rayweave.cluster.progress import progress_bar
from rayweave.cluster.settings import Settings
from rayweave.serve.schemas import Profile

__all__ = [
    "DEFAULT_CONCURRENCY",
    "DEFAULT_PROFILES",
    "render_cpu_table",
    "render_spread_table",
    "render_table",
    "run_serve_bench",
]

DEFAULT_PROFILES: tuple[Profile, ...] = (Profile.DENSE, Profile.HYBRID, Profile.GRAPH)
DEFAULT_CONCURRENCY: tuple[int, ...] = (1, 8, 32)


def _times(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.2f}x"


def render_table(rows: Sequence[ServeBenchRow], *, title: str = "serve bench") -> Table:
    table = Table(title=title)
    rounds = any(r.round_no > 1 for r in rows)
    if rounds:
        table.add_column("round", justify="right")
    for name in ("profile", "clients", "requests", "errors", "degraded"):
        table.add_column(name, justify="left" if name == "profile" else "right")
    for name in ("p50 ms", "p95 ms", "p99 ms", "mean ms", "QPS", "QPS vs 1 client"):
        table.add_column(name, justify="right")
    for name in ("QPS vs anchor", "p50 vs anchor"):
        table.add_column(name, justify="right")
    lowest = min(x.concurrency for x in rows) if rows else 0
    base = {(r.round_no, r.profile): r.qps for r in rows if r.concurrency == lowest}
    for r, (qps_ratio, p50_ratio) in zip(rows, anchor_ratios(rows), strict=True):
        one = base.get((r.round_no, r.profile))
        speedup = r.qps / one if one else math.nan
        table.add_row(
            *([str(r.round_no)] if rounds else []),
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


def render_spread_table(spreads: Sequence[RatioSpread], *, title: str) -> Table:
    """Per cell: the rounds' median ratio to the anchor, and their range."""
    table = Table(title=title)
    for name in ("profile", "clients", "rounds"):
        table.add_column(name, justify="left" if name == "profile" else "right")
    for name in ("QPS vs anchor", "range", "p50 vs anchor", "range"):
        table.add_column(name, justify="right")
    for c in spreads:
        table.add_row(
            c.profile,
            str(c.concurrency),
            str(c.rounds),
            _times(c.qps_median),
            f"{_times(c.qps_low)}-{_times(c.qps_high)}",
            _times(c.p50_median),
            f"{_times(c.p50_low)}-{_times(c.p50_high)}",
        )
    return table


def render_cpu_table(rows: Sequence[ServeBenchRow], *, title: str = "CPU-ms per request") -> Table:
    """One row per cell, one column per stage (in request order), plus the total."""
    stages = serve_cpu.stage_order(s for r in rows for s in r.cpu_ms_per_request)
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
    """This stack's root processes for CPU staging (`serve_cpu.stack_roots`)."""


def _bench_cells(
    name: str,
    endpoint: str,
    fields: Mapping[str, Any],
    *,
    plan: _Plan,
    headers: dict[str, str],
    roles: Mapping[int, str],
    round_no: int,
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
        before = serve_cpu.take_snapshot(roles, plan.roots)
        cell = run(plan.requests, level)
        after = serve_cpu.take_snapshot(roles, plan.roots)
        cpu = serve_cpu.cpu_ms_per_request(before, after, len(cell.latencies_s))
        plan.rows.append(summarize(name, level, cell, cpu, round_no=round_no))
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
        "qps_vs_anchor": json_safe(ratios[0]),
        "p50_vs_anchor": json_safe(ratios[1]),
        "cpu_ms_per_request_total": json_safe(sum(spent.values())) if spent else None,
    }


def _cells_to_run(
    requests: int, warmup: int, concurrency: Sequence[int], profiles: Sequence[Profile | str]
) -> tuple[list[int], list[Profile]]:
    """The client counts (sorted, distinct) and profiles of a run, checked."""
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
    return levels, chosen


def _reach_app(
    settings: Settings, url: str | None, *, deploy_if_needed: bool, anchor: bool, con: Console
) -> tuple[str, bool]:
    """The app's base URL, and whether it was deployed here (and must be removed afterwards)."""
    base = (url or f"http://{settings.serve.host}:{settings.serve.port}").rstrip("/")
    if not _answers(base):
        if not deploy_if_needed or url is not None:
            raise ServiceError(f"nothing answers on {base}: start the app with `rayweave serve`")
        from rayweave.serve.app import deploy

        con.print(f"deploying the app for {settings.qdrant.collection!r} ...", highlight=False)
        return deploy(settings), True
    if anchor or url is None:
        from rayweave.cluster.services.runtime import connect

        # The anchor's chunks come from the store actor; CPU staging wants this stack's raylet
        # but can do without it (titles then count machine-wide).
        try:
            connect(settings, start=False)
        except ServiceError:
            if anchor:
                raise
    return base, False


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
    rounds: int = 1,
    tracing: bool = False,
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
    `rounds` repeats it all (see the module docstring). With `tracing`, Serve is then restarted
    with every request traced to files (tracing is applied when Serve starts) and the app's cells
    run again as "<profile> traced" rows; Serve is restarted untraced afterwards.
    """
    if rounds < 1:
        raise InputError(f"rounds must be >= 1, got {rounds}")
    if tracing and url is not None:
        raise InputError("--tracing restarts Serve: run it without --url, on the local stack")
    levels, chosen = _cells_to_run(requests, warmup, concurrency, profiles)
    texts = load_bench_queries(queries, data_dir=data_dir)
    con = console or Console()
    base, deployed = _reach_app(
        settings, url, deploy_if_needed=deploy_if_needed, anchor=anchor, con=con
    )
    headers = {}
    if settings.serve.api_keys:
        headers["X-API-Key"] = settings.serve.api_keys[0].get_secret_value()
    load = os.getloadavg()[0]
    rows: list[ServeBenchRow] = []
    roles = {os.getpid(): serve_cpu.CLIENT}
    total = (rounds * (len(chosen) + int(anchor)) + tracing * len(chosen)) * (
        warmup + len(levels) * requests
    )
    chunks: tuple[list[str], list[str]] | None = None
    up = deployed  # an app deployed here is removed for the anchor's cells, then deployed again
    try:
        if anchor:
            from rayweave.bench.anchor import export_chunks

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
                roots=serve_cpu.stack_roots(settings),
            )
            for round_no in range(1, rounds + 1):
                anchor_first = chunks is not None and round_no % 2 == 0
                if chunks is not None and anchor_first:
                    _bench_anchor(settings, chunks, roles=roles, plan=plan, round_no=round_no)
                if deployed and not up:
                    from rayweave.serve.app import deploy

                    deploy(settings)
                    up = True
                for profile in chosen:
                    _bench_cells(
                        profile.value,
                        f"{base}/v1/search",
                        {"profile": profile.value},
                        headers=headers,
                        roles=roles,
                        plan=plan,
                        round_no=round_no,
                    )
                if chunks is not None and not anchor_first:
                    if up:
                        from rayweave.serve.app import shutdown

                        shutdown(settings)
                        up = False
                    _bench_anchor(settings, chunks, roles=roles, plan=plan, round_no=round_no)
            if tracing:
                _bench_traced(settings, chosen, base, headers=headers, roles=roles, plan=plan)
                up = deployed
    finally:
        if up:
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
    spreads = ratio_spread(rows) if rounds > 1 and chunks is not None else []
    if spreads:
        con.print(
            render_spread_table(
                spreads,
                title=f"ratios to the anchor over {rounds} rounds: median and range",
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
                    "rounds": rounds,
                    "rows": [
                        _json_row(r, ratios)
                        for r, ratios in zip(rows, anchor_ratios(rows), strict=True)
                    ],
                    "ratio_spread": [json_safe(asdict(c)) for c in spreads],
                },
                indent=2,
            )
        )
    return rows


def _bench_traced(
    settings: Settings,
    profiles: Sequence[Profile],
    base: str,
    *,
    headers: dict[str, str],
    roles: dict[int, str],
    plan: _Plan,
) -> None:
    """The app's cells again with every request traced: Serve restarted with tracing, then
    restarted without it (its proxies keep the tracing they started with)."""
    from ray import serve

    from rayweave.serve.app import deploy

    traced = settings.serve.model_copy(update={"tracing": "file", "tracing_sampling_ratio": 1.0})
    serve.shutdown()  # type: ignore[no-untyped-call]
    deploy(settings.model_copy(update={"serve": traced}))
    try:
        for profile in profiles:
            _bench_cells(
                f"{profile.value} traced",
                f"{base}/v1/search",
                {"profile": profile.value},
                headers=headers,
                roles=roles,
                plan=plan,
                round_no=1,
            )
    finally:
        serve.shutdown()  # type: ignore[no-untyped-call]
        deploy(settings)


def _bench_anchor(
    settings: Settings,
    chunks: tuple[list[str], list[str]],
    *,
    roles: Mapping[int, str],
    plan: _Plan,
    round_no: int,
) -> None:
    """Start the anchor over `chunks` with the app's dense model, run the cells, stop it. Its
    temp folder is kept when it fails, since the error names the log inside."""
    from rayweave.bench.anchor import run_anchor

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
            roles={**roles, server.pid: serve_cpu.ANCHOR},
            plan=plan,
            round_no=round_no,
        )
    shutil.rmtree(workdir, ignore_errors=True)
