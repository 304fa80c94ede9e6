"""`rayweave bench update`: what one changed document costs, beside the full pass, per namespace.

On each ingested namespace it adds one document (the text of a stored section of the first
namespace, the same in every namespace, so that sizes compare like for like: on 2026-12-07 a probe
taken from each namespace's own sections reached 5x the edges at 10k that it reached at 1k), brings
a projection up to date, deletes the document and brings the projection up to date again: with
`graph.maintenance = "incremental"` (diff writes, name index, change-log deltas) where
`graph.upkeep_host` says (the upkeep actor by default), the same in the ingesting process, and with
`"full"` in the ingesting process (every row rewritten, every name re-encoded, whole projection
reloads: the pass every upkeep was before the incremental one), in the same run so that machine
load moves them alike; an untimed upkeep first builds the name index and the layer snapshot if the
namespace has none (the state every upkeep after a namespace's first leaves), and the dense encoder
that synonymy encodes new names with is loaded before any timing, in this process and in the upkeep
actor (3-4 s here, which only the first timed upkeep that met a new name would otherwise pay: until
2026-11-28 that was the first namespace's incremental one, and on 2026-11-29 the actor's). The
projection's refresh is timed once the actor has written its caches' files, which it does after
answering. The upkeep's seconds per step (read, compute, write, synonymy, ...) show which of them
grows with the corpus. It ends with the full rebuild, its time and the driver's peak memory, both
ways: in the driver (the full pass) and as `rayweave graph rebuild`'s Ray job over shares. The
namespace is left as it was: the graph after the delete equals a fresh ingest of what remains.
"""

from __future__ import annotations

import contextlib
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from rich.console import Console

from rayweave.bench.ingest import RssSampler
from rayweave.bench.table import format_table
from rayweave.cluster.settings import Settings

if TYPE_CHECKING:
    from rayweave.graph.projection import GraphProjection
    from rayweave.graph.store import GraphStore

Mode = Literal["incremental", "full"]
Host = Literal["actor", "process"]
_REFRESHES = 3  # runs of the same projection delta, of which the median is reported


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateFigures:
    """One document added then deleted under one maintenance mode, upkeep in one host."""

    mode: Mode
    host: Host
    ingest_s: float  # the whole `rayweave ingest` of one file
    ingest_link_s: float  # of which the graph's upkeep (`finalize`)
    delete_s: float  # the whole `rayweave delete`, upkeep included
    refresh_s: float  # the projection brought up to date after the ingest
    refresh_keys: int  # nodes the change log named (0: a whole load)
    link_steps: dict[str, float]  # the ingest's upkeep, seconds per step (`finalize`)


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateRow:
    collection: str
    probe_from: str  # the namespace whose section the added document repeats (the first)
    documents: int
    projection_nodes: int
    projection_edges: int
    projection_load_s: float
    incremental: UpdateFigures  # where `graph.upkeep_host` says
    in_process: UpdateFigures  # incremental, in the ingesting process
    full: UpdateFigures
    rebuild_s: float  # `rayweave graph rebuild`, the Ray job over shares
    rebuild_peak_rss_mb: float  # the driver's peak during it
    full_rebuild_s: float  # the full pass in the driver
    full_rebuild_peak_rss_mb: float

    def update_cells(self) -> dict[str, str | float | int]:
        inc, full = self.incremental, self.full
        return {
            "namespace": self.collection,
            "docs": self.documents,
            "ingest 1": round(inc.ingest_s, 2),
            "full pass": round(full.ingest_s, 2),
            "linking": round(inc.ingest_link_s, 2),
            "in process": round(self.in_process.ingest_link_s, 2),
            "full": round(full.ingest_link_s, 2),
            "x": round(full.ingest_link_s / inc.ingest_link_s, 1) if inc.ingest_link_s else 0.0,
            "delete 1": round(inc.delete_s, 2),
            "full ": round(full.delete_s, 2),
        }

    def step_cells(self) -> list[dict[str, str | float | int]]:
        return [
            {
                "namespace": self.collection,
                "mode": figures.mode,
                "host": figures.host,
                **{step: round(sec, 2) for step, sec in figures.link_steps.items()},
            }
            for figures in (self.incremental, self.in_process, self.full)
        ]

    def projection_cells(self) -> dict[str, str | float | int]:
        refresh, load = self.incremental.refresh_s, self.projection_load_s
        return {
            "namespace": self.collection,
            "nodes": self.projection_nodes,
            "edges": self.projection_edges,
            "keys logged": self.incremental.refresh_keys,
            "delta s": round(refresh, 3),
            "load s": round(load, 2),
            "delta/load": round(refresh / load, 3) if load else 0.0,
            "rebuild s": round(self.rebuild_s, 1),
            "peak MB": round(self.rebuild_peak_rss_mb),
            "in driver s": round(self.full_rebuild_s, 1),
            "peak MB ": round(self.full_rebuild_peak_rss_mb),
        }


def run_update_bench(
    settings: Settings,
    collections: Sequence[str],
    *,
    console: Console | None = None,
    json_path: Path | None = None,
) -> list[UpdateRow]:
    """Measure every namespace in `collections` (see module docstring); prints a table."""
    from rayweave.cluster.services.graph_server import resolve_graph_connection
    from rayweave.cluster.services.runtime import connect

    con = console or Console()
    connect(settings)
    resolve_graph_connection(settings)
    text = _sample_text(settings, collections[0])
    rows = []
    for collection in collections:
        con.print(f"{collection}: one document through both maintenance modes ...")
        rows.append(_measure(settings, collection, con, text, probe_from=collections[0]))
    con.print(
        f"one document (a section of {collections[0]}), seconds "
        "(incremental upkeep beside the full pass):"
    )
    con.print(format_table([r.update_cells() for r in rows]), markup=False, highlight=False)
    con.print("where the upkeep of that ingest went, seconds per step:")
    steps = [cells for r in rows for cells in r.step_cells()]
    con.print(format_table(steps), markup=False, highlight=False)
    con.print(
        "projection after it (delta beside a whole load), and the full rebuild "
        "(the Ray job beside the pass in the driver):"
    )
    con.print(format_table([r.projection_cells() for r in rows]), markup=False, highlight=False)
    if json_path is not None:
        json_path.write_text(json.dumps([asdict(r) for r in rows], indent=2))
    return rows


def _measure(
    settings: Settings, collection: str, con: Console, text: str, *, probe_from: str
) -> UpdateRow:
    from rayweave.graph.projection import load_projection
    from rayweave.graph.store import open_graph_store
    from rayweave.ingest.pipeline import finalize
    from rayweave.ingest.upkeep_host import prepare_host
    from rayweave.models.factory import build_dense_encoder

    # Untimed upkeeps first, so that the name index and the layer snapshot exist. Two: one that
    # follows a full pass or a crash (a full change-log entry) reads the layer whole and logs a
    # full entry of its own, after its snapshot's version, so only the next one reads whole and
    # leaves a snapshot that an upkeep can start from (on 2026-11-28 one warm-up left the timed
    # 10k upkeep reading 653k edges back: 16.6 s of its 42).
    for _ in range(2):
        finalize(settings, collection)
    build_dense_encoder(settings.models).encode(["warm"], kind="query")  # loaded once, untimed
    prepare_host(settings, warm=True)  # and where the upkeep runs
    graph = open_graph_store(settings, namespace=collection)
    try:
        documents = int(graph.read("MATCH (d:Document {ns: $ns}) RETURN count(d) AS n")[0]["n"])
        started = time.perf_counter()
        projection = load_projection(graph)
        load_s = time.perf_counter() - started
        runs: tuple[tuple[str, Mode, Host], ...] = (
            ("incremental", "incremental", settings.graph.upkeep_host),
            ("in process", "incremental", "process"),
            ("full", "full", "process"),
        )
        figures = {
            name: _one_document(settings, collection, graph, text, mode, host)
            for name, mode, host in runs
        }
    finally:
        graph.close()
    con.print(f"{collection}: full rebuild, in the driver and as a Ray job ...")
    rebuild_s, peak = _rebuild(settings, collection, on_cluster=True)
    full_s, full_peak = _rebuild(settings, collection, on_cluster=False)
    return UpdateRow(
        collection=collection,
        probe_from=probe_from,
        documents=documents,
        projection_nodes=projection.size,
        projection_edges=projection.edges,
        projection_load_s=load_s,
        incremental=figures["incremental"],
        in_process=figures["in process"],
        full=figures["full"],
        rebuild_s=rebuild_s,
        rebuild_peak_rss_mb=peak,
        full_rebuild_s=full_s,
        full_rebuild_peak_rss_mb=full_peak,
    )


def _sample_text(settings: Settings, collection: str) -> str:
    from rayweave.graph.store import open_graph_store

    graph = open_graph_store(settings, namespace=collection)
    try:
        rows = graph.read(
            "MATCH (c:Section {ns: $ns}) RETURN c.text AS text ORDER BY c.key LIMIT 1"
        )
    finally:
        graph.close()
    if not rows:
        from rayweave.cluster.errors import InputError

        raise InputError(
            f"namespace {collection!r} holds no sections: ingest documents before benchmarking"
        )
    return str(rows[0]["text"])


def _median_refresh(graph: GraphStore, before: GraphProjection) -> float:
    """Seconds to bring `before` up to date, the median of `_REFRESHES` runs of the same delta:
    the first follows the ingest while its processes wind down, and alone it read 3-4x slower
    than in a quiet moment (2026-11-28)."""
    from rayweave.graph.projection_delta import projection_updates

    times = []
    for _ in range(_REFRESHES):
        started = time.perf_counter()
        projection_updates(graph, max_stale=1.0)(before)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _one_document(
    settings: Settings, collection: str, graph: GraphStore, text: str, mode: Mode, host: Host
) -> UpdateFigures:
    from rayweave.graph.projection import load_projection
    from rayweave.ingest.pipeline import delete_documents, run_ingest
    from rayweave.ingest.upkeep_host import prepare_host

    configured = _configured(settings, mode, host)
    before = load_projection(graph)
    with tempfile.TemporaryDirectory(prefix="rw-bench-update-") as tmp:
        path = Path(tmp) / f"bench-update-{mode}-{host}.md"
        path.write_text(f"# Update probe ({mode}, {host})\n\n{text}\n")
        summary = run_ingest(configured, [path], collection=collection)
        # The actor writes its caches' files after answering; on this bench's two cores the
        # pickling would share the CPU with the replica's refresh timed next.
        prepare_host(configured, settle=True)
        changes = graph.changes_since(before.version)
        refresh_s = _median_refresh(graph, before)
        started = time.perf_counter()
        delete_documents(configured, [str(path)], collection=collection)
        delete_s = time.perf_counter() - started
    return UpdateFigures(
        mode=mode,
        host=host,
        ingest_s=summary.seconds,
        ingest_link_s=summary.link_seconds,
        delete_s=delete_s,
        refresh_s=refresh_s,
        refresh_keys=0 if changes.full else len(changes.keys),
        link_steps=summary.link_steps,
    )


def _configured(settings: Settings, mode: Mode, host: Host) -> Settings:
    from rayweave.ingest.pipeline import with_maintenance

    graph = with_maintenance(settings, mode).graph.model_copy(update={"upkeep_host": host})
    return settings.model_copy(update={"graph": graph})


def _rebuild(settings: Settings, collection: str, *, on_cluster: bool) -> tuple[float, float]:
    """The rebuild's seconds and its driver's peak RSS, in a fresh process: what earlier steps
    left in this one's heap would hide (or inflate) the rebuild's own peak."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_rebuild_driver, args=(settings, collection, on_cluster, send))
    child.start()
    send.close()  # the child's end only: a child that dies ends `recv` instead of hanging it
    seconds = 0.0
    with RssSampler(lambda: [child.pid] if child.pid else [], interval_s=0.1) as rss:
        with contextlib.suppress(EOFError):
            seconds = float(receive.recv())
        child.join()
    if child.exitcode != 0:
        raise RuntimeError(f"the rebuild of {collection} failed (exit {child.exitcode})")
    return seconds, rss.peak_mb


def _rebuild_driver(settings: Settings, collection: str, on_cluster: bool, send: Any) -> None:
    from rayweave.cluster.services.graph_server import resolve_graph_connection
    from rayweave.cluster.services.runtime import connect
    from rayweave.ingest.pipeline import finalize

    connect(settings)
    resolve_graph_connection(settings)
    started = time.perf_counter()
    finalize(_configured(settings, "full", "process"), collection, rebuild=on_cluster)
    send.send(time.perf_counter() - started)
