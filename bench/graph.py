"""Graph benchmark: build and write rates, traversal latency, and what the graph adds to recall.

For each BEIR-format corpus (`corpus.jsonl`, `queries.jsonl`, `qrels/test.tsv`), one Section
chunk per record (the title becomes the chunk's title) is built into a graph with
`build_graph` (no extractor), written into a fresh namespace, and queried:

- build: records/s of the pure builder; write: nodes/s and edges/s into the Bolt server
  (everything written, counted with `GraphStore.counts`).
- latency: p50/p99 per traversal, seeds being the top `seeds` records of a small in-process
  TF-IDF ranking (so seeds look like a first-stage retriever's, not like the answers).
- recall: R@k of the TF-IDF ranking alone against the ranking with graph hits merged in
  (the `seeds` first, then the graph's best `graph_slots` new documents, then the rest of the
  lexical ranking), and the "rescue" rate: when the seeds hold some but not all of a query's
  gold documents, how often the graph's first (or first three) new documents is a missing one.
  Sanity figures for the graph's contribution, not retrieval results (Serve fuses properly).

Latencies are noisy when other work shares the machine: compare figures from one run.
"""

from __future__ import annotations

import math
import re
import statistics
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from rayweave.bench.evaluation.beir import load_beir
from rayweave.bench.graph_projection import (
    SyntheticGraph,
    projection_figures,
    random_requests,
    synthetic_projection,
)
from rayweave.bench.table import Figure, format_table
from rayweave.cluster.progress import Advance, progress_bar
from rayweave.cluster.settings import Settings
from rayweave.cluster.types import Chunk, Hit, Level, QueryType
from rayweave.graph.builders import build_graph
from rayweave.graph.profiles import PROFILES
from rayweave.graph.projection import GraphProjection, load_projection
from rayweave.graph.queries import Seed
from rayweave.graph.store import GraphStore
from rayweave.graph.traversal import GraphTraversal
from rayweave.graph.walk import WalkRequest, query_entities, relation_weights, walk

_WORD = re.compile(r"\w+")
DEFAULT_SYNTHETIC = SyntheticGraph()
Add = Callable[[str, float, str], None]
"""Records one figure: (metric, value, unit)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchCorpus:
    """A BEIR set as the graph bench uses it: one Section chunk per record, the queries with a
    relevant document, and their relevant documents."""

    name: str
    chunks: list[Chunk]
    queries: list[tuple[str, str]]
    qrels: dict[str, set[str]]


def load_corpus(folder: Path, *, max_queries: int | None = None) -> BenchCorpus:
    """One Section chunk per corpus record (the title becomes the chunk's title); the queries
    that have a relevant (score > 0) document, in file order, at most `max_queries`."""
    data = load_beir(folder)
    chunks = [
        Chunk(
            id=doc.id,
            doc_id=doc.id,
            level=Level.SECTION,
            text=doc.text,
            title=doc.title,
            position=0,
            source=f"{data.name}/{i}",
        )
        for i, doc in enumerate(data.corpus.values())
    ]
    gold = {q: {d for d, score in rel.items() if score > 0} for q, rel in data.qrels.items()}
    qrels = {q: docs for q, docs in gold.items() if docs}
    queries = [(qid, text) for qid, text in data.queries.items() if qid in qrels]
    if max_queries is not None:
        queries = queries[:max_queries]
    return BenchCorpus(name=data.name, chunks=chunks, queries=queries, qrels=qrels)


class _TfIdf:
    """A tiny lexical first stage to produce realistic seeds (not a retriever we ship)."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self.ids = [c.id for c in chunks]
        self.postings: dict[str, list[tuple[int, float]]] = defaultdict(list)
        for i, c in enumerate(chunks):
            tf = Counter(w.lower() for w in _WORD.findall(f"{c.title} {c.text}"))
            norm = math.sqrt(sum(v * v for v in tf.values())) or 1.0
            for w, v in tf.items():
                self.postings[w].append((i, v / norm))
        n = len(chunks)
        self.idf = {w: math.log(1 + n / len(p)) for w, p in self.postings.items()}

    def top(self, text: str, k: int) -> list[tuple[str, float]]:
        scores: dict[int, float] = defaultdict(float)
        for w in set(x.lower() for x in _WORD.findall(text)):
            idf = self.idf.get(w)
            if idf is None:
                continue
            for i, v in self.postings[w]:
                scores[i] += v * idf
        best = sorted(scores.items(), key=lambda kv: -kv[1])[:k]
        return [(self.ids[i], s) for i, s in best]


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    idx = min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))
    return ordered[idx]


def _recall(ranked_docs: Sequence[str], gold: set[str], k: int) -> float:
    return len(set(ranked_docs[:k]) & gold) / len(gold) if gold else 0.0


def run_graph_bench(
    settings: Settings,
    *,
    data_dir: Path,
    corpora: Sequence[str] = ("hotpotqa-dev", "cosqa-dev"),
    max_queries: int | None = None,
    seeds: int = 5,
    recall_k: int = 10,
    graph_slots: int = 3,
    keep: bool = False,
    synthetic: SyntheticGraph | None = DEFAULT_SYNTHETIC,
    log: Callable[[str], None] | None = None,
    console: Console | None = None,
) -> list[Figure]:
    """Run the benchmark (see module docstring) and return its figures; with a `console`, each
    corpus gets a progress bar (build, writes, every timed traversal) and the table is printed."""
    rows: list[Figure] = []
    con = console or Console(quiet=True)
    say = log or (lambda _msg: None)
    if synthetic is not None:
        rows.extend(_bench_synthetic(synthetic, settings, say))
    base = GraphStore.open(settings, namespace="bench")
    try:
        for name in corpora:
            corpus = load_corpus(Path(data_dir) / name, max_queries=max_queries)
            store = base.for_namespace(f"bench-{name}-{uuid.uuid4().hex[:8]}")
            try:
                steps = 3 + len(_CASES) * len(corpus.queries)
                with progress_bar(con, f"bench graph {name}", steps, unit="steps") as advance:
                    rows.extend(
                        _bench_corpus(
                            corpus,
                            store,
                            settings,
                            seeds=seeds,
                            recall_k=recall_k,
                            graph_slots=graph_slots,
                            say=say,
                            advance=advance,
                        )
                    )
            finally:
                if not keep:
                    store.drop_namespace()
                store.close()
    finally:
        base.close()
    if console is not None:
        console.print(format_table(rows), markup=False, highlight=False)
    return rows


def _recorder(corpus: str, out: list[Figure], say: Callable[[str], None]) -> Add:
    def add(metric: str, value: float, unit: str) -> None:
        out.append(Figure(corpus=corpus, metric=metric, value=round(value, 3), unit=unit))
        say(f"{corpus:14s} {metric:32s} {value:10.2f} {unit}")

    return add


def _bench_synthetic(
    shape: SyntheticGraph, settings: Settings, say: Callable[[str], None]
) -> list[Figure]:
    out: list[Figure] = []
    add = _recorder(f"synthetic-{shape.passages // 1000}k", out, say)
    started = time.perf_counter()
    projection = synthetic_projection(shape)
    projection.built_s = time.perf_counter() - started
    projection_figures(projection, random_requests(projection, 200), settings.graph, add)
    return out


_CASES = (
    "expand",
    "entity_search",
    "bridge",
    "search general",
    "search multi_hop",
    "ppr multi_hop",
)
_SCORED = ("search multi_hop", "ppr multi_hop")
"""The cases whose hits are merged into the lexical ranking for the recall figures."""

Case = Callable[[str, list[Seed]], list[Hit]]


def _build_and_write(
    corpus: BenchCorpus, store: GraphStore, settings: Settings, add: Add, advance: Advance
) -> None:
    """Build rate of the pure builder, then write rates into the Bolt server."""
    n = len(corpus.chunks)
    add("records", n, "")
    started = time.perf_counter()
    batch = build_graph(corpus.chunks, settings=settings.graph)
    build_s = time.perf_counter() - started
    advance(1)
    add("build_graph", n / build_s, "records/s")

    started = time.perf_counter()
    store.write_chunks(corpus.chunks)
    chunk_s = time.perf_counter() - started
    advance(1)
    started = time.perf_counter()
    store.write_batch(batch)
    batch_s = time.perf_counter() - started
    advance(1)
    counts = store.counts()
    nodes = sum(counts.nodes.values())
    edges = sum(counts.relationships.values())
    add("nodes", nodes, "")
    add("edges", edges, "")
    add("write nodes (chunks+entities)", nodes / (chunk_s + batch_s), "nodes/s")
    add("write edges (all)", edges / (chunk_s + batch_s), "edges/s")
    add("write_chunks", n / chunk_s, "chunks/s")
    add("write_batch", (len(batch.entities) + len(batch.edges)) / batch_s, "rows/s")


@dataclass(slots=True)
class _Recall:
    """What the graph adds to the lexical ranking, per scored case (see module docstring)."""

    ks: list[int]
    recall_k: int
    seeds: int
    graph_slots: int
    merged: dict[tuple[str, int], list[float]] = field(default_factory=dict)
    lexical: dict[int, list[float]] = field(default_factory=dict)
    all_lexical: list[float] = field(default_factory=list)
    all_merged: dict[str, list[float]] = field(default_factory=dict)
    rescue: dict[tuple[str, int], list[float]] = field(default_factory=dict)

    def observe(self, case: str, lexical: list[str], hits: Sequence[Hit], gold: set[str]) -> None:
        seed_docs = lexical[: self.seeds]
        graph_docs = [d for d in dict.fromkeys(h.doc_id for h in hits) if d not in seed_docs]
        merged = list(dict.fromkeys(seed_docs + graph_docs[: self.graph_slots] + lexical))
        first = case == _SCORED[0]  # the lexical figures are the same for every case
        for k in self.ks:
            if first:
                self.lexical.setdefault(k, []).append(_recall(lexical, gold, k))
            self.merged.setdefault((case, k), []).append(_recall(merged, gold, k))
        if first:
            self.all_lexical.append(float(gold <= set(lexical[: self.recall_k])))
        self.all_merged.setdefault(case, []).append(float(gold <= set(merged[: self.recall_k])))
        found = gold & set(seed_docs)
        if found and found != gold:
            missing = gold - found
            for top in (1, 3):
                hit = bool(missing & set(graph_docs[:top]))
                self.rescue.setdefault((case, top), []).append(float(hit))

    def report(self, add: Add) -> None:
        if self.all_lexical:
            for k in self.ks:
                add(f"tfidf R@{k}", statistics.fmean(self.lexical[k]), "")
            add(f"tfidf all gold in top{self.recall_k}", statistics.fmean(self.all_lexical), "")
        for case in _SCORED:
            tag = case.split()[0]
            for k in self.ks:
                if self.merged.get((case, k)):
                    add(f"tfidf+{tag} R@{k}", statistics.fmean(self.merged[case, k]), "")
            if self.all_merged.get(case):
                top = f"all gold in top{self.recall_k}"
                add(f"tfidf+{tag} {top}", statistics.fmean(self.all_merged[case]), "")
            rescued = self.rescue.get((case, 1))
            if rescued:
                add(f"{tag}: queries, some gold in seeds", len(rescued), "")
                add(f"{tag}: missing gold = 1st new doc", statistics.fmean(rescued), "")
                add(
                    f"{tag}: missing gold in 3 new docs", statistics.fmean(self.rescue[case, 3]), ""
                )


def _cases(
    traversal: GraphTraversal, projection: GraphProjection, settings: Settings
) -> dict[str, Case]:
    """Every timed traversal, by name (in `_CASES` order)."""
    weights = relation_weights(PROFILES[QueryType.MULTI_HOP])

    def ppr(text: str, seed_list: list[Seed]) -> list[Hit]:
        scored = [(s.chunk_id, s.score) for s in seed_list]
        request = walk_request(projection, text, scored, settings, weights)
        hits: list[Hit] = walk(
            projection, request, settings.graph, limit=settings.graph.max_results
        )
        return hits

    cases: dict[str, Case] = {
        "expand": lambda text, s: traversal.expand(s),
        "entity_search": lambda text, s: traversal.entity_search(text),
        "bridge": lambda text, s: traversal.bridge(s),
        "search general": lambda text, s: traversal.search(
            query_text=text, seeds=s, query_type=QueryType.GENERAL
        ),
        "search multi_hop": lambda text, s: traversal.search(
            query_text=text, seeds=s, query_type=QueryType.MULTI_HOP
        ),
        "ppr multi_hop": ppr,
    }
    assert tuple(cases) == _CASES  # the progress bar's step count
    return cases


def walk_request(
    projection: GraphProjection,
    text: str,
    scored: Sequence[tuple[str, float]],
    settings: Settings,
    weights: dict[str, tuple[float, float]],
) -> WalkRequest:
    """A query's walk: its entities in the gazetteer and its first-stage hits as seeds."""
    return WalkRequest(
        entities=query_entities(projection, text, (), settings.graph.gazetteer_max_ngram),
        seeds={projection.chunk_rows[c]: sc for c, sc in scored if c in projection.chunk_rows},
        weights=weights,
    )


def _seed_list(top: Sequence[tuple[str, float]], seeds: int) -> list[Seed]:
    return [Seed(chunk_id=c, score=sc, level=Level.SECTION) for c, sc in top[:seeds]]


def _round_trip_ms(store: GraphStore, times: int = 50) -> float:
    ping = []
    for _ in range(times):
        started = time.perf_counter()
        store.read("RETURN 1 AS ok")
        ping.append((time.perf_counter() - started) * 1000.0)
    return statistics.median(ping)


def _bench_corpus(
    corpus: BenchCorpus,
    store: GraphStore,
    settings: Settings,
    *,
    seeds: int,
    recall_k: int,
    graph_slots: int,
    say: Callable[[str], None],
    advance: Advance,
) -> list[Figure]:
    out: list[Figure] = []
    add = _recorder(corpus.name, out, say)
    _build_and_write(corpus, store, settings, add, advance)

    index = _TfIdf(corpus.chunks)
    first_stage = {qid: index.top(text, max(recall_k, seeds)) for qid, text in corpus.queries}
    traversal = GraphTraversal(store, settings.graph)
    started = time.perf_counter()
    projection = load_projection(store)
    projection.built_s = time.perf_counter() - started
    weights = relation_weights(PROFILES[QueryType.MULTI_HOP])
    requests = [
        walk_request(projection, text, first_stage[qid][:seeds], settings, weights)
        for qid, text in corpus.queries
    ]
    projection_figures(projection, requests, settings.graph, add)
    try:
        recall = _Recall(
            ks=sorted({5, recall_k}), recall_k=recall_k, seeds=seeds, graph_slots=graph_slots
        )
        add("round trip (RETURN 1) p50", _round_trip_ms(store), "ms")
        for case, fn in _cases(traversal, projection, settings).items():
            # Warm the driver's pool and the server's caches before timing.
            for qid, text in corpus.queries[:3]:
                fn(text, _seed_list(first_stage[qid], seeds))
            latencies = []
            for qid, text in corpus.queries:
                top = first_stage[qid]
                seed_list = _seed_list(top, seeds)
                started = time.perf_counter()
                hits = fn(text, seed_list)
                latencies.append((time.perf_counter() - started) * 1000.0)
                advance(1)
                if case in _SCORED and qid in corpus.qrels:
                    recall.observe(case, [c for c, _ in top], hits, corpus.qrels[qid])
            add(f"{case} p50", statistics.median(latencies), "ms")
            add(f"{case} p99", _percentile(latencies, 0.99), "ms")
        recall.report(add)
    finally:
        traversal.close()
    return out
