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

import csv
import json
import math
import re
import statistics
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from rayweave.cluster.beir import iter_corpus
from rayweave.cluster.errors import SourceError
from rayweave.cluster.progress import Advance, progress_bar
from rayweave.cluster.settings import Settings
from rayweave.cluster.types import Chunk, Hit, Level
from rayweave.graph.bench_projection import (
    SyntheticGraph,
    projection_figures,
    random_requests,
    synthetic_projection,
)
from rayweave.graph.builders import build_graph
from rayweave.graph.projection import load_projection
from rayweave.graph.store import GraphStore
from rayweave.graph.traversal import PROFILES, GraphTraversal, QueryType, Seed
from rayweave.graph.walk import WalkRequest, query_entities, relation_weights, walk

_WORD = re.compile(r"\w+")
DEFAULT_SYNTHETIC = SyntheticGraph()


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchRow:
    corpus: str
    metric: str
    value: float
    unit: str


@dataclass(frozen=True, slots=True, kw_only=True)
class _Corpus:
    name: str
    chunks: list[Chunk]
    queries: list[tuple[str, str]]
    qrels: dict[str, set[str]]


def load_beir(folder: Path, *, max_queries: int | None = None) -> _Corpus:
    """One Section chunk per corpus record; queries that have qrels."""
    corpus_file = folder / "corpus.jsonl"
    if not corpus_file.is_file():
        raise SourceError(
            f"{corpus_file} not found (expected a BEIR folder)", path=str(corpus_file)
        )
    chunks = [
        Chunk(
            id=rec.id,
            doc_id=rec.id,
            level=Level.SECTION,
            text=rec.text,
            title=rec.title,
            position=0,
            source=f"{folder.name}/{i}",
        )
        for i, (_lineno, rec) in enumerate(iter_corpus(corpus_file))
    ]
    qrels: dict[str, set[str]] = defaultdict(set)
    qrel_file = folder / "qrels" / "test.tsv"
    if qrel_file.is_file():
        with qrel_file.open(encoding="utf-8") as handle:
            for row in csv.DictReader(handle, delimiter="\t"):
                if float(row.get("score", 1) or 0) > 0:
                    qrels[row["query-id"]].add(row["corpus-id"])
    queries = []
    with (folder / "queries.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            rec = json.loads(line)
            if not qrels or rec["_id"] in qrels:
                queries.append((str(rec["_id"]), str(rec["text"])))
    if max_queries is not None:
        queries = queries[:max_queries]
    return _Corpus(name=folder.name, chunks=chunks, queries=queries, qrels=dict(qrels))


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
) -> list[BenchRow]:
    """Run the benchmark (see module docstring) and return its figures; with a `console`, each
    corpus gets a progress bar (build, writes, every timed traversal) and the table is printed."""
    rows: list[BenchRow] = []
    con = console or Console(quiet=True)
    say = log or (lambda _msg: None)
    if synthetic is not None:
        rows.extend(_bench_synthetic(synthetic, settings, say))
    base = GraphStore.open(settings, namespace="bench")
    try:
        for name in corpora:
            corpus = load_beir(Path(data_dir) / name, max_queries=max_queries)
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


def _bench_synthetic(
    shape: SyntheticGraph, settings: Settings, say: Callable[[str], None]
) -> list[BenchRow]:
    out: list[BenchRow] = []
    name = f"synthetic-{shape.passages // 1000}k"

    def add(metric: str, value: float, unit: str) -> None:
        out.append(BenchRow(corpus=name, metric=metric, value=round(value, 3), unit=unit))
        say(f"{name:14s} {metric:32s} {value:10.2f} {unit}")

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


def _bench_corpus(
    corpus: _Corpus,
    store: GraphStore,
    settings: Settings,
    *,
    seeds: int,
    recall_k: int,
    graph_slots: int,
    say: Callable[[str], None],
    advance: Advance,
) -> list[BenchRow]:
    out: list[BenchRow] = []

    def add(metric: str, value: float, unit: str) -> None:
        out.append(BenchRow(corpus=corpus.name, metric=metric, value=round(value, 3), unit=unit))
        say(f"{corpus.name:14s} {metric:32s} {value:10.2f} {unit}")

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

    index = _TfIdf(corpus.chunks)
    first_stage = {qid: index.top(text, max(recall_k, seeds)) for qid, text in corpus.queries}
    traversal = GraphTraversal(store, settings.graph)
    started = time.perf_counter()
    projection = load_projection(store)
    projection.built_s = time.perf_counter() - started
    walk_weights = relation_weights(PROFILES[QueryType.MULTI_HOP])

    def request_for(text: str, scored: Sequence[tuple[str, float]]) -> WalkRequest:
        return WalkRequest(
            entities=query_entities(projection, text, (), settings.graph.gazetteer_max_ngram),
            seeds={projection.chunk_rows[c]: sc for c, sc in scored if c in projection.chunk_rows},
            weights=walk_weights,
        )

    def ppr(text: str, seed_list: list[Seed]) -> list[Hit]:
        request = request_for(text, [(s.chunk_id, s.score) for s in seed_list])
        return walk(projection, request, settings.graph, limit=settings.graph.max_results)

    requests = [request_for(text, first_stage[qid][:seeds]) for qid, text in corpus.queries]
    projection_figures(projection, requests, settings.graph, add)
    try:
        cases: dict[str, Callable[[str, list[Seed]], list[Hit]]] = {
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
        ks = sorted({5, recall_k})
        scored = ("search multi_hop", "ppr multi_hop")
        merged_recall: dict[tuple[str, int], list[float]] = {(c, k): [] for c in scored for k in ks}
        seed_recall: dict[int, list[float]] = {k: [] for k in ks}
        both_lexical: list[float] = []
        both_merged: dict[str, list[float]] = {c: [] for c in scored}
        rescue: dict[tuple[str, int], list[float]] = {(c, k): [] for c in scored for k in (1, 3)}
        ping = []
        for _ in range(50):
            started = time.perf_counter()
            store.read("RETURN 1 AS ok")
            ping.append((time.perf_counter() - started) * 1000.0)
        add("round trip (RETURN 1) p50", statistics.median(ping), "ms")
        for case, fn in cases.items():
            # Warm the driver's pool and the server's caches before timing.
            for qid, text in corpus.queries[:3]:
                fn(
                    text,
                    [
                        Seed(chunk_id=c, score=sc, level=Level.SECTION)
                        for c, sc in first_stage[qid][:seeds]
                    ],
                )
            latencies = []
            for qid, text in corpus.queries:
                top = first_stage[qid]
                seed_list = [
                    Seed(chunk_id=c, score=sc, level=Level.SECTION) for c, sc in top[:seeds]
                ]
                started = time.perf_counter()
                hits = fn(text, seed_list)
                latencies.append((time.perf_counter() - started) * 1000.0)
                advance(1)
                if case in scored and qid in corpus.qrels:
                    gold = corpus.qrels[qid]
                    lexical = [c for c, _ in top]
                    seed_docs = lexical[:seeds]
                    graph_docs = [
                        d for d in dict.fromkeys(h.doc_id for h in hits) if d not in seed_docs
                    ]
                    merged = list(dict.fromkeys(seed_docs + graph_docs[:graph_slots] + lexical))
                    for k in ks:
                        if case == scored[0]:
                            seed_recall[k].append(_recall(lexical, gold, k))
                        merged_recall[case, k].append(_recall(merged, gold, k))
                    if case == scored[0]:
                        both_lexical.append(float(gold <= set(lexical[:recall_k])))
                    both_merged[case].append(float(gold <= set(merged[:recall_k])))
                    found = gold & set(seed_docs)
                    if found and found != gold:
                        missing = gold - found
                        rescue[case, 1].append(float(bool(missing & set(graph_docs[:1]))))
                        rescue[case, 3].append(float(bool(missing & set(graph_docs[:3]))))
            add(f"{case} p50", statistics.median(latencies), "ms")
            add(f"{case} p99", _percentile(latencies, 0.99), "ms")
        if both_lexical:
            for k in ks:
                add(f"tfidf R@{k}", statistics.fmean(seed_recall[k]), "")
            add(f"tfidf all gold in top{recall_k}", statistics.fmean(both_lexical), "")
        for case in scored:
            tag = case.split()[0]
            for k in ks:
                if merged_recall[case, k]:
                    add(f"tfidf+{tag} R@{k}", statistics.fmean(merged_recall[case, k]), "")
            if both_merged[case]:
                add(
                    f"tfidf+{tag} all gold in top{recall_k}",
                    statistics.fmean(both_merged[case]),
                    "",
                )
            if rescue[case, 1]:
                add(f"{tag}: queries, some gold in seeds", len(rescue[case, 1]), "")
                add(f"{tag}: missing gold = 1st new doc", statistics.fmean(rescue[case, 1]), "")
                add(f"{tag}: missing gold in 3 new docs", statistics.fmean(rescue[case, 3]), "")
    finally:
        traversal.close()
    return out


def format_table(rows: Sequence[BenchRow]) -> str:
    lines = [f"{'corpus':14s} {'metric':34s} {'value':>12s} unit", "-" * 70]
    lines += [f"{r.corpus:14s} {r.metric:34s} {r.value:12.2f} {r.unit}" for r in rows]
    return "\n".join(lines)
