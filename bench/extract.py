"""`rayweave bench extract`: graph extraction throughput, and what extraction adds to an ingest.

Two parts, one run:

1. Throughput. The first N extraction units (section chunks other than code: what the ingest's
   `ExtractFacts` stage sends) of the sample corpus or a BEIR folder go through the configured
   extractor (`graph.extractor_concurrency` requests in flight) straight from this process,
   against `--endpoint openai:<url>#<model>` or, by default, the bench's own deterministic
   server (`bench/extract_server.py`, a fixed delay per answer). Figures: chunks/s, requests/s,
   prompt and completion tokens/s, failures.
2. Ingest cost, always against the bench's own server, whose answer time is known: the documents
   holding those chunks are ingested (a) without an extractor, (b) with one, (c) again with one
   into another fresh namespace, where every answer comes from the extraction cache (the server
   counts its requests: 0). Figures: each run's seconds, the server's answer time
   (requests x delay / concurrency, and its measured busy time), the ratio
   (b - a) / answer time (issue 32 asks for at most 1.2: the stage and the cache add little
   over the model) and the time (c) saves against (b). (b) - (c) is the part of the cost that
   waits on answers; (c) - (a) the rest (cache reads, relation edges, the facts collection).
   `rounds` repeats the three, alternating (a) first and (a) last, and prints each figure's
   median and range. One untimed warm-up ingest of one document goes first (`warm_up`).

The ingest part runs on the configured Ray cluster; the bench's server listens on 127.0.0.1, so
the Ray workers must run on this machine (the embedded head does). Every namespace it makes is
dropped afterwards, with its facts collection and the cache rows its answers left. On a small
shared machine the ingest seconds move by several seconds between runs (more under load: the
load average is printed with each run): the ratio means something when the answer time is well
above that (more chunks, a longer `--answer-ms`, more rounds).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from rich.console import Console

from rayweave.bench.extract_server import DEFAULT_ANSWER_MS, ExtractionServer, ServerTally
from rayweave.bench.inputs import write_subset
from rayweave.bench.table import Cell, Figure, format_table
from rayweave.cluster.errors import InputError, SourceError
from rayweave.cluster.settings import Settings
from rayweave.cluster.types import ContentType, Document
from rayweave.graph.llm_extraction import ExtractionStats, LLMExtractor

__all__ = [
    "DEFAULT_CHUNKS",
    "GOAL_RATIO",
    "BenchCorpus",
    "ExtractBenchResult",
    "IngestCost",
    "IngestRun",
    "Spread",
    "Throughput",
    "cost_spread",
    "load_bench_corpus",
    "run_extract_bench",
    "with_extractor",
]

DEFAULT_CHUNKS = 200
GOAL_RATIO = 1.2
"""Issue 32: an ingest with an extractor costs at most the model's answer time plus 20%."""


def _rate(n: float, seconds: float) -> float:
    return n / seconds if seconds > 0 else 0.0


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else math.nan


@dataclass(frozen=True, slots=True, kw_only=True)
class Throughput:
    """N chunks through the extractor from one process at `concurrency` requests in flight."""

    endpoint: str
    chunks: int
    concurrency: int
    seconds: float
    requests: int
    failed_requests: int
    failures: int
    """Chunks whose extraction failed (after the client's retries)."""
    prompt_tokens: int
    completion_tokens: int
    usage_requests: int
    """Requests whose answer reported token usage (the token rates count only these)."""

    @classmethod
    def of(
        cls, endpoint: str, concurrency: int, stats: ExtractionStats, seconds: float
    ) -> Throughput:
        return cls(
            endpoint=endpoint,
            chunks=stats.texts,
            concurrency=concurrency,
            seconds=seconds,
            requests=stats.calls,
            failed_requests=stats.failed_calls,
            failures=stats.failures,
            prompt_tokens=stats.prompt_tokens,
            completion_tokens=stats.completion_tokens,
            usage_requests=stats.usage_calls,
        )

    @property
    def chunks_per_s(self) -> float:
        return _rate(self.chunks, self.seconds)

    @property
    def requests_per_s(self) -> float:
        return _rate(self.requests, self.seconds)

    @property
    def prompt_tokens_per_s(self) -> float:
        return _rate(self.prompt_tokens, self.seconds)

    @property
    def completion_tokens_per_s(self) -> float:
        return _rate(self.completion_tokens, self.seconds)

    def cells(self) -> Mapping[str, Cell]:
        return {
            "endpoint": self.endpoint,
            "concurrency": self.concurrency,
            "chunks": self.chunks,
            "seconds": self.seconds,
            "chunks/s": self.chunks_per_s,
            "requests/s": self.requests_per_s,
            "prompt tok/s": self.prompt_tokens_per_s if self.usage_requests else None,
            "completion tok/s": self.completion_tokens_per_s if self.usage_requests else None,
            "failed chunks": self.failures,
            "failed requests": self.failed_requests,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "chunks_per_s": self.chunks_per_s,
            "requests_per_s": self.requests_per_s,
            "prompt_tokens_per_s": self.prompt_tokens_per_s,
            "completion_tokens_per_s": self.completion_tokens_per_s,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestRun:
    """One ingest of the bench corpus into a fresh namespace, and what the server answered."""

    run: str
    round_no: int = 1
    documents: int
    chunks: int
    """Chunks written (every level)."""
    extraction_chunks: int
    """Section chunks the extractor read (0 without one)."""
    cached: int
    failed: int
    facts: int
    requests: int
    """Requests the bench's server answered during this run."""
    busy_s: float
    """The server's busy time during this run."""
    seconds: float
    load_avg: float = 0.0
    """The machine's 1-minute load average as the run started (figures move with it)."""

    def cells(self) -> Mapping[str, Cell]:
        return {
            "round": self.round_no,
            "run": self.run,
            "docs": self.documents,
            "chunks": self.chunks,
            "extracted chunks": self.extraction_chunks,
            "from cache": self.cached,
            "failed": self.failed,
            "facts": self.facts,
            "LLM requests": self.requests,
            "seconds": self.seconds,
            "load": self.load_avg,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestCost:
    """(a) no extractor, (b) an extractor against the bench's server, (c) the same again into a
    fresh namespace (all answers cached); the server answers each request after `answer_ms`."""

    plain: IngestRun
    extracting: IngestRun
    cached: IngestRun
    answer_ms: float
    concurrency: int

    @property
    def answer_s(self) -> float:
        """The server's answer time for (b) at full concurrency: requests x delay / concurrency."""
        return self.extracting.requests * self.answer_ms / 1000 / self.concurrency

    @property
    def serial_answer_s(self) -> float:
        """requests x delay: the answer time one request at a time."""
        return self.extracting.requests * self.answer_ms / 1000

    @property
    def measured_answer_s(self) -> float:
        """The server's measured busy time during (b): wall time with a request in progress."""
        return self.extracting.busy_s

    @property
    def extraction_s(self) -> float:
        """What the extractor added to the ingest: (b) - (a)."""
        return self.extracting.seconds - self.plain.seconds

    @property
    def ratio(self) -> float:
        """(b - a) over requests x delay / concurrency; issue 32's goal is at most `GOAL_RATIO`."""
        return _ratio(self.extraction_s, self.answer_s)

    @property
    def measured_ratio(self) -> float:
        """(b - a) over the server's measured busy time."""
        return _ratio(self.extraction_s, self.measured_answer_s)

    @property
    def saved_s(self) -> float:
        """What the cache saved the re-ingest: (b) - (c)."""
        return self.extracting.seconds - self.cached.seconds

    @property
    def wait_ratio(self) -> float:
        """(b - c) over the answer time: of the extraction cost, the part the answers cause
        (the rest, (c) - (a), is the stage with every answer cached: facts, edges, lookups)."""
        return _ratio(self.saved_s, self.answer_s)

    @property
    def cache_overhead_s(self) -> float:
        """What the stage costs with every answer cached: (c) - (a)."""
        return self.cached.seconds - self.plain.seconds

    @property
    def meets_goal(self) -> bool:
        return self.ratio <= GOAL_RATIO

    def figures(self, corpus: str) -> list[Figure]:
        rows = [
            ("server answer time, requests x delay / concurrency", self.answer_s, "s"),
            ("server answer time, measured busy", self.measured_answer_s, "s"),
            ("server answer time, requests x delay (serial)", self.serial_answer_s, "s"),
            ("extraction cost (b) - (a)", self.extraction_s, "s"),
            ("(b - a) / answer time", self.ratio, f"x (goal <= {GOAL_RATIO})"),
            ("(b - a) / measured busy time", self.measured_ratio, "x"),
            ("re-ingest saved (b) - (c)", self.saved_s, "s"),
            ("(b - c) / answer time: the part waiting on the model", self.wait_ratio, "x"),
            ("re-ingest (c) / (b)", _ratio(self.cached.seconds, self.extracting.seconds), "x"),
            ("cached stage cost (c) - (a)", self.cache_overhead_s, "s"),
            ("LLM requests of the re-ingest (c)", float(self.cached.requests), "requests"),
        ]
        return [Figure(corpus=corpus, metric=m, value=v, unit=u) for m, v, u in rows]

    def to_dict(self) -> dict[str, Any]:
        return {
            "plain": asdict(self.plain),
            "extracting": asdict(self.extracting),
            "cached": asdict(self.cached),
            "answer_ms": self.answer_ms,
            "concurrency": self.concurrency,
            "answer_s": self.answer_s,
            "measured_answer_s": self.measured_answer_s,
            "serial_answer_s": self.serial_answer_s,
            "extraction_s": self.extraction_s,
            "ratio": _json_number(self.ratio),
            "measured_ratio": _json_number(self.measured_ratio),
            "goal_ratio": GOAL_RATIO,
            "meets_goal": self.meets_goal,
            "saved_s": self.saved_s,
            "wait_ratio": _json_number(self.wait_ratio),
            "cache_overhead_s": self.cache_overhead_s,
        }


def _json_number(value: float) -> float | None:
    return None if math.isnan(value) else value


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtractBenchResult:
    corpus: str
    throughput: Throughput
    costs: tuple[IngestCost, ...]
    """One per round of the ingest part (none without it)."""
    warmup_s: float | None = None
    """The untimed warm-up ingest's seconds (None: no ingest part)."""
    server: ServerTally | None
    """Everything the bench's server answered over the whole run (None: it never started)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "corpus": self.corpus,
            "throughput": self.throughput.to_dict(),
            "ingest": [c.to_dict() for c in self.costs],
            "warmup_s": self.warmup_s,
            "ingest_spread": [s.to_dict() for s in cost_spread(self.costs)] if self.costs else [],
            "server": self.server.to_dict() if self.server is not None else None,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Spread:
    """One figure over the rounds of a run: median, smallest and largest."""

    metric: str
    rounds: int
    median: float
    low: float
    high: float
    unit: str

    def to_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            **{k: _json_number(getattr(self, k)) for k in ("median", "low", "high")},
        }

    def cells(self) -> Mapping[str, Cell]:
        return {
            "metric": self.metric,
            "rounds": self.rounds,
            "median": self.median,
            "low": self.low,
            "high": self.high,
            "unit": self.unit,
        }


def cost_spread(costs: Sequence[IngestCost]) -> list[Spread]:
    """The rounds' figures as median and range (NaN rounds left out; all NaN when none has it)."""
    metrics = (
        ("server answer time, requests x delay / concurrency", lambda c: c.answer_s, "s"),
        ("server answer time, measured busy", lambda c: c.measured_answer_s, "s"),
        ("extraction cost (b) - (a)", lambda c: c.extraction_s, "s"),
        ("(b - a) / answer time", lambda c: c.ratio, f"x (goal <= {GOAL_RATIO})"),
        ("(b - a) / measured busy time", lambda c: c.measured_ratio, "x"),
        ("re-ingest saved (b) - (c)", lambda c: c.saved_s, "s"),
        ("(b - c) / answer time", lambda c: c.wait_ratio, "x"),
        ("cached stage cost (c) - (a)", lambda c: c.cache_overhead_s, "s"),
        ("LLM requests of the re-ingests (c)", lambda c: float(c.cached.requests), "requests"),
    )
    out = []
    for metric, value, unit in metrics:
        kept = sorted(v for v in map(value, costs) if not math.isnan(v))
        mid, low, high = (statistics.median(kept), kept[0], kept[-1]) if kept else (math.nan,) * 3
        out.append(
            Spread(metric=metric, rounds=len(kept), median=mid, low=low, high=high, unit=unit)
        )
    return out


# ------------------------------------------------------------------------------------ corpus


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchCorpus:
    """The chunks the bench extracts and the documents holding them."""

    name: str
    root: Path
    beir: bool
    documents: tuple[Document, ...]
    """The first documents of the corpus, up to the one holding the last chunk in `texts`."""
    texts: tuple[str, ...]
    """The first N extraction units, in corpus order."""

    def write(self, folder: Path) -> Path:
        """The documents as an ingestible corpus under `folder`: a BEIR subset, or the files
        copied in their layout. Returns the path to ingest."""
        if self.beir:
            write_subset(_beir_file(self.root), folder, len(self.documents))
            return folder
        for source in dict.fromkeys(Path(d.source) for d in self.documents):
            try:
                relative = source.resolve().relative_to(self.root.resolve())
            except ValueError:
                relative = Path(source.name)
            target = folder / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
        return folder


def _beir_file(root: Path) -> Path:
    corpus = root / "corpus.jsonl" if root.is_dir() else root
    if not corpus.is_file():
        raise SourceError(f"BEIR corpus not found: {corpus}", path=str(corpus))
    return corpus


def load_bench_corpus(settings: Settings, *, beir: Path | None, chunks: int) -> BenchCorpus:
    """The first `chunks` extraction units of `beir` (a BEIR folder) or of the sample corpus,
    chunked here as the ingest's chunk stage does."""
    from rayweave.ingest.chunking import chunk_documents
    from rayweave.ingest.entity_propagation import ner_sections
    from rayweave.ingest.readers import read_beir_corpus, read_documents
    from rayweave.ingest.samples import sample_corpus
    from rayweave.models.factory import build_tokenizer

    if chunks < 1:
        raise InputError(f"chunks must be >= 1, got {chunks}")
    if beir is not None:
        root = Path(beir).expanduser()
        docs = list(read_beir_corpus(_beir_file(root).parent))
    else:
        root = sample_corpus()
        docs = read_documents([root], settings.ingest).documents
    if not settings.models.clip:  # the ingest leaves images out then
        docs = [d for d in docs if d.content_type is not ContentType.IMAGE]
    batch = chunk_documents(docs, tokens=build_tokenizer(settings.models), settings=settings.ingest)
    by_id = {d.id: d for d in docs}
    texts: list[str] = []
    kept: list[Document] = []
    for chunked in batch.chunked:
        if len(texts) >= chunks:
            break
        units = [chunked.chunks[i].text for i in ner_sections(chunked.chunks)]
        if not units:
            continue
        texts.extend(units)
        kept.append(by_id[chunked.doc_id])
    if not texts:
        raise SourceError(f"{root}: no section chunks to extract from", path=str(root))
    # Documents with no units in between do not matter to extraction; the ingest takes them all.
    order = {d.id: i for i, d in enumerate(docs)}
    last = max(order[d.id] for d in kept)
    return BenchCorpus(
        name=root.name,
        root=root,
        beir=beir is not None,
        documents=tuple(docs[: last + 1]),
        texts=tuple(texts[:chunks]),
    )


# --------------------------------------------------------------------------------- the bench


def with_extractor(settings: Settings, spec: str | None) -> Settings:
    """`settings` with `graph.extractor` set to `spec` (None: no extractor)."""
    graph = settings.graph.model_copy(update={"extractor": spec})
    return settings.model_copy(update={"graph": graph})


def measure_throughput(
    settings: Settings, spec: str, texts: Sequence[str], *, label: str
) -> Throughput:
    """`texts` through the extractor `spec` names, from this process."""
    from rayweave.graph.extractor_factory import build_graph_extractor
    from rayweave.graph.llm_extraction import parse_extractor_spec

    kind, _ = parse_extractor_spec(spec)
    if kind != "openai":
        raise InputError(f"--endpoint {spec!r}: expected openai:<base_url>#<model>")
    extractor = build_graph_extractor(with_extractor(settings, spec))
    assert isinstance(extractor, LLMExtractor)
    try:
        t0 = time.perf_counter()
        extractor.extract(list(texts))
        seconds = time.perf_counter() - t0
    finally:
        extractor.close()
    return Throughput.of(label, extractor.concurrency, extractor.stats, seconds)


def _drop(settings: Settings, collection: str) -> None:
    from rayweave.cluster.vectors.service import vector_store_for
    from rayweave.graph.facts import facts_collection
    from rayweave.ingest.writers import DocumentWriter

    writer = DocumentWriter.open(settings, collection=collection, shared=True)
    try:
        writer.vectors.drop()
        if writer.graph is not None:
            writer.graph.drop_namespace()
    finally:
        writer.close()
    vector_store_for(settings, facts_collection(collection)).drop()


def _forget_answers(settings: Settings, collection: str) -> int:
    """Remove the cache rows the bench's answers left (their keys name a server gone now)."""
    from rayweave.graph.extraction import extraction_key
    from rayweave.graph.extractor_factory import extractor_identity
    from rayweave.graph.store import open_graph_store
    from rayweave.ingest.entity_propagation import ner_sections

    identity = extractor_identity(settings)
    if identity is None:
        return 0
    graph = open_graph_store(settings, namespace=collection)
    try:
        chunks, _ = graph.chunks_and_mentions()
        keys = [extraction_key(identity, chunks[i].text) for i in ner_sections(chunks)]
        return graph.forget_extractions(keys)
    finally:
        graph.close()


def _ingest(
    settings: Settings,
    corpus: Path,
    *,
    beir: bool,
    collection: str,
    run: str,
    round_no: int,
    server: ExtractionServer,
    console: Console,
) -> IngestRun:
    from rayweave.ingest.pipeline import run_ingest

    load = os.getloadavg()[0]
    before = server.tally()
    t0 = time.perf_counter()
    summary = run_ingest(settings, [corpus], beir=beir, collection=collection, console=console)
    seconds = time.perf_counter() - t0
    answered = server.tally() - before
    tally = summary.extraction
    return IngestRun(
        run=run,
        round_no=round_no,
        documents=summary.documents_inserted + summary.documents_updated,
        chunks=summary.chunks,
        extraction_chunks=tally.chunks if tally is not None else 0,
        cached=tally.cached if tally is not None else 0,
        failed=tally.failed if tally is not None else 0,
        facts=tally.facts if tally is not None else 0,
        requests=answered.requests,
        busy_s=answered.busy_s,
        seconds=seconds,
        load_avg=load,
    )


RUNS = {
    "plain": "(a) no extractor",
    "llm": "(b) extractor",
    "cached": "(c) re-ingest, cached",
}


def run_order(round_no: int) -> tuple[str, ...]:
    """(a), (b), (c) in odd rounds, (b), (c), (a) in even ones: a drift in the machine's load
    over a run favours neither side of (b) - (a). (c) always follows (b), whose answers it reads."""
    return ("plain", "llm", "cached") if round_no % 2 else ("llm", "cached", "plain")


def measure_ingest_cost(
    settings: Settings,
    corpus: BenchCorpus,
    server: ExtractionServer,
    *,
    console: Console,
    round_no: int = 1,
) -> IngestCost:
    """One round of (a), (b) and (c) (module docstring), each into a fresh namespace, all
    dropped afterwards with the cache rows the round's answers left. The round asks the server
    under a model name of its own, so no earlier round's cached answers apply."""
    from rayweave.cluster.services.graph_server import resolve_graph_connection
    from rayweave.cluster.services.runtime import connect

    connect(settings)
    resolve_graph_connection(settings)
    base = f"bench-extract-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    extracting = with_extractor(settings, server.spec_for(f"{server.model}-{base}"))
    plans = {
        "plain": (with_extractor(settings, None), f"{base}-plain"),
        "llm": (extracting, f"{base}-llm"),
        "cached": (extracting, f"{base}-cached"),
    }
    made: list[str] = []
    runs: dict[str, IngestRun] = {}
    with tempfile.TemporaryDirectory(prefix="rw-bench-extract-") as tmp:
        path = corpus.write(Path(tmp) / corpus.name)
        try:
            for key in run_order(round_no):
                run_settings, name = plans[key]
                console.print(
                    f"bench extract: round {round_no}, ingest {RUNS[key]} ...", highlight=False
                )
                made.append(name)
                runs[key] = _ingest(
                    run_settings,
                    path,
                    beir=corpus.beir,
                    collection=name,
                    run=RUNS[key],
                    round_no=round_no,
                    server=server,
                    console=console,
                )
        finally:
            if plans["llm"][1] in made:
                _forget_answers(extracting, plans["llm"][1])
            for name in made:
                _drop(settings, name)
    return IngestCost(
        plain=runs["plain"],
        extracting=runs["llm"],
        cached=runs["cached"],
        answer_ms=server.answer_ms,
        concurrency=settings.graph.extractor_concurrency,
    )


def warm_up(
    settings: Settings, corpus: BenchCorpus, server: ExtractionServer, *, console: Console
) -> float:
    """Ingest the corpus's first document with the extractor into a namespace dropped at once,
    untimed: the first ingest of a process also pays its one-time starts (Ray Data in the
    driver, the driver's encoder for synonyms and facts), which would land on whichever measured
    run came first. Returns its seconds."""
    from rayweave.cluster.services.graph_server import resolve_graph_connection
    from rayweave.cluster.services.runtime import connect
    from rayweave.ingest.pipeline import run_ingest

    connect(settings)
    resolve_graph_connection(settings)
    first = replace(corpus, documents=corpus.documents[:1])
    name = f"bench-extract-{os.getpid()}-{uuid.uuid4().hex[:6]}-warmup"
    extracting = with_extractor(settings, server.spec_for(f"{server.model}-{name}"))
    console.print("bench extract: warm-up ingest of one document ...", highlight=False)
    with tempfile.TemporaryDirectory(prefix="rw-bench-extract-") as tmp:
        path = first.write(Path(tmp) / corpus.name)
        try:
            t0 = time.perf_counter()
            run_ingest(extracting, [path], beir=corpus.beir, collection=name, console=console)
            return time.perf_counter() - t0
        finally:
            _forget_answers(extracting, name)
            _drop(settings, name)


def _print_cost(console: Console, corpus: str, costs: Sequence[IngestCost]) -> None:
    runs = sorted(
        (r for c in costs for r in (c.plain, c.extracting, c.cached)),
        key=lambda r: (r.round_no, r.run),
    )
    console.print(format_table(runs), markup=False, highlight=False)
    if len(costs) == 1:
        console.print(format_table(costs[0].figures(corpus)), markup=False, highlight=False)
    else:
        console.print(format_table(cost_spread(costs)), markup=False, highlight=False)


def run_extract_bench(
    settings: Settings,
    *,
    endpoint: str | None = None,
    answer_ms: float = DEFAULT_ANSWER_MS,
    chunks: int = DEFAULT_CHUNKS,
    beir: Path | None = None,
    ingest: bool = True,
    rounds: int = 1,
    console: Console | None = None,
    json_path: Path | None = None,
) -> ExtractBenchResult:
    """Throughput of `chunks` chunks against `endpoint` (default: the bench's own server) and,
    with `ingest`, `rounds` rounds of the ingest cost against the bench's server; prints both,
    returns them."""
    from rich.console import Console as RichConsole

    con = console or RichConsole()
    if answer_ms < 0:
        raise InputError(f"--answer-ms must be >= 0, got {answer_ms}")
    if rounds < 1:
        raise InputError(f"--rounds must be >= 1, got {rounds}")
    corpus = load_bench_corpus(settings, beir=beir, chunks=chunks)
    con.print(
        f"bench extract: {len(corpus.texts)} chunks of {corpus.name} "
        f"({len(corpus.documents)} documents)",
        highlight=False,
    )
    server: ExtractionServer | None = None
    if endpoint is None or ingest:
        # A model name of its own per run: no earlier run's cached answers apply.
        server = ExtractionServer(answer_ms=answer_ms, model=f"bench-{uuid.uuid4().hex[:8]}")
    try:
        if endpoint is None:
            assert server is not None
            label = f"bench server, {answer_ms:g} ms/answer"
            throughput = measure_throughput(settings, server.spec, corpus.texts, label=label)
        else:
            throughput = measure_throughput(settings, endpoint, corpus.texts, label=endpoint)
        con.print(format_table([throughput]), markup=False, highlight=False)
        costs: list[IngestCost] = []
        warmup_s: float | None = None
        if ingest:
            assert server is not None
            warmup_s = warm_up(settings, corpus, server, console=con)
            for round_no in range(1, rounds + 1):
                costs.append(
                    measure_ingest_cost(settings, corpus, server, console=con, round_no=round_no)
                )
            _print_cost(con, corpus.name, costs)
        result = ExtractBenchResult(
            corpus=corpus.name,
            throughput=throughput,
            costs=tuple(costs),
            warmup_s=warmup_s,
            server=server.tally() if server is not None else None,
        )
    finally:
        if server is not None:
            server.close()
    if json_path is not None:
        json_path.write_text(json.dumps(result.to_dict(), indent=2))
    return result
