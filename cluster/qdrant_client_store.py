"""`VectorStore` on qdrant-client: a Qdrant server, or the client's local mode.

With `settings.url` set this talks to a server (HTTP, API key, timeout) and every write waits
for the server's acknowledgement; HNSW, quantization and payload indexes are the server's.
Without one it runs qdrant-client's local mode under `<path>/<collection>.qdrant-local`
(`url=":memory:"` keeps it in memory): exact brute-force search, quantization and payload
indexes ignored, but the same points, filters, fusion and results. Local mode is a plain Python
object locked to one process, so every call on it is serialised here.

Hybrid search uses the Query API: two prefetches (dense, sparse) fused in the engine.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from qdrant_client import QdrantClient, models

from rayweave.cluster.errors import InputError, NotFoundError, RayweaveError, VectorStoreError
from rayweave.cluster.settings import QDRANT_MEMORY, QdrantSettings
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

MEMORY = QDRANT_MEMORY
LOCAL_SUFFIX = ".qdrant-local"


class QdrantClientStore:
    """One collection through qdrant-client (see module docstring)."""

    def __init__(self, settings: QdrantSettings, *, path: Path, collection: str) -> None:
        self._settings = settings
        self._name = collection
        self._server = settings.url is not None and settings.url != MEMORY
        self._where = settings.url if self._server else MEMORY
        self._lock = threading.RLock()
        self._spec: CollectionSpec | None = None
        try:
            if self._server:
                self._client = QdrantClient(
                    url=settings.url,
                    api_key=settings.api_key.get_secret_value() if settings.api_key else None,
                    timeout=math.ceil(settings.timeout_s),
                    # Keep construction free of network calls; the first request reports problems.
                    check_compatibility=False,
                )
            elif settings.url == MEMORY:
                self._client = QdrantClient(location=MEMORY)
            else:
                folder = Path(path).expanduser() / f"{collection}{LOCAL_SUFFIX}"
                folder.mkdir(parents=True, exist_ok=True)
                self._where = str(folder)
                # Calls arrive from several threads (Ray actors); `_lock` serialises them.
                self._client = QdrantClient(path=str(folder), force_disable_check_same_thread=True)
        except RuntimeError as exc:
            raise VectorStoreError(
                f"vector collection {collection!r} at {self._where} is open in another process; "
                "embedded Qdrant is single-process: share it through the vector actor "
                "(connect_vector_store(..., shared=True))"
            ) from exc
        except Exception as exc:
            raise VectorStoreError(
                f"cannot open qdrant-client for collection {collection!r}: {exc}"
            ) from exc
        self._closed = False

    def __repr__(self) -> str:
        return f"QdrantClientStore({self._name!r} at {self._where})"

    # -- lifecycle ------------------------------------------------------------------------------

    def ensure_collection(self, spec: CollectionSpec) -> None:
        if spec.name != self._name:
            raise ValueError(
                f"spec names collection {spec.name!r}, this store holds {self._name!r}"
            )
        with self._lock, self._call("ensure_collection"):
            client = self._client
            if not client.collection_exists(self._name):
                try:
                    self._create(spec)
                except Exception:
                    # Another process may have created it first (server mode); verify below.
                    if not client.collection_exists(self._name):
                        raise
            existing = self._stored_spec()
            check_shape(existing, spec)
            if self._server:
                schema = client.get_collection(self._name).payload_schema
                for field, kind in [
                    *((f, models.PayloadSchemaType.KEYWORD) for f in spec.keyword_fields),
                    *((f, models.PayloadSchemaType.BOOL) for f in spec.bool_fields),
                ]:
                    if field not in schema:
                        client.create_payload_index(self._name, field, field_schema=kind, wait=True)
            self._spec = spec

    def spec(self) -> CollectionSpec:
        return self._require()

    def optimize(self) -> None:
        """A server optimises in the background; local mode has no index to build."""
        self._require()

    def drop(self) -> None:
        with self._lock, self._call("drop"):
            self._client.delete_collection(self._name)
            self._spec = None

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            with self._call("close"):
                self._client.close()

    # -- writes ---------------------------------------------------------------------------------

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        if not points:
            return
        spec = self._require()
        prepared = prepare_points(points, spec)
        batch = self._settings.upsert_batch
        with self._lock, self._call("upsert"):
            for start in range(0, len(prepared), batch):
                chunk = [_point_struct(p) for p in prepared[start : start + batch]]
                self._client.upsert(self._name, points=chunk, wait=True)

    def delete(self, filter: Filter) -> int:
        flt = _client_must(require_filter(filter, "delete"))
        self._require()
        # Count and delete under one lock: exact within this process; across processes a server
        # may see concurrent writers between the two calls.
        with self._lock, self._call("delete"):
            n = self._client.count(self._name, count_filter=flt, exact=True).count
            if n:
                self._client.delete(
                    self._name, points_selector=models.FilterSelector(filter=flt), wait=True
                )
        return n

    def set_payload(self, filter: Filter, payload: Mapping[str, Any]) -> int:
        flt = _client_must(require_filter(filter, "set_payload"))
        values = json_payload(payload, "set_payload")
        if CHUNK_ID in values:
            raise InputError(
                f"set_payload may not change {CHUNK_ID!r}: it maps points back to chunks"
            )
        self._require()
        with self._lock, self._call("set_payload"):
            n = self._client.count(self._name, count_filter=flt, exact=True).count
            if n and values:
                self._client.set_payload(self._name, payload=values, points=flt, wait=True)
        return n

    # -- reads ----------------------------------------------------------------------------------

    def query(self, query: VectorQuery) -> list[ScoredPoint]:
        pq = prepare_query(query, self._require())
        req = self._request(pq)
        with self._reading(), self._call("query"):
            resp = self._client.query_points(
                self._name,
                query=req.query,
                using=req.using,
                prefetch=req.prefetch,
                query_filter=req.filter,
                search_params=req.params,
                limit=pq.limit,
                with_payload=pq.payload_selector,
            )
        return ranked(
            [scored_point(p.id, p.score, p.payload, pq.with_payload) for p in resp.points]
        )

    def query_batch(self, queries: Sequence[VectorQuery]) -> list[list[ScoredPoint]]:
        if not queries:
            return []
        spec = self._require()
        prepared = [prepare_query(q, spec) for q in queries]
        requests = [self._request(pq) for pq in prepared]
        with self._reading(), self._call("query"):
            responses = self._client.query_batch_points(self._name, requests=requests)
        return [
            ranked([scored_point(p.id, p.score, p.payload, pq.with_payload) for p in resp.points])
            for pq, resp in zip(prepared, responses, strict=True)
        ]

    def retrieve(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[ScoredPoint]:
        if not ids:
            return []
        self._require()
        uuids = [point_uuid(i) for i in ids]
        with self._reading(), self._call("retrieve"):
            records = self._client.retrieve(
                self._name, ids=uuids, with_payload=True, with_vectors=with_vectors
            )
        by_uuid = {str(r.id): r for r in records}
        out = []
        for uuid in uuids:
            rec = by_uuid.get(uuid)
            if rec is not None:
                out.append(
                    ScoredPoint(
                        id=chunk_id_of(rec.payload, rec.id),
                        score=0.0,
                        payload=rec.payload or {},
                        vectors=point_vectors(rec.vector, models.SparseVector)
                        if with_vectors
                        else {},
                    )
                )
        return out

    def count(self, filter: Filter | None = None) -> int:
        flt = _client_filter(parse_filter(filter))
        self._require()
        with self._reading(), self._call("count"):
            return self._client.count(self._name, count_filter=flt, exact=True).count

    def scroll(
        self, *, filter: Filter | None = None, limit: int = 256, offset: str | None = None
    ) -> tuple[list[ScoredPoint], str | None]:
        if limit < 1:
            raise InputError(f"scroll limit must be at least 1, got {limit}")
        flt = _client_filter(parse_filter(filter))
        self._require()
        with self._reading(), self._call("scroll"):
            records, next_offset = self._client.scroll(
                self._name, scroll_filter=flt, limit=limit, offset=offset, with_payload=True
            )
        points = [scored_point(r.id, 0.0, r.payload, True) for r in records]
        return points, None if next_offset is None else str(next_offset)

    # -- internals ------------------------------------------------------------------------------

    def _require(self) -> CollectionSpec:
        """The collection's shape; an existing collection is looked up on first use."""
        if self._closed:
            raise VectorStoreError(f"vector store for collection {self._name!r} is closed")
        spec = self._spec
        if spec is not None:
            return spec
        with self._lock, self._call("open"):
            if self._spec is None:
                if not self._client.collection_exists(self._name):
                    raise NotFoundError(
                        f"vector collection {self._name!r} does not exist at {self._where}"
                    )
                self._spec = self._stored_spec()
            return self._spec

    def _reading(self) -> contextlib.AbstractContextManager[Any]:
        # A server client is thread-safe; local mode is not.
        return contextlib.nullcontext() if self._server else self._lock

    def _stored_spec(self) -> CollectionSpec:
        params = self._client.get_collection(self._name).config.params
        vectors = params.vectors if isinstance(params.vectors, dict) else {}
        if DENSE not in vectors:
            raise VectorStoreError(
                f"collection {self._name!r} has no {DENSE!r} vector; it was not made by rayweave"
            )
        image = vectors.get(IMAGE)
        return CollectionSpec(
            name=self._name,
            dense_dim=vectors[DENSE].size,
            sparse=SPARSE in (params.sparse_vectors or {}),
            image_dim=image.size if image is not None else None,
        )

    def _create(self, spec: CollectionSpec) -> None:
        s = self._settings
        vectors = {DENSE: models.VectorParams(size=spec.dense_dim, distance=models.Distance.COSINE)}
        if spec.image_dim is not None:
            vectors[IMAGE] = models.VectorParams(
                size=spec.image_dim, distance=models.Distance.COSINE
            )
        sparse = None
        if spec.sparse:
            modifier = models.Modifier.IDF if s.sparse_idf else None
            sparse = {SPARSE: models.SparseVectorParams(modifier=modifier)}
        quantization: models.ScalarQuantization | models.BinaryQuantization | None = None
        hnsw = optimizers = None
        if self._server:  # local mode ignores these (and warns)
            hnsw = models.HnswConfigDiff(
                m=s.hnsw_m,
                ef_construct=s.hnsw_ef_construct,
                full_scan_threshold=s.indexing_threshold_kb,
            )
            optimizers = models.OptimizersConfigDiff(indexing_threshold=s.indexing_threshold_kb)
            if s.quantization == "int8":
                quantization = models.ScalarQuantization(
                    scalar=models.ScalarQuantizationConfig(
                        type=models.ScalarType.INT8, quantile=0.99, always_ram=True
                    )
                )
            elif s.quantization == "binary":
                quantization = models.BinaryQuantization(
                    binary=models.BinaryQuantizationConfig(always_ram=True)
                )
        self._client.create_collection(
            self._name,
            vectors_config=vectors,
            sparse_vectors_config=sparse,
            hnsw_config=hnsw,
            optimizers_config=optimizers,
            quantization_config=quantization,
        )

    def _request(self, pq: PreparedQuery) -> models.QueryRequest:
        s = self._settings
        flt = _client_filter(pq.matches)
        params = None
        if self._server:  # local mode is always exact and warns about search params
            quant = None
            if s.quantization != "none":
                quant = models.QuantizationSearchParams(
                    rescore=True, oversampling=s.quantization_oversampling
                )
            params = models.SearchParams(hnsw_ef=s.search_ef, exact=pq.exact, quantization=quant)
        with_payload = pq.payload_selector
        if pq.mode == "hybrid":
            assert pq.dense is not None
            assert pq.sparse is not None
            fusion: models.RrfQuery | models.FusionQuery = (
                models.RrfQuery(rrf=models.Rrf(k=s.rrf_k))
                if pq.fusion == "rrf"
                else models.FusionQuery(fusion=models.Fusion.DBSF)
            )
            return models.QueryRequest(
                prefetch=[
                    models.Prefetch(
                        query=models.NearestQuery(nearest=pq.dense),
                        using=DENSE,
                        limit=pq.prefetch_limit,
                        filter=flt,
                        params=params,
                    ),
                    models.Prefetch(
                        query=models.NearestQuery(nearest=_client_sparse(pq.sparse)),
                        using=SPARSE,
                        limit=pq.prefetch_limit,
                        filter=flt,
                    ),
                ],
                query=fusion,
                filter=flt,
                limit=pq.limit,
                with_payload=with_payload,
            )
        if pq.mode == "sparse":
            assert pq.sparse is not None
            vector: list[float] | models.SparseVector = _client_sparse(pq.sparse)
            using = SPARSE
        else:
            assert pq.dense is not None
            vector, using = pq.dense, IMAGE if pq.mode == "image" else DENSE
        return models.QueryRequest(
            query=models.NearestQuery(nearest=vector),
            using=using,
            filter=flt,
            params=params,
            limit=pq.limit,
            with_payload=with_payload,
        )

    @contextlib.contextmanager
    def _call(self, op: str) -> Iterator[None]:
        """Client errors (HTTP, local-mode RuntimeErrors) become VectorStoreErrors naming the collection."""
        try:
            yield
        except RayweaveError:
            raise
        except Exception as exc:
            raise VectorStoreError(
                f"qdrant-client {op} on collection {self._name!r} failed: {exc}"
            ) from exc


def _client_sparse(v: SparseVector) -> models.SparseVector:
    return models.SparseVector(indices=list(v.indices), values=list(v.values))


def _point_struct(p: PreparedPoint) -> models.PointStruct:
    vector: dict[str, Any] = {}
    if p.dense is not None:
        vector[DENSE] = p.dense
    if p.sparse is not None:
        vector[SPARSE] = _client_sparse(p.sparse)
    if p.image is not None:
        vector[IMAGE] = p.image
    return models.PointStruct(id=p.uuid, vector=vector, payload=p.payload)


def _client_condition(m: FieldMatch) -> models.FieldCondition | models.Filter:
    if m.values and isinstance(m.values[0], bool) and m.any_of and len(m.values) > 1:
        # MatchAny takes only strings or integers.
        return models.Filter(
            should=[
                models.FieldCondition(key=m.key, match=models.MatchValue(value=v)) for v in m.values
            ]
        )
    if m.any_of and not (m.values and isinstance(m.values[0], bool)):
        return models.FieldCondition(key=m.key, match=models.MatchAny(any=list(m.values)))
    return models.FieldCondition(key=m.key, match=models.MatchValue(value=m.values[0]))


def _client_must(matches: list[FieldMatch]) -> models.Filter:
    return models.Filter(must=[_client_condition(m) for m in matches])


def _client_filter(matches: list[FieldMatch]) -> models.Filter | None:
    return _client_must(matches) if matches else None
