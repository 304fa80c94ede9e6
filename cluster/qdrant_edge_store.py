"""`VectorStore` on qdrant-edge-py: Qdrant's own engine running inside this process.

One `EdgeShard` per collection under `<path>/<collection>`: HNSW and quantization as a Qdrant
server builds them, persistent, and no server to run. The shard's folder is locked by the
process that opens it; other processes reach it through `rayweave.cluster.vector_service`.

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
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import qdrant_edge as qe

from rayweave.cluster.errors import InputError, NotFoundError, RayweaveError, VectorStoreError
from rayweave.cluster.settings import QdrantSettings
from rayweave.cluster.types import SparseVector, point_uuid
from rayweave.cluster.vector_points import (
    CHUNK_ID,
    FieldMatch,
    PreparedPoint,
    PreparedQuery,
    check_shape,
    chunk_id_of,
    json_payload,
    parse_filter,
    point_vectors,
    prepare_points,
    prepare_query,
    ranked,
    require_filter,
    scored_point,
)
from rayweave.cluster.vector_store import (
    DENSE,
    IMAGE,
    SPARSE,
    CollectionSpec,
    Filter,
    ScoredPoint,
    VectorPoint,
    VectorQuery,
)

_CONFIG_FILE = "edge_config.json"


class QdrantEdgeStore:
    """One collection in an in-process Qdrant Edge shard (see module docstring)."""

    def __init__(self, settings: QdrantSettings, *, path: Path, collection: str) -> None:
        self._settings = settings
        self._name = collection
        self._folder = Path(path).expanduser() / collection
        self._lock = threading.RLock()
        # Group commit: `_applied` counts updates, `_flushed` the updates a finished flush covers.
        self._flush_lock = threading.Lock()
        self._applied = 0
        self._flushed = 0
        self._shard: qe.EdgeShard | None = None
        self._spec: CollectionSpec | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"QdrantEdgeStore({self._name!r} at {self._folder})"

    # -- lifecycle ------------------------------------------------------------------------------

    def ensure_collection(self, spec: CollectionSpec) -> None:
        if spec.name != self._name:
            raise ValueError(
                f"spec names collection {spec.name!r}, this store holds {self._name!r}"
            )
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
                for name in spec.keyword_fields:
                    if name not in indexed:
                        shard.update(
                            qe.UpdateOperation.create_field_index(
                                name, qe.PayloadSchemaType.Keyword
                            )
                        )
                for name in spec.bool_fields:
                    if name not in indexed:
                        shard.update(
                            qe.UpdateOperation.create_field_index(name, qe.PayloadSchemaType.Bool)
                        )
                shard.flush()
            self._spec = spec

    def spec(self) -> CollectionSpec:
        return self._require()[1]

    def optimize(self) -> None:
        shard, _ = self._require()
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
        shard, _ = self._require()
        with self._engine("info"):
            info = shard.info()
        return {
            "points": info.points_count,
            "indexed_vectors": info.indexed_vectors_count,
            "segments": info.segments_count,
        }

    # -- writes ---------------------------------------------------------------------------------

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        if not points:
            return
        shard, spec = self._require()
        prepared = prepare_points(points, spec)
        batch = self._settings.upsert_batch
        for start in range(0, len(prepared), batch):
            chunk = [_edge_point(p) for p in prepared[start : start + batch]]
            self._update(shard, qe.UpdateOperation.upsert_points(chunk), "upsert")
        self._flush(shard)

    def delete(self, filter: Filter) -> int:
        flt = _edge_must(require_filter(filter, "delete"))
        shard, _ = self._require()
        with self._lock, self._engine("delete"):
            n = shard.count(qe.CountRequest(exact=True, filter=flt))
            if n:
                self._update(shard, qe.UpdateOperation.delete_points_by_filter(flt), "delete")
        if n:
            self._flush(shard)
        return n

    def set_payload(self, filter: Filter, payload: Mapping[str, Any]) -> int:
        flt = _edge_must(require_filter(filter, "set_payload"))
        values = json_payload(payload, "set_payload")
        if CHUNK_ID in values:
            raise InputError(
                f"set_payload may not change {CHUNK_ID!r}: it maps points back to chunks"
            )
        shard, _ = self._require()
        with self._lock, self._engine("set_payload"):
            n = shard.count(qe.CountRequest(exact=True, filter=flt))
            if n and values:
                self._update(
                    shard, qe.UpdateOperation.set_payload_by_filter(flt, values), "set_payload"
                )
        if n and values:
            self._flush(shard)
        return n

    # -- reads ----------------------------------------------------------------------------------

    def query(self, query: VectorQuery) -> list[ScoredPoint]:
        shard, spec = self._require()
        prepared = prepare_query(query, spec)
        with self._engine("query"):
            found = shard.query(self._request(prepared))
        return ranked(
            [scored_point(p.id, p.score, p.payload, prepared.with_payload) for p in found]
        )

    def query_batch(self, queries: Sequence[VectorQuery]) -> list[list[ScoredPoint]]:
        if not queries:
            return []
        shard, spec = self._require()
        prepared = [prepare_query(q, spec) for q in queries]
        with self._engine("query_batch"):
            found = shard.query_batch(qe.QueryBatchRequest([self._request(p) for p in prepared]))
        return [
            ranked([scored_point(p.id, p.score, p.payload, pq.with_payload) for p in hits])
            for pq, hits in zip(prepared, found, strict=True)
        ]

    def retrieve(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[ScoredPoint]:
        if not ids:
            return []
        shard, _ = self._require()
        uuids = [point_uuid(i) for i in ids]
        with self._engine("retrieve"):
            records = shard.retrieve(list(uuids), True, with_vectors)
        by_uuid = {str(r.id): r for r in records}
        out = []
        for uuid in uuids:
            rec = by_uuid.get(uuid)
            if rec is not None:
                vectors = point_vectors(rec.vector, qe.SparseVector) if with_vectors else {}
                out.append(
                    ScoredPoint(
                        id=chunk_id_of(rec.payload, rec.id),
                        score=0.0,
                        payload=rec.payload or {},
                        vectors=vectors,
                    )
                )
        return out

    def count(self, filter: Filter | None = None) -> int:
        flt = _edge_filter(parse_filter(filter))
        shard, _ = self._require()
        with self._engine("count"):
            return shard.count(qe.CountRequest(exact=True, filter=flt))

    def scroll(
        self, *, filter: Filter | None = None, limit: int = 256, offset: str | None = None
    ) -> tuple[list[ScoredPoint], str | None]:
        if limit < 1:
            raise InputError(f"scroll limit must be at least 1, got {limit}")
        flt = _edge_filter(parse_filter(filter))
        shard, _ = self._require()
        with self._engine("scroll"):
            records, next_offset = shard.scroll(
                qe.ScrollRequest(offset=offset, limit=limit, filter=flt, with_payload=True)
            )
        points = [scored_point(r.id, 0.0, r.payload, True) for r in records]
        return points, None if next_offset is None else str(next_offset)

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

    def _check_open(self) -> None:
        if self._closed:
            raise VectorStoreError(f"vector store for collection {self._name!r} is closed")

    def _require(self) -> tuple[qe.EdgeShard, CollectionSpec]:
        """The open shard and its shape; an existing collection opens on first use."""
        shard, spec = self._shard, self._spec
        if shard is not None and spec is not None:
            return shard, spec
        with self._lock:
            self._check_open()
            if self._shard is None:
                if not self._exists():
                    raise NotFoundError(
                        f"vector collection {self._name!r} does not exist under {self._folder.parent}"
                    )
                self._spec = self._persisted_spec()
                self._shard = self._load(None)
            assert self._spec is not None
            return self._shard, self._spec

    def _load(self, config: qe.EdgeConfig | None) -> qe.EdgeShard:
        try:
            return qe.EdgeShard.load(str(self._folder), config)
        except Exception as exc:
            if "WouldBlock" in str(exc):
                raise VectorStoreError(
                    f"vector collection {self._name!r} at {self._folder} is open in another process; "
                    "embedded Qdrant is single-process: share it through the vector actor "
                    "(connect_vector_store(..., shared=True))"
                ) from exc
            raise VectorStoreError(
                f"cannot open vector collection {self._name!r} at {self._folder}: {exc}"
            ) from exc

    def _persisted_spec(self) -> CollectionSpec:
        """The shape on disk, read from the engine's persisted config (names both dims on mismatch)."""
        try:
            raw = json.loads((self._folder / _CONFIG_FILE).read_text())
            vectors = raw.get("vectors") or {}
            dense = int(vectors[DENSE]["size"])
            image = int(vectors[IMAGE]["size"]) if IMAGE in vectors else None
            sparse = SPARSE in (raw.get("sparse_vectors") or {})
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise VectorStoreError(
                f"vector collection {self._name!r} at {self._folder} has an unreadable config: {exc}"
            ) from exc
        return CollectionSpec(name=self._name, dense_dim=dense, sparse=sparse, image_dim=image)

    def _config(self, spec: CollectionSpec) -> qe.EdgeConfig:
        s = self._settings
        vectors = {DENSE: qe.EdgeVectorParams(size=spec.dense_dim, distance=qe.Distance.Cosine)}
        if spec.image_dim is not None:
            vectors[IMAGE] = qe.EdgeVectorParams(size=spec.image_dim, distance=qe.Distance.Cosine)
        sparse = None
        if spec.sparse:
            modifier = qe.Modifier.Idf if s.sparse_idf else None
            sparse = {SPARSE: qe.EdgeSparseVectorParams(modifier=modifier)}
        quantization: qe.ScalarQuantizationConfig | qe.BinaryQuantizationConfig | None = None
        if s.quantization == "int8":
            quantization = qe.ScalarQuantizationConfig(
                type=qe.ScalarType.Int8, quantile=0.99, memory=qe.Memory.Pinned
            )
        elif s.quantization == "binary":
            quantization = qe.BinaryQuantizationConfig(memory=qe.Memory.Pinned)
        return qe.EdgeConfig(
            vectors=vectors,
            sparse_vectors=sparse,
            hnsw_config=qe.HnswIndexConfig(
                m=s.hnsw_m,
                ef_construct=s.hnsw_ef_construct,
                full_scan_threshold=s.indexing_threshold_kb,
            ),
            quantization_config=quantization,
            optimizers=qe.EdgeOptimizersConfig(indexing_threshold=s.indexing_threshold_kb),
        )

    def _request(self, pq: PreparedQuery) -> qe.QueryRequest:
        s = self._settings
        flt = _edge_filter(pq.matches)
        quant = None
        if s.quantization != "none":
            quant = qe.QuantizationSearchParams(
                rescore=True, oversampling=s.quantization_oversampling
            )
        params = qe.SearchParams(hnsw_ef=s.search_ef, exact=pq.exact, quantization=quant)
        with_payload = pq.payload_selector
        if pq.mode == "hybrid":
            assert pq.dense is not None
            assert pq.sparse is not None
            fusion: qe.Fusion.Rrf | qe.Fusion.Dbsf = (
                qe.Fusion.Rrf(k=s.rrf_k) if pq.fusion == "rrf" else qe.Fusion.Dbsf()
            )
            prefetches = [
                qe.Prefetch(
                    limit=pq.prefetch_limit,
                    query=qe.Query.Nearest(pq.dense, using=DENSE),
                    params=params,
                    filter=flt,
                ),
                qe.Prefetch(
                    limit=pq.prefetch_limit,
                    query=qe.Query.Nearest(_edge_sparse(pq.sparse), using=SPARSE),
                    filter=flt,
                ),
            ]
            return qe.QueryRequest(
                limit=pq.limit,
                query=fusion,  # type: ignore[arg-type]  # the stubs omit Fusion's nested classes
                prefetches=prefetches,
                filter=flt,
                with_payload=with_payload,
            )
        if pq.mode == "sparse":
            assert pq.sparse is not None
            vector: list[float] | qe.SparseVector = _edge_sparse(pq.sparse)
            using = SPARSE
        else:
            assert pq.dense is not None
            vector, using = pq.dense, IMAGE if pq.mode == "image" else DENSE
        return qe.QueryRequest(
            limit=pq.limit,
            query=qe.Query.Nearest(vector, using=using),
            filter=flt,
            params=params,
            with_payload=with_payload,
        )

    @contextmanager
    def _engine(self, op: str) -> Iterator[None]:
        """Engine errors (plain `Exception`s) become VectorStoreErrors naming the collection."""
        try:
            yield
        except RayweaveError:
            raise
        except Exception as exc:
            raise VectorStoreError(
                f"qdrant-edge {op} on collection {self._name!r} failed: {exc}"
            ) from exc


def _edge_sparse(v: SparseVector) -> qe.SparseVector:
    return qe.SparseVector(list(v.indices), list(v.values))


def _edge_point(p: PreparedPoint) -> qe.Point:
    vector: dict[str, Any] = {}
    if p.dense is not None:
        vector[DENSE] = p.dense
    if p.sparse is not None:
        vector[SPARSE] = _edge_sparse(p.sparse)
    if p.image is not None:
        vector[IMAGE] = p.image
    return qe.Point(p.uuid, vector, p.payload)


def _edge_bool(value: bool) -> Any:
    # qdrant-edge-py 0.9 reads a Python bool in MatchValue as the integer 1/0, which never
    # matches a boolean payload; numpy's bool_ is not an int subclass and converts correctly.
    return np.bool_(value)


def _edge_condition(m: FieldMatch) -> qe.FieldCondition | qe.Filter:
    if m.values and isinstance(m.values[0], bool):
        if not m.any_of or len(m.values) == 1:
            return qe.FieldCondition(m.key, match=qe.MatchValue(_edge_bool(bool(m.values[0]))))
        return qe.Filter(
            should=[
                qe.FieldCondition(m.key, match=qe.MatchValue(_edge_bool(bool(v)))) for v in m.values
            ]
        )
    if m.any_of:
        return qe.FieldCondition(m.key, match=qe.MatchAny(list(m.values)))
    return qe.FieldCondition(m.key, match=qe.MatchValue(m.values[0]))


def _edge_must(matches: list[FieldMatch]) -> qe.Filter:
    return qe.Filter(must=[_edge_condition(m) for m in matches])


def _edge_filter(matches: list[FieldMatch]) -> qe.Filter | None:
    return _edge_must(matches) if matches else None
