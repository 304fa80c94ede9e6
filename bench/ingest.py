"""`rayweave bench ingest`: the whole Ray Data pipeline against a bare one-process script.

`run_ingest_bench` runs a corpus subset through the pipeline and through one plain process that
chunks and `SentenceTransformer.encode`s the same embed texts, and reports docs/s, chunks/s and
peak RSS of each with their ratios; both run in the same invocation so the ratios hold under
machine load that moves the absolute figures.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from rayweave.bench.chunking import sentence_encoder
from rayweave.bench.inputs import write_subset
from rayweave.cluster.progress import progress_bar
from rayweave.cluster.settings import Settings
from rayweave.ingest.chunking import chunk_documents
from rayweave.ingest.readers import read_beir_corpus

__all__ = [
    "IngestBenchRow",
    "RssSampler",
    "RunFigures",
    "bare_baseline",
    "render_ingest_table",
    "run_ingest_bench",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFigures:
    """One way of ingesting one corpus subset: throughput and peak resident memory."""

    documents: int
    chunks: int
    seconds: float
    peak_rss_mb: float
    """Peak of the summed RSS of the processes doing the work (shared pages counted per process)."""
    setup_s: float = 0.0
    """Model loading before the timed part (the baseline only; the pipeline's is inside)."""
    start_rss_mb: float = 0.0
    """The same processes' RSS just before the run (on a shared head: idle workers, Serve)."""
    link_s: float = 0.0
    """Of `seconds`, the pipeline's corpus pass after the writes (`finalize`)."""
    encoder_s: float | None = None
    """The baseline on CUDA only: rayweave's own dense encoder alone on the same texts, the
    ceiling that GPU actors can reach (it sorts by length and packs batches by tokens)."""

    @property
    def docs_per_s(self) -> float:
        return self.documents / self.seconds if self.seconds > 0 else 0.0

    @property
    def chunks_per_s(self) -> float:
        return self.chunks / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestBenchRow:
    corpus: str
    pipeline: RunFigures
    """Ray Data read -> chunk -> dense -> sparse -> entities -> write, plus the graph finalize."""
    baseline: RunFigures
    """One process: chunk + `SentenceTransformer.encode` of the same embed texts."""
    driver_peak_rss_mb: float
    load_avg: float
    stage_stats: str = ""
    """Ray Data's per-operator statistics of the pipeline run (`Dataset.stats()`): where the
    time went, stage by stage."""

    @property
    def throughput_ratio(self) -> float:
        """Pipeline docs/s over baseline docs/s (the pipeline also embeds sparse, extracts
        entities and writes both stores; the baseline only chunks and dense-encodes)."""
        b = self.baseline.docs_per_s
        return self.pipeline.docs_per_s / b if b else math.nan

    @property
    def encoder_ratio(self) -> float:
        """Pipeline docs/s over rayweave's encoder alone (on CUDA), else NaN."""
        seconds = self.baseline.encoder_s
        if not seconds or not self.pipeline.seconds:
            return math.nan
        return seconds / self.pipeline.seconds

    @property
    def memory_ratio(self) -> float:
        b = self.baseline.peak_rss_mb
        return self.pipeline.peak_rss_mb / b if b else math.nan

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["throughput_ratio"] = self.throughput_ratio
        data["encoder_ratio"] = self.encoder_ratio
        data["memory_ratio"] = self.memory_ratio
        return data


class RssSampler:
    """Samples the summed RSS of a changing set of processes on a thread; keeps the peak.

    `pids` is called at every sample, so workers that start (or die) mid-run are followed.
    """

    def __init__(self, pids: Callable[[], Iterable[int]], *, interval_s: float = 0.2) -> None:
        self._pids = pids
        self._interval = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="rss-sampler", daemon=True)
        self.peak_bytes = 0
        self.samples = 0

    def sample(self) -> int:
        import psutil

        total = 0
        for pid in set(self._pids()):
            try:
                total += psutil.Process(pid).memory_info().rss
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        self.peak_bytes = max(self.peak_bytes, total)
        self.samples += 1
        return total

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self.sample()

    def __enter__(self) -> RssSampler:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sample()

    @property
    def peak_mb(self) -> float:
        return self.peak_bytes / 2**20


def bare_baseline(corpus: Path, settings: Settings) -> RunFigures:
    """Read, chunk and dense-encode in this one process, as a script without Ray would; on
    CUDA in fp16, and then rayweave's own encoder alone on the same texts as well.

    Runs in a child process under `run_ingest_bench` so its peak RSS is its own.
    """
    from rayweave.models.factory import build_dense_encoder, build_tokenizer
    from rayweave.models.precision import resolve_device

    device = resolve_device(settings.models.device)
    t0 = time.perf_counter()
    encoder = sentence_encoder(settings.models.dense, device=device)
    tokens = build_tokenizer(settings.models)
    setup = time.perf_counter() - t0
    t1 = time.perf_counter()
    docs = list(read_beir_corpus(corpus))
    batch = chunk_documents(docs, tokens=tokens, settings=settings.ingest)
    texts = [t for cd in batch.chunked for t in cd.embed_texts]
    encoder.encode(texts, batch_size=settings.ingest.batch_size, normalize_embeddings=True)
    seconds = time.perf_counter() - t1
    encoder_s = None
    if device.startswith("cuda"):
        del encoder
        own = build_dense_encoder(settings.models)
        own.encode(texts[:64], kind="document")  # warm-up: CUDA context and kernels
        t2 = time.perf_counter()
        own.encode(texts, kind="document")
        encoder_s = time.perf_counter() - t2
    return RunFigures(
        documents=len(docs),
        chunks=sum(len(cd.chunks) for cd in batch.chunked),
        seconds=seconds,
        peak_rss_mb=0.0,
        setup_s=setup,
        encoder_s=encoder_s,
    )


def _run_baseline(corpus: Path, settings: Settings, interval_s: float) -> RunFigures:
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as pool:
        pids = list(pool._processes)
        future = pool.submit(bare_baseline, corpus, settings)
        pids = list(pool._processes)
        with RssSampler(lambda: pids, interval_s=interval_s) as rss:
            figures = future.result()
    return replace(figures, peak_rss_mb=rss.peak_mb)


def _ray_worker_pids() -> Callable[[], list[int]]:
    """Processes of this node's raylet (the Ray workers and what they spawned)."""
    import psutil
    import ray

    @ray.remote(num_cpus=0)
    def parent() -> int:
        return os.getppid()

    raylet = psutil.Process(ray.get(parent.remote(), timeout=60))

    def pids() -> list[int]:
        try:
            return [p.pid for p in raylet.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    return pids


def _drop(settings: Settings, collection: str) -> None:
    from rayweave.ingest.writers import DocumentWriter

    writer = DocumentWriter.open(settings, collection=collection, shared=True)
    try:
        writer.vectors.drop()
        if writer.graph is not None:
            writer.graph.drop_namespace()
    finally:
        writer.close()


def run_ingest_bench(
    settings: Settings,
    *,
    data_dir: Path,
    limit: int | None = None,
    console: Console | None = None,
    datasets: Sequence[str] = ("hotpotqa-dev",),
    sample_interval_s: float = 0.2,
    json_path: Path | None = None,
) -> list[IngestBenchRow]:
    """Per data set: the first `limit` documents through the whole Ray Data pipeline (into a
    throw-away collection, dropped afterwards) and through a bare one-process baseline; prints
    docs/s, chunks/s, peak RSS and the ratios, returns the rows."""
    import tempfile

    import psutil
    from rich.console import Console as RichConsole

    from rayweave.cluster.services.graph_server import resolve_graph_connection
    from rayweave.cluster.services.runtime import connect
    from rayweave.ingest.pipeline import run_ingest

    con = console or RichConsole()
    rows: list[IngestBenchRow] = []
    driver = psutil.Process()
    for name in datasets:
        with tempfile.TemporaryDirectory(prefix="rw-bench-") as tmp:
            subset = Path(tmp) / name
            n = write_subset(Path(data_dir) / name / "corpus.jsonl", subset, limit)
            con.print(f"{name}: {n} documents; bare baseline ...", highlight=False)
            load = os.getloadavg()[0]
            # One opaque call in a child process: the bar shows it is running and for how long.
            with progress_bar(con, f"bench ingest {name}: bare baseline", 1, unit="run") as done:
                baseline = _run_baseline(subset / "corpus.jsonl", settings, sample_interval_s)
                done(1)
            con.print(f"{name}: Ray Data pipeline ...", highlight=False)
            connect(settings)
            resolve_graph_connection(settings)
            workers = _ray_worker_pids()
            collection = f"bench-ingest-{os.getpid()}"
            try:
                with (
                    RssSampler(
                        lambda w=workers: [driver.pid, *w()],  # type: ignore[misc]
                        interval_s=sample_interval_s,
                    ) as rss,
                    RssSampler(lambda: [driver.pid], interval_s=sample_interval_s) as own,
                ):
                    start_mb = rss.peak_mb
                    t0 = time.perf_counter()
                    summary = run_ingest(
                        settings, [subset], beir=True, collection=collection, console=con
                    )
                    seconds = time.perf_counter() - t0
            finally:
                _drop(settings, collection)
            pipeline = RunFigures(
                documents=summary.documents_inserted + summary.documents_updated,
                chunks=summary.chunks,
                seconds=seconds,
                peak_rss_mb=rss.peak_mb,
                start_rss_mb=start_mb,
                link_s=summary.link_seconds,
            )
            rows.append(
                IngestBenchRow(
                    corpus=name,
                    pipeline=pipeline,
                    baseline=baseline,
                    driver_peak_rss_mb=own.peak_mb,
                    load_avg=load,
                    stage_stats=summary.stage_stats,
                )
            )
    con.print(render_ingest_table(rows))
    if json_path is not None:
        json_path.write_text(json.dumps([r.to_dict() for r in rows], indent=2))
    return rows


def render_ingest_table(rows: Sequence[IngestBenchRow]) -> Table:
    table = Table(
        title=f"ingest bench · Ray Data pipeline vs bare chunk + encode · {os.cpu_count()} CPUs"
    )
    for col in (
        "corpus",
        "run",
        "docs",
        "chunks",
        "seconds",
        "docs/s",
        "chunks/s",
        "peak RSS MiB",
        "RSS at start MiB",
        "model load s",
    ):
        table.add_column(col, justify="left" if col in ("corpus", "run") else "right")
    for r in rows:
        for label, f in (("pipeline", r.pipeline), ("baseline", r.baseline)):
            link = f" (corpus pass {f.link_s:.1f})" if label == "pipeline" else ""
            table.add_row(
                r.corpus,
                label,
                str(f.documents),
                str(f.chunks),
                f"{f.seconds:.1f}{link}",
                f"{f.docs_per_s:.1f}",
                f"{f.chunks_per_s:.1f}",
                f"{f.peak_rss_mb:.0f}",
                f"{f.start_rss_mb:.0f}" if label == "pipeline" else "-",
                f"{f.setup_s:.1f}" if label == "baseline" else "in run",
            )
        table.add_row(
            r.corpus,
            "ratio",
            "",
            "",
            "",
            f"{r.throughput_ratio:.2f}x",
            "",
            f"{r.memory_ratio:.2f}x",
            "",
            f"load {r.load_avg:.1f}",
        )
        if r.baseline.encoder_s:
            alone = r.baseline.encoder_s
            table.add_row(
                r.corpus,
                "encoder alone",
                str(r.baseline.documents),
                str(r.baseline.chunks),
                f"{alone:.1f}",
                f"{r.baseline.documents / alone:.1f}",
                f"{r.baseline.chunks / alone:.1f}",
                "",
                "",
                f"pipeline {r.encoder_ratio:.2f}x",
            )
    return table
