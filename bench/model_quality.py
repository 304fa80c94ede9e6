"""Retrieval quality for `rayweave bench models`: nDCG@10 of exact brute-force search.

Documents are embedded whole (`title + " " + text`) and searched exhaustively over the BEIR dev
sets, as in the data README, so fp32 rows reproduce its reference figures; the quantization rows
score the fp32 vectors as Qdrant would store them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rayweave.bench.evaluation.beir import BeirDataset
from rayweave.bench.evaluation.metrics import evaluate
from rayweave.bench.model_measure import ModelRow
from rayweave.cluster.types import SparseVector


def subset(ds: BeirDataset, limit: int | None) -> BeirDataset:
    """At most `limit` documents: the judged documents of the first queries (whole queries only),
    filled up with unjudged documents in file order. nDCG on a subset is only comparable between
    variants of the same run, not with the README's whole-corpus figures."""
    if limit is None or limit >= len(ds.corpus):
        return ds
    keep: list[str] = []
    chosen: set[str] = set()
    queries: dict[str, str] = {}
    for qid, text in ds.queries.items():
        rel = [d for d in ds.qrels[qid] if d not in chosen]
        if len(keep) + len(rel) > limit // 2:
            break
        keep.extend(rel)
        chosen.update(rel)
        queries[qid] = text
    for doc_id in ds.corpus:
        if len(keep) >= limit:
            break
        if doc_id not in chosen:
            keep.append(doc_id)
            chosen.add(doc_id)
    return BeirDataset(
        name=ds.name,
        corpus={d: ds.corpus[d] for d in keep},
        queries=queries,
        qrels={q: ds.qrels[q] for q in queries},
    )


def dense_ndcg(
    ds: BeirDataset, doc_vecs: np.ndarray, query_vecs: np.ndarray, *, k: int = 10
) -> float:
    """nDCG@k of exact inner-product search (vectors are unit length: cosine)."""
    doc_ids = list(ds.corpus)
    scores = query_vecs @ doc_vecs.T
    return ndcg_from_scores(ds, doc_ids, scores, k=k)


def sparse_ndcg(
    ds: BeirDataset,
    docs: Sequence[SparseVector],
    queries: Sequence[SparseVector],
    *,
    idf: bool = False,
    k: int = 10,
) -> float:
    """nDCG@k of exact sparse dot-product search; `idf=True` weights query terms the way Qdrant's
    IDF modifier does: `ln(1 + (N - n + 0.5) / (n + 0.5))`."""
    from scipy import sparse as sp

    vocab: dict[int, int] = {}

    def matrix(vectors: Sequence[SparseVector]) -> Any:
        rows, cols, vals = [], [], []
        for r, v in enumerate(vectors):
            for i, w in zip(v.indices, v.values, strict=True):
                rows.append(r)
                cols.append(vocab.setdefault(i, len(vocab)))
                vals.append(w)
        return rows, cols, vals

    d_rows, d_cols, d_vals = matrix(docs)
    q_rows, q_cols, q_vals = matrix(queries)
    shape_d = (len(docs), len(vocab))
    doc_m = sp.csr_matrix((d_vals, (d_rows, d_cols)), shape=shape_d)
    q_m = sp.csr_matrix((q_vals, (q_rows, q_cols)), shape=(len(queries), len(vocab)))
    if idf:
        n_docs = doc_m.shape[0]
        df = np.bincount(doc_m.indices, minlength=len(vocab))
        weights = np.log1p((n_docs - df + 0.5) / (df + 0.5))
        q_m = q_m @ sp.diags(weights)
    scores = (q_m @ doc_m.T).toarray()
    return ndcg_from_scores(ds, list(ds.corpus), scores, k=k)


def ndcg_from_scores(ds: BeirDataset, doc_ids: list[str], scores: np.ndarray, *, k: int) -> float:
    top = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    run = {qid: [doc_ids[j] for j in top[i]] for i, qid in enumerate(ds.queries)}
    return float(evaluate(run, ds.qrels, ks=(k,), metrics=("ndcg",))[f"ndcg@{k}"])


def vector_quantization_rows(
    ds: BeirDataset,
    docs: np.ndarray,
    queries: np.ndarray,
    *,
    model: str,
    say: Callable[[str], None],
) -> list[ModelRow]:
    """nDCG@10 of the fp32 baseline vectors stored as Qdrant would store them (no timing)."""
    from rayweave.models.quantize import Int8Calibration, binary_scores, int8_scores

    doc_ids = list(ds.corpus)
    calibration = Int8Calibration.fit(docs, quantile=0.99)
    schemes: list[tuple[str, np.ndarray, bool]] = [
        ("float32 vectors", queries @ docs.T, True),
        ("int8 scalar (quantile 0.99)", int8_scores(queries, docs, calibration), False),
        ("binary (sign bits)", binary_scores(queries, docs), False),
        ("binary + rescore (oversampling 4)", binary_scores(queries, docs, rescore=True), False),
    ]
    rows = []
    for label, scores, base in schemes:
        rows.append(
            ModelRow(
                section="vectors",
                dataset=ds.name,
                model=model,
                variant=label,
                texts=len(doc_ids),
                tokens=0,
                seconds=0.0,
                ndcg10=ndcg_from_scores(ds, doc_ids, scores, k=10),
                baseline=base,
            )
        )
        say(f"vectors {ds.name:13} {label:44} nDCG@10 {rows[-1].ndcg10:.4f}")
    return rows
