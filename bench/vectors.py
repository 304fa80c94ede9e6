"""Vector-store benchmark on clustered synthetic data: upsert rate and query latencies.

Embeddings of real text are clustered (topics), and approximate indexes behave on them very
differently than on isotropic Gaussian noise, where every point is nearly equidistant and HNSW
recall collapses. So the data here are points around topic centres, with sparse vectors drawn
from per-topic vocabularies; queries are fresh samples of the same topics, and dense recall@k
is measured against exact numpy search.

`run_vector_bench(...)` returns one row per adapter and prints a table. Figures are machine-
and load-dependent: compare adapters within one run.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from rayweave.bench.table import format_table
from rayweave.cluster.settings import QdrantSettings
from rayweave.cluster.types import SparseVector
from rayweave.cluster.vectors.store import CollectionSpec, VectorPoint, VectorQuery, VectorStore

Adapter = Literal["edge", "client-memory", "client-local"]
ADAPTERS: tuple[Adapter, ...] = ("edge", "client-memory", "client-local")
_LEVELS = ("document", "section", "proposition")


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusteredData:
    """Points and queries around `n_clusters` topic centres (see module docstring)."""

    dense: np.ndarray  # (n, dim) float32, unit norm
    labels: np.ndarray  # (n,) topic of each point
    sparse: list[SparseVector]
    query_dense: np.ndarray  # (q, dim)
    query_labels: np.ndarray
    query_sparse: list[SparseVector]

    def point_id(self, i: int) -> str:
        return f"chunk-{i:07d}"

    def payload(self, i: int) -> dict[str, Any]:
        return {
            "doc_id": f"doc-{i // 10:06d}",
            "level": _LEVELS[i % 3],
            "topic": int(self.labels[i]),
            "visible": True,
            "text": f"synthetic chunk {i} about topic {int(self.labels[i])}",
        }

    def points(self, start: int = 0, stop: int | None = None) -> list[VectorPoint]:
        stop = len(self.labels) if stop is None else stop
        return [
            VectorPoint(
                id=self.point_id(i),
                payload=self.payload(i),
                dense=self.dense[i],
                sparse=self.sparse[i],
            )
            for i in range(start, stop)
        ]


def _unit(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)
    return out


def clustered_data(
    n_points: int,
    dim: int,
    *,
    n_queries: int = 100,
    n_clusters: int | None = None,
    noise: float = 0.6,
    vocab: int = 30_000,
    topic_terms: int = 40,
    seed: int = 0,
) -> ClusteredData:
    """Unit vectors `centre + noise * N(0, I/dim)` and sparse vectors from per-topic vocabularies.

    With noise 0.6 a point's cosine to its centre is about 0.86 and to another centre about 0;
    each point's sparse vector holds 6 of its topic's terms and 3 random ones, so sparse search
    also separates topics while leaving rank ties rare.
    """
    rng = np.random.default_rng(seed)
    k = n_clusters or max(4, min(256, n_points // 100))
    centres = _unit(rng.standard_normal((k, dim)))
    topic_vocab = rng.choice(vocab, size=(k, topic_terms), replace=k * topic_terms > vocab)

    def sample(
        n: int, n_topic: int, n_random: int
    ) -> tuple[np.ndarray, np.ndarray, list[SparseVector]]:
        labels = rng.integers(0, k, size=n)
        dense = _unit(centres[labels] + noise * rng.standard_normal((n, dim)) / np.sqrt(dim))
        sparse = []
        for label in labels:
            terms = np.concatenate(
                [
                    rng.choice(topic_vocab[label], size=n_topic, replace=False),
                    rng.integers(0, vocab, size=n_random),
                ]
            )
            terms = np.unique(terms)
            weights = rng.uniform(0.2, 2.0, size=terms.size)
            sparse.append(
                SparseVector(indices=tuple(terms.tolist()), values=tuple(weights.round(4).tolist()))
            )
        return dense, labels, sparse

    dense, labels, sparse = sample(n_points, 6, 3)
    qd, ql, qs = sample(n_queries, 3, 0)
    return ClusteredData(
        dense=dense, labels=labels, sparse=sparse, query_dense=qd, query_labels=ql, query_sparse=qs
    )


def open_bench_store(
    adapter: Adapter, settings: QdrantSettings, path: Path, collection: str
) -> VectorStore:
    if adapter not in ADAPTERS:
        raise ValueError(f"unknown adapter {adapter!r}; valid: {', '.join(ADAPTERS)}")
    if adapter == "edge":
        from rayweave.cluster.vectors.qdrant_edge import QdrantEdgeStore

        return QdrantEdgeStore(
            settings.model_copy(update={"backend": "edge"}), path=path, collection=collection
        )
    from rayweave.cluster.vectors.qdrant_client import MEMORY, QdrantClientStore

    url = MEMORY if adapter == "client-memory" else None
    return QdrantClientStore(
        settings.model_copy(update={"backend": "client", "url": url}),
        path=path,
        collection=collection,
    )


def _latencies(run: Callable[[int], object], n: int) -> tuple[float, float]:
    times = []
    for i in range(n):
        t0 = time.perf_counter()
        run(i)
        times.append((time.perf_counter() - t0) * 1000)
    p50, p99 = np.percentile(times, [50, 99])
    return float(p50), float(p99)


def bench_adapter(
    adapter: Adapter, data: ClusteredData, *, settings: QdrantSettings, workdir: Path, k: int = 10
) -> dict[str, Any]:
    n, dim = data.dense.shape
    store = open_bench_store(adapter, settings, workdir / adapter, "bench")
    try:
        store.ensure_collection(CollectionSpec(name="bench", dense_dim=dim))
        batch = settings.upsert_batch
        t0 = time.perf_counter()
        for start in range(0, n, batch):
            store.upsert(data.points(start, min(n, start + batch)))
        upsert_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        store.optimize()
        optimize_s = time.perf_counter() - t0

        nq = len(data.query_labels)
        exact = np.argsort(-(data.query_dense @ data.dense.T), axis=1)[:, :k]
        hits: list[set[str]] = []

        def dense(i: int) -> None:
            found = store.query(VectorQuery(mode="dense", dense=data.query_dense[i], limit=k))
            hits.append({p.id for p in found})

        def sparse(i: int) -> None:
            store.query(VectorQuery(mode="sparse", sparse=data.query_sparse[i], limit=k))

        def hybrid(i: int) -> None:
            store.query(
                VectorQuery(
                    mode="hybrid", dense=data.query_dense[i], sparse=data.query_sparse[i], limit=k
                )
            )

        dense_p50, dense_p99 = _latencies(dense, nq)
        recall = float(
            np.mean([len(h & {data.point_id(j) for j in exact[i]}) / k for i, h in enumerate(hits)])
        )
        sparse_p50, sparse_p99 = _latencies(sparse, nq)
        hybrid_p50, hybrid_p99 = _latencies(hybrid, nq)
        return {
            "adapter": adapter,
            "n_points": n,
            "dim": dim,
            "upsert_per_s": n / upsert_s,
            "optimize_s": optimize_s,
            "dense_p50_ms": dense_p50,
            "dense_p99_ms": dense_p99,
            "dense_recall_at_k": recall,
            "sparse_p50_ms": sparse_p50,
            "sparse_p99_ms": sparse_p99,
            "hybrid_p50_ms": hybrid_p50,
            "hybrid_p99_ms": hybrid_p99,
        }
    finally:
        store.close()


def run_vector_bench(
    n_points: int = 20_000,
    dim: int = 384,
    *,
    adapters: Sequence[Adapter] = ADAPTERS,
    n_queries: int = 200,
    k: int = 10,
    settings: QdrantSettings | None = None,
    workdir: Path | None = None,
    seed: int = 0,
    echo: bool = True,
) -> list[dict[str, Any]]:
    """Upserts/s, optimize time, query p50/p99 (dense, sparse, hybrid RRF) and dense recall@k.

    The edge adapter is measured after `optimize()` (HNSW + quantization per `settings`); the
    client adapters run qdrant-client's local mode, which is always exact.
    """
    settings = settings or QdrantSettings()
    data = clustered_data(n_points, dim, n_queries=n_queries, seed=seed)
    root = Path(tempfile.mkdtemp(prefix="rayweave-vbench-", dir=workdir))
    rows = []
    try:
        for adapter in adapters:
            rows.append(bench_adapter(adapter, data, settings=settings, workdir=root, k=k))
            if echo:
                print(format_table(rows[-1:]), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if echo:
        print(format_table(rows))
    return rows
