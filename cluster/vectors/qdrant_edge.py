"""`VectorStore` on qdrant-edge-py: Qdrant's own engine running inside this process.

One `EdgeShard` per collection under `<path>/<collection>`: HNSW and quantization as a Qdrant
server builds them, persistent, and no server to run. The shard's folder is locked by the
process that opens it; other processes reach it through `rayweave.cluster.vectors.service`.

Durability: every update goes to the engine's write-ahead log (which alone survives a killed
process), and no write call returns before a flush has covered it (which also survives an OS
crash). A flush costs 50-350 ms whatever its size, so concurrent writers share one: a writer
whose update an in-progress or later flush already covers does not flush again (group commit).

Reads run in parallel (the engine releases the GIL and searches on its own thread pool);
updates and the optimizer are serialised by one lock, flushes by another.
"""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path
from typing import Any

import numpy as np
import qdrant_edge as qe

from rayweave.cluster.errors import NotFoundError, VectorStoreError
from rayweave.cluster.settings import QdrantSettings
from rayweave.cluster.types import SparseVector
from rayweave.cluster.vectors.points import Scalar, check_shape
from rayweave.cluster.vectors.qdrant_core import QdrantStoreCore, in_use_error
from rayweave.cluster.vectors.qdrant_dialect import collection_config, payload_indexes
from rayweave.cluster.vectors.store import DENSE, IMAGE, SPARSE, CollectionSpec

_CONFIG_FILE = "edge_config.json"
_INDEX_KINDS = {"keyword": qe.PayloadSchemaType.Keyword, "bool": qe.PayloadSchemaType.Bool}


class QdrantEdgeStore(QdrantStoreCore):
    """One collection in an in-process Qdrant Edge shard (see module docstring)."""

    ENGINE = "qdrant-edge"

    def __init__(self, settings: QdrantSettings, *, path: Path, collection: str) -> None:
        super().__init__(settings, collection, EdgeDialect())
        self._folder = Path(path).expanduser() / collection
        # Group commit: `_applied` counts updates, `_flushed` the updates a finished flush covers.
        self._flush_lock = threading.Lock()
        self._applied = 0
        self._flushed = 0
        self._shard: qe.EdgeShard | None = None

    def __repr__(self) -> str:
        return f"QdrantEdgeStore({self._name!r} at {self._folder})"

    # -- lifecycle ------------------------------------------------------------------------------

    def ensure_collection(self, spec: CollectionSpec) -> None:
        self._check_name(spec)
        with self._lock:
            self._check_open()
            if self._shard is None and self._exists():
                check_shape(self._persisted_spec(), spec)
                self._shard = self._load(self._config(spec))
            elif self._shard is None:
                with self._engine("create"):
                    self._shard = qe.EdgeShard.create(str(self._folder), self._config(spec))
            else:
                assert self._spec is not None
                check_shape(self._spec, spec)
            shard = self._shard
            with self._engine("create payload indexes"):
                indexed = set(shard.info().payload_schema)
                for name, kind in payload_indexes(spec):
                    if name not in indexed:
                        op = qe.UpdateOperation.create_field_index(name, _INDEX_KINDS[kind])
                        shard.update(op)
                shard.flush()
            self._spec = spec

    def optimize(self) -> None:
        shard = self._open()
        with self._lock, self._engine("optimize"):
            shard.optimize()
            shard.flush()

    def drop(self) -> None:
        with self._lock, self._flush_lock:
            self._check_open()
            if self._shard is not None:
                with self._engine("close"):
                    self._shard.close()
            self._shard, self._spec = None, None
            shutil.rmtree(self._folder, ignore_errors=True)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            shard, self._shard = self._shard, None
            if shard is not None:
                with self._flush_lock, self._engine("close"):
                    shard.flush()
                    shard.close()

    def info(self) -> dict[str, int]:
        """Engine figures for status pages: points, vectors in HNSW indexes, segments."""
        shard = self._open()
        with self._engine("info"):
            info = shard.info()
        return {
            "points": info.points_count,
            "indexed_vectors": info.indexed_vectors_count,
            "segments": info.segments_count,
        }

    # -- engine calls ---------------------------------------------------------------------------

    def _write(self, batches: list[list[Any]]) -> None:
        shard = self._open()
        for batch in batches:
            self._update(shard, qe.UpdateOperation.upsert_points(batch), "upsert")
        self._flush(shard)

    def _delete(self, flt: Any) -> int:
        shard = self._open()
        with self._lock, self._engine("delete"):
            n = shard.count(qe.CountRequest(exact=True, filter=flt))
            if n:
                self._update(shard, qe.UpdateOperation.delete_points_by_filter(flt), "delete")
        if n:
            self._flush(shard)
        return n

    def _set_payload(self, flt: Any, values: dict[str, Any]) -> int:
        shard = self._open()
        with self._lock, self._engine("set_payload"):
            n = shard.count(qe.CountRequest(exact=True, filter=flt))
            if n and values:
                op = qe.UpdateOperation.set_payload_by_filter(flt, values)
                self._update(shard, op, "set_payload")
        if n and values:
            self._flush(shard)
        return n

    def _search(self, request: Any) -> list[Any]:
        shard = self._open()
        with self._engine("query"):
            return shard.query(request)

    def _search_batch(self, requests: list[Any]) -> list[list[Any]]:
        shard = self._open()
        with self._engine("query_batch"):
            return shard.query_batch(qe.QueryBatchRequest(requests))

    def _fetch(self, uuids: list[str], with_vectors: bool) -> list[Any]:
        shard = self._open()
        with self._engine("retrieve"):
            return shard.retrieve(list(uuids), True, with_vectors)

    def _count(self, flt: Any) -> int:
        shard = self._open()
        with self._engine("count"):
            return shard.count(qe.CountRequest(exact=True, filter=flt))

    def _scroll(self, flt: Any, limit: int, offset: str | None) -> tuple[list[Any], object]:
        shard = self._open()
        request = qe.ScrollRequest(offset=offset, limit=limit, filter=flt, with_payload=True)
        with self._engine("scroll"):
            return shard.scroll(request)

    # -- internals ------------------------------------------------------------------------------

    def _update(self, shard: qe.EdgeShard, op: qe.UpdateOperation, name: str) -> None:
        with self._lock, self._engine(name):
            shard.update(op)
            self._applied += 1

    def _flush(self, shard: qe.EdgeShard) -> None:
        """Return once a flush that started after this thread's updates has finished."""
        target = self._applied
        with self._flush_lock:
            if self._flushed >= target:
                return  # another writer's flush covered these updates
            covered = self._applied
            with self._engine("flush"):
                shard.flush()
            self._flushed = covered

    def _exists(self) -> bool:
        return (self._folder / _CONFIG_FILE).is_file()

    def _require(self) -> CollectionSpec:
        self._open()
        assert self._spec is not None
        return self._spec

    def _open(self) -> qe.EdgeShard:
        """The open shard; an existing collection opens on first use."""
        shard = self._shard
        if shard is not None and self._spec is not None:
            return shard
        with self._lock:
            self._check_open()
            if self._shard is None:
                if not self._exists():
                    raise NotFoundError(
                        f"vector collection {self._name!r} does not exist "
                        f"under {self._folder.parent}"
                    )
                self._spec = self._persisted_spec()
                self._shard = self._load(None)
            return self._shard

    def _load(self, config: qe.EdgeConfig | None) -> qe.EdgeShard:
        try:
            return qe.EdgeShard.load(str(self._folder), config)
        except Exception as exc:
            if "WouldBlock" in str(exc):
                raise in_use_error(self._name, self._folder) from exc
            raise VectorStoreError(
                f"cannot open vector collection {self._name!r} at {self._folder}: {exc}"
            ) from exc

    def _persisted_spec(self) -> CollectionSpec:
        """The shape on disk, read from the engine's persisted config."""
        try:
            raw = json.loads((self._folder / _CONFIG_FILE).read_text())
            vectors = raw.get("vectors") or {}
            dense = int(vectors[DENSE]["size"])
            image = int(vectors[IMAGE]["size"]) if IMAGE in vectors else None
            sparse = SPARSE in (raw.get("sparse_vectors") or {})
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise VectorStoreError(
                f"vector collection {self._name!r} at {self._folder} has an unreadable config: "
                f"{exc}"
            ) from exc
        return CollectionSpec(name=self._name, dense_dim=dense, sparse=sparse, image_dim=image)

    def _config(self, spec: CollectionSpec) -> qe.EdgeConfig:
        c = collection_config(self._dialect, self._settings, spec)
        return qe.EdgeConfig(
            vectors=c.vectors_config,
            sparse_vectors=c.sparse_vectors_config,
            hnsw_config=c.hnsw_config,
            quantization_config=c.quantization_config,
            optimizers=c.optimizers_config,
        )


class EdgeDialect:
    """qdrant-edge-py's classes."""

    sparse_type: type = qe.SparseVector

    def vector_params(self, size: int) -> Any:
        return qe.EdgeVectorParams(size=size, distance=qe.Distance.Cosine)

    def sparse_params(self, idf: bool) -> Any:
        return qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf if idf else None)

    def quantization(self, kind: str) -> Any:
        if kind == "int8":
            return qe.ScalarQuantizationConfig(
                type=qe.ScalarType.Int8, quantile=0.99, memory=qe.Memory.Pinned
            )
        return qe.BinaryQuantizationConfig(memory=qe.Memory.Pinned)

    def hnsw(self, m: int, ef_construct: int, full_scan_threshold_kb: int) -> Any:
        return qe.HnswIndexConfig(
            m=m, ef_construct=ef_construct, full_scan_threshold=full_scan_threshold_kb
        )

    def optimizers(self, indexing_threshold_kb: int) -> Any:
        return qe.EdgeOptimizersConfig(indexing_threshold=indexing_threshold_kb)

    def sparse(self, vector: SparseVector) -> qe.SparseVector:
        return qe.SparseVector(list(vector.indices), list(vector.values))

    def point(self, uuid: str, vectors: dict[str, Any], payload: dict[str, Any]) -> Any:
        return qe.Point(uuid, vectors, payload)

    def match_value(self, key: str, value: Scalar) -> Any:
        # qdrant-edge-py 0.9 reads a Python bool in MatchValue as the integer 1/0, which never
        # matches a boolean payload; numpy's bool_ is not an int subclass and converts correctly.
        match = qe.MatchValue(np.bool_(value) if isinstance(value, bool) else value)  # type: ignore[arg-type]
        return qe.FieldCondition(key, match=match)

    def match_any(self, key: str, values: list[str] | list[int]) -> Any:
        return qe.FieldCondition(key, match=qe.MatchAny(values))

    def filter(self, *, must: list[Any] | None = None, should: list[Any] | None = None) -> Any:
        return qe.Filter(must=must, should=should)

    def quantization_search(self, oversampling: float) -> Any:
        return qe.QuantizationSearchParams(rescore=True, oversampling=oversampling)

    def search_params(self, hnsw_ef: int, exact: bool, quantization: Any) -> Any:
        return qe.SearchParams(hnsw_ef=hnsw_ef, exact=exact, quantization=quantization)

    def fusion(self, kind: str, rrf_k: int) -> Any:
        return qe.Fusion.Rrf(k=rrf_k) if kind == "rrf" else qe.Fusion.Dbsf()

    def prefetch(self, vector: Any, using: str, limit: int, flt: Any, params: Any) -> Any:
        query = qe.Query.Nearest(vector, using=using)
        return qe.Prefetch(limit=limit, query=query, params=params, filter=flt)

    def nearest(
        self, vector: Any, using: str, flt: Any, params: Any, limit: int, payload: Any
    ) -> Any:
        query = qe.Query.Nearest(vector, using=using)
        return qe.QueryRequest(
            limit=limit, query=query, filter=flt, params=params, with_payload=payload
        )

    def fused(self, fusion: Any, prefetches: list[Any], flt: Any, limit: int, payload: Any) -> Any:
        return qe.QueryRequest(
            limit=limit, query=fusion, prefetches=prefetches, filter=flt, with_payload=payload
        )
