"""Ranking metrics for offline retrieval evaluation (BEIR-style qrels).

Conventions, so figures compare with trec_eval/BEIR and with each other:

- A document is relevant when its qrels grade is > 0; grades are the gains of nDCG (linear gain,
  as trec_eval's `ndcg_cut` and BEIR use; with binary qrels it makes no difference).
- A ranking is read in order and repeated ids count once, at their first position: a pipeline that
  maps several chunk hits back to one document must not be rewarded twice for it.
- `evaluate` averages over the queries that have at least one relevant document; a query missing
  from the run scores zero rather than being skipped, so a retriever that answers nothing loses.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

Ranking = Sequence[str]
Relevance = Mapping[str, int]


def _top_unique(ranking: Iterable[str], k: int) -> list[str]:
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    seen: set[str] = set()
    top: list[str] = []
    for doc_id in ranking:
        if doc_id in seen:
            continue
        seen.add(doc_id)
        top.append(doc_id)
        if len(top) == k:
            break
    return top


def _relevant(relevance: Relevance) -> set[str]:
    return {doc_id for doc_id, grade in relevance.items() if grade > 0}


def dcg_at_k(ranking: Ranking, relevance: Relevance, k: int) -> float:
    """Discounted cumulative gain: sum of grade / log2(rank + 1) over the top k."""
    return sum(
        max(relevance.get(doc_id, 0), 0) / math.log2(rank + 2)
        for rank, doc_id in enumerate(_top_unique(ranking, k))
    )


def ndcg_at_k(ranking: Ranking, relevance: Relevance, k: int) -> float:
    """DCG@k divided by the DCG of the ideal ranking (grades sorted descending); 0 without
    relevant."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    ideal_gains = sorted((g for g in relevance.values() if g > 0), reverse=True)[:k]
    ideal = sum(g / math.log2(rank + 2) for rank, g in enumerate(ideal_gains))
    if ideal == 0:
        return 0.0
    return dcg_at_k(ranking, relevance, k) / ideal


def mrr_at_k(ranking: Ranking, relevance: Relevance, k: int) -> float:
    """1 / rank of the first relevant document within the top k, else 0."""
    relevant = _relevant(relevance)
    for rank, doc_id in enumerate(_top_unique(ranking, k), start=1):
        if doc_id in relevant:
            return 1.0 / rank
    return 0.0


def recall_at_k(ranking: Ranking, relevance: Relevance, k: int) -> float:
    """Fraction of the query's relevant documents found in the top k (0 without relevant)."""
    relevant = _relevant(relevance)
    if not relevant:
        return 0.0
    return len(relevant.intersection(_top_unique(ranking, k))) / len(relevant)


def all_relevant_at_k(ranking: Ranking, relevance: Relevance, k: int) -> float:
    """1 when every relevant document is in the top k, else 0: multi-hop questions need all hops."""
    relevant = _relevant(relevance)
    if not relevant:
        return 0.0
    return 1.0 if relevant.issubset(_top_unique(ranking, k)) else 0.0


def precision_at_k(ranking: Ranking, relevance: Relevance, k: int) -> float:
    """Relevant documents in the top k divided by k (a short ranking is not rewarded)."""
    relevant = _relevant(relevance)
    return sum(1 for doc_id in _top_unique(ranking, k) if doc_id in relevant) / k


METRICS = {
    "ndcg": ndcg_at_k,
    "mrr": mrr_at_k,
    "recall": recall_at_k,
    "all_relevant": all_relevant_at_k,
    "precision": precision_at_k,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class RetrievalScores:
    """Mean metrics over the evaluated queries, keyed like `"ndcg@10"`."""

    scores: dict[str, float]
    num_queries: int

    def __getitem__(self, key: str) -> float:
        try:
            return self.scores[key]
        except KeyError:
            raise KeyError(f"no metric {key!r}; have {sorted(self.scores)}") from None


def evaluate(
    run: Mapping[str, Ranking],
    qrels: Mapping[str, Relevance],
    *,
    ks: Sequence[int] = (1, 2, 5, 10),
    metrics: Sequence[str] = ("ndcg", "mrr", "recall", "all_relevant", "precision"),
) -> RetrievalScores:
    """Average each metric at each k over the queries in `qrels` that have a relevant document."""
    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise ValueError(f"unknown metrics {unknown}; valid: {sorted(METRICS)}")
    queries = [qid for qid, rel in qrels.items() if _relevant(rel)]
    if not queries:
        raise ValueError("qrels hold no query with a relevant document")
    totals = {f"{m}@{k}": 0.0 for m in metrics for k in ks}
    for qid in queries:
        ranking = run.get(qid, ())
        for m in metrics:
            fn = METRICS[m]
            for k in ks:
                totals[f"{m}@{k}"] += fn(ranking, qrels[qid], k)
    n = len(queries)
    return RetrievalScores(scores={key: value / n for key, value in totals.items()}, num_queries=n)
