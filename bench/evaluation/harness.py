"""`rayweave eval`: retrieval quality on a BEIR folder, through the real pipeline.

The corpus is ingested by the Ray Data pipeline into its own namespace (collection + graph scope,
named after the data set; `fresh=True` drops it first, otherwise unchanged documents are skipped),
then every query runs through the Serve app's code path in-process (`serve/local.py`). Chunk
hits map back to corpus ids by their document, in rank order. Nothing here reads the qrels before
scoring, and no setting depends on the data set.

`ablation=True` runs every list alone (dense, sparse, the BM25-style sparse retriever of a second
namespace ingested with `models.sparse_kind="bm25"`, and the graph's lists), then the profile
ladder and hierarchical vs flat search, side by side in one run. Differences of the default
against the best single list are paired per query, with a 95% bootstrap interval, so "not
worse" means "not worse beyond noise".
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import random
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from rayweave.bench.evaluation.beir import BeirDataset, load_beir
from rayweave.bench.evaluation.metrics import METRICS
from rayweave.cluster.beir import CorpusIndex
from rayweave.cluster.errors import NotFoundError, SourceError
from rayweave.cluster.progress import Advance, progress_bar
from rayweave.cluster.settings import Settings
from rayweave.serve.classifier import classify_query
from rayweave.serve.schemas import Profile

# (metric, k) pairs reported, in table order.
REPORTED: tuple[tuple[str, int], ...] = (
    ("ndcg", 10),
    ("mrr", 10),
    ("recall", 2),
    ("recall", 5),
    ("recall", 10),
    ("recall", 20),
    ("all_relevant", 5),
    ("precision", 10),
)
SINGLE = ("dense", "sparse", "bm25", "graph")
GRAPH_LISTS = ("graph", "graph-expand", "graph-facts")
CHUNK_DEPTH = 100  # chunk hits fetched per query; enough for 20 distinct documents


@dataclass(frozen=True, slots=True, kw_only=True)
class Variant:
    """One row of the evaluation: a profile, optionally hierarchical or on the BM25 namespace."""

    name: str
    profile: Profile
    hierarchical: bool | None = None
    bm25: bool = False
    # Only these lists are fused (the others still run: graph expansion needs vector seeds).
    only: tuple[str, ...] = ()


def variants(profiles: Sequence[str], *, ablation: bool, default_profile: str) -> list[Variant]:
    if ablation:
        return [
            Variant(name="bm25", profile=Profile.SPARSE, bm25=True),
            Variant(name="sparse", profile=Profile.SPARSE),
            Variant(name="dense", profile=Profile.DENSE),
            Variant(name="graph", profile=Profile.GRAPH, only=GRAPH_LISTS),
            Variant(name="hybrid", profile=Profile.HYBRID),
            Variant(name="hybrid+graph", profile=Profile.GRAPH),
            Variant(name="hybrid+graph+refine", profile=Profile.FULL),
            Variant(
                name=f"{default_profile} hierarchical",
                profile=Profile(default_profile),
                hierarchical=True,
            ),
        ]
    chosen = list(profiles) or [default_profile]
    return [Variant(name=p, profile=Profile(p)) for p in chosen]


def metric_key(metric: str, k: int) -> str:
    return f"{metric}@{k}"


def per_query_scores(ranking: Sequence[str], relevance: Mapping[str, int]) -> dict[str, float]:
    return {metric_key(m, k): METRICS[m](ranking, relevance, k) for m, k in REPORTED}


def document_ranking(doc_ids: Sequence[str]) -> list[str]:
    """Chunk hits -> corpus ids: each document at the rank of its best chunk."""
    return list(dict.fromkeys(doc_ids))


def paired_difference(
    a: Sequence[float], b: Sequence[float], *, rounds: int = 2000, seed: int = 13
) -> tuple[float, float, float]:
    """Mean of a-b with a 95% bootstrap interval over queries (deterministic seed)."""
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    if not diffs:
        return 0.0, 0.0, 0.0
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(rounds))
    return sum(diffs) / n, means[int(0.025 * rounds)], means[int(0.975 * rounds) - 1]


@dataclass(slots=True, kw_only=True)
class VariantResult:
    name: str
    scores: dict[str, float]
    by_type: dict[str, dict[str, float]]
    per_query: dict[str, dict[str, float]] = field(repr=False)
    seconds: float
    degraded: int


@dataclass(slots=True, kw_only=True)
class EvalReport:
    dataset: str
    queries: int
    collection: str
    ingest_seconds: float
    results: list[VariantResult]
    paired: dict[str, dict[str, tuple[float, float, float]]]

    def to_dict(self) -> dict[str, Any]:
        """Everything, per-query scores included: they are what a paired comparison of two
        reports (or of two non-default profiles) needs."""
        return asdict(self)


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-")[:40] or "dataset"


class OnlyLists:
    """A fuser that fuses only some of the lists: one list's ranking through the whole pipeline
    (hydration, folding, the per-document cap), as the ablation's "alone" rows need."""

    def __init__(self, fuser: Any, names: Sequence[str]) -> None:
        self.fuser = fuser
        self.names = frozenset(names)

    async def fuse(self, lists: Mapping[str, list[Any]], plan: Any) -> list[Any]:
        chosen = _only(lists, self.names)
        if chosen and all(plan.weights.get(name, 1.0) == 0 for name in chosen):
            # The plan mutes these lists beside dense (a web-phrased code question); alone,
            # they are the ranking.
            plan = replace(plan, weights={**plan.weights, **dict.fromkeys(chosen, 1.0)})
        return list(await self.fuser.fuse(chosen, plan))


def _only(lists: Mapping[str, list[Any]], names: frozenset[str]) -> dict[str, list[Any]]:
    return {name: hits for name, hits in lists.items() if name in names}


def _pipeline_for(search: Any, variant: Variant) -> Any:
    if not variant.only:
        return search.pipeline
    pipeline = copy.copy(search.pipeline)
    pipeline.fuser = OnlyLists(search.pipeline.fuser, variant.only)
    return pipeline


async def _rank_all(
    search: Any,
    dataset: BeirDataset,
    variant: Variant,
    *,
    advance: Advance,
    concurrency: int = 8,
) -> tuple[dict[str, list[str]], int]:
    semaphore = asyncio.Semaphore(concurrency)
    degraded = 0
    pipeline = _pipeline_for(search, variant)

    async def one(qid: str, text: str) -> tuple[str, list[str]]:
        nonlocal degraded
        async with semaphore:
            outcome = await pipeline.search(
                text, top_k=CHUNK_DEPTH, profile=variant.profile, hierarchical=variant.hierarchical
            )
        degraded += bool(outcome.degraded)
        advance(1)
        return qid, document_ranking([h.doc_id for h in outcome.hits])

    pairs = await asyncio.gather(
        *(one(qid, text) for qid, text in dataset.queries.items() if qid in dataset.qrels)
    )
    return dict(pairs), degraded


def first_queries(data: BeirDataset, limit: int | None) -> BeirDataset:
    """The data set with only its first `limit` judged queries (file order), for quick runs of
    slow profiles; the corpus stays whole, so the ranking task is unchanged."""
    if limit is None:
        return data
    if limit < 1:
        raise ValueError(f"max_queries must be >= 1, got {limit}")
    kept = [qid for qid in data.queries if qid in data.qrels][:limit]
    return replace(
        data,
        queries={q: data.queries[q] for q in kept},
        qrels={q: data.qrels[q] for q in kept},
    )


def _mean(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    if not rows:
        return {}
    return {key: sum(r[key] for r in rows) / len(rows) for key in rows[0]}


def evaluate_variant(
    search: Any, dataset: BeirDataset, variant: Variant, *, console: Console | None = None
) -> VariantResult:
    """Rank every judged query with `variant` and score it; a progress bar counts the queries."""
    started = time.monotonic()
    judged = sum(1 for qid in dataset.queries if qid in dataset.qrels)
    with progress_bar(
        console or Console(quiet=True), f"queries {variant.name}", judged, unit="queries"
    ) as advance:
        run, degraded = asyncio.run(_rank_all(search, dataset, variant, advance=advance))
    per_query = {qid: per_query_scores(ranking, dataset.qrels[qid]) for qid, ranking in run.items()}
    types: dict[str, list[dict[str, float]]] = {}
    for qid, scores in per_query.items():
        types.setdefault(classify_query(dataset.queries[qid]).query_type.value, []).append(scores)
    return VariantResult(
        name=variant.name,
        scores=_mean(list(per_query.values())),
        by_type={t: {**_mean(rows), "n": float(len(rows))} for t, rows in sorted(types.items())},
        per_query=per_query,
        seconds=time.monotonic() - started,
        degraded=degraded,
    )


def _ingest(
    settings: Settings,
    folder: Path,
    collection: str,
    *,
    fresh: bool,
    console: Console,
    index: CorpusIndex | None,
) -> float:
    from rayweave.cluster.vectors.service import vector_store_for
    from rayweave.graph.store import open_graph_store
    from rayweave.ingest.pipeline import run_ingest

    if fresh:
        store = vector_store_for(settings, collection)
        with contextlib.suppress(NotFoundError):
            store.drop()
        graph = open_graph_store(settings, namespace=collection)
        graph.drop_namespace()
        graph.close()
    started = time.monotonic()
    summary = run_ingest(
        settings, [folder], beir=True, collection=collection, console=console, corpus_index=index
    )
    console.print(summary.render(), markup=False, highlight=False)
    return time.monotonic() - started


EVAL_DEADLINE_MS = 120_000


def _without_deadline(settings: Settings) -> Settings:
    """Quality is measured with every retriever answering: a loaded machine would otherwise
    score the deadline, not the ranking (`rayweave bench serve` measures latency)."""
    deadline = max(settings.serve.deadline_ms, EVAL_DEADLINE_MS)
    serve = settings.serve.model_copy(update={"deadline_ms": deadline})
    return settings.model_copy(update={"serve": serve})


def _with_sparse_bm25(settings: Settings) -> Settings:
    models = settings.models.model_copy(update={"sparse_kind": "bm25"})
    return settings.model_copy(update={"models": models})


def run_eval(
    settings: Settings,
    dataset: Path,
    *,
    profiles: Sequence[str] = (),
    ablation: bool = False,
    fresh: bool = False,
    max_queries: int | None = None,
    report_path: Path | None = None,
    console: Console | None = None,
) -> EvalReport:
    from rayweave.cluster.services.runtime import connect
    from rayweave.serve.local import LocalSearch

    console = console or Console()
    settings = _without_deadline(settings)
    if not (dataset / "corpus.jsonl").is_file():
        raise SourceError(f"{dataset} is not a BEIR folder (no corpus.jsonl)", path=str(dataset))
    # The corpus is streamed once for its ids (the judgements are checked against them); the
    # ingest pipeline reads the texts, nothing holds them here.
    data = first_queries(load_beir(dataset, corpus=False), max_queries)
    connect(settings)
    collection = f"eval-{slug(data.name)}"
    chosen = variants(
        profiles, ablation=ablation, default_profile=settings.serve.retrieval.default_profile
    )
    ingest_s = _ingest(
        settings, dataset, collection, fresh=fresh, console=console, index=data.index
    )

    results: list[VariantResult] = []
    search = LocalSearch(settings, collection=collection)
    try:
        for v in chosen:
            if v.bm25:
                continue
            results.append(evaluate_variant(search, data, v, console=console))
    finally:
        search.close()
    if any(v.bm25 for v in chosen):
        bm25_settings = _with_sparse_bm25(settings)
        console.print(
            f"the bm25 profile reads its own namespace {collection}-bm25 (models.sparse_kind="
            "bm25): ingesting what it lacks (the whole corpus the first time)"
        )
        _ingest(
            bm25_settings,
            dataset,
            f"{collection}-bm25",
            fresh=fresh,
            console=console,
            index=data.index,
        )
        bm25_search = LocalSearch(bm25_settings, collection=f"{collection}-bm25")
        try:
            results.insert(
                0,
                evaluate_variant(
                    bm25_search, data, next(v for v in chosen if v.bm25), console=console
                ),
            )
        finally:
            bm25_search.close()

    paired = _paired(results, default=settings.serve.retrieval.default_profile)
    report = EvalReport(
        dataset=data.name,
        queries=len(data.qrels),
        collection=collection,
        ingest_seconds=ingest_s,
        results=results,
        paired=paired,
    )
    console.print(render(report))
    if report_path is not None:
        report_path.write_text(json.dumps(report.to_dict(), indent=2))
    return report


def _paired(
    results: Sequence[VariantResult], *, default: str
) -> dict[str, dict[str, tuple[float, float, float]]]:
    """Default profile minus the best single retriever, per metric (best chosen per metric)."""
    by_name = {r.name: r for r in results}
    base = by_name.get(default)
    singles = [r for r in results if r.name in SINGLE]
    if base is None or not singles:
        return {}
    out: dict[str, dict[str, tuple[float, float, float]]] = {}
    qids = sorted(base.per_query)
    for m, k in REPORTED:
        key = metric_key(m, k)
        best = max(singles, key=lambda r: r.scores[key])
        a = [base.per_query[q][key] for q in qids]
        b = [best.per_query[q][key] for q in qids]
        out[key] = {best.name: paired_difference(a, b)}
    return out


def render(report: EvalReport) -> Table:
    table = Table(
        title=f"{report.dataset}: {report.queries} queries (collection {report.collection})"
    )
    table.add_column("profile")
    for m, k in REPORTED:
        table.add_column(metric_key(m, k).replace("all_relevant", "all-rel"), justify="right")
    table.add_column("s", justify="right")
    for r in report.results:
        table.add_row(
            r.name, *(f"{r.scores[metric_key(m, k)]:.3f}" for m, k in REPORTED), f"{r.seconds:.0f}"
        )
    for key, cells in report.paired.items():
        for name, (mean, lo, hi) in cells.items():
            table.caption = (
                table.caption or ""
            ) + f"{key}: default-{name} {mean:+.3f} [{lo:+.3f},{hi:+.3f}]  "
    return table
