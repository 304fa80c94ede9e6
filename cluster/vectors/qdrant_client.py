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
from pathlib import Path
from typing import Any

from qdrant_client import QdrantClient, models

from rayweave.cluster.errors import NotFoundError, VectorStoreError
from rayweave.cluster.settings import QDRANT_MEMORY, QdrantSettings
from rayweave.cluster.types import SparseVector
from rayweave.cluster.vectors.points import Scalar, check_shape
from rayweave.cluster.vectors.qdrant_core import QdrantStoreCore, in_use_error
from rayweave.cluster.vectors.qdrant_dialect import collection_config, payload_indexes
from rayweave.cluster.vectors.store import DENSE, IMAGE, SPARSE, CollectionSpec

MEMORY = QDRANT_MEMORY
LOCAL_SUFFIX = ".qdrant-local"
_INDEX_KINDS = {"keyword": models.PayloadSchemaType.KEYWORD, "bool": models.PayloadSchemaType.BOOL}


class QdrantClientStore(QdrantStoreCore):
    """One collection through qdrant-client (see module docstring)."""

    ENGINE = "qdrant-client"

    def __init__(self, settings: QdrantSettings, *, path: Path, collection: str) -> None:
        self._server = settings.url is not None and settings.url != MEMORY
        super().__init__(settings, collection, ClientDialect(server=self._server))
        self._where = settings.url if self._server else MEMORY
        try:
            self._client = self._connect(settings, Path(path))
        except RuntimeError as exc:
            raise in_use_error(collection, self._where) from exc
        except Exception as exc:
            raise VectorStoreError(
                f"cannot open qdrant-client for collection {collection!r}: {exc}"
            ) from exc

    def _connect(self, settings: QdrantSettings, path: Path) -> QdrantClient:
        if self._server:
            return QdrantClient(
                url=settings.url,
                api_key=settings.api_key.get_secret_value() if settings.api_key else None,
                timeout=math.ceil(settings.timeout_s),
                # Keep construction free of network calls; the first request reports problems.
                check_compatibility=False,
            )
        if settings.url == MEMORY:
            return QdrantClient(location=MEMORY)
        folder = path.expanduser() / f"{self._name}{LOCAL_SUFFIX}"
        folder.mkdir(parents=True, exist_ok=True)
        self._where = str(folder)
        # Calls arrive from several threads (Ray actors); `_lock` serialises them.
        return QdrantClient(path=str(folder), force_disable_check_same_thread=True)

    def __repr__(self) -> str:
        return f"QdrantClientStore({self._name!r} at {self._where})"

    # -- lifecycle ------------------------------------------------------------------------------

    def ensure_collection(self, spec: CollectionSpec) -> None:
        self._check_name(spec)
        with self._lock, self._engine("ensure_collection"):
            client = self._client
            if not client.collection_exists(self._name):
                try:
                    self._create(spec)
                except Exception:
                    # Another process may have created it first (server mode); verify below.
                    if not client.collection_exists(self._name):
                        raise
            check_shape(self._stored_spec(), spec)
            if self._server:
                schema = client.get_collection(self._name).payload_schema
                for field, kind in payload_indexes(spec):
                    if field not in schema:
                        client.create_payload_index(
                            self._name, field, field_schema=_INDEX_KINDS[kind], wait=True
                        )
            self._spec = spec

    def optimize(self) -> None:
        """A server optimises in the background; local mode has no index to build."""
        self._require()

    def drop(self) -> None:
        with self._lock, self._engine("drop"):
            self._client.delete_collection(self._name)
            self._spec = None

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            with self._engine("close"):
                self._client.close()

    # -- engine calls ---------------------------------------------------------------------------

    def _write(self, batches: list[list[Any]]) -> None:
        with self._lock, self._engine("upsert"):
            for batch in batches:
                self._client.upsert(self._name, points=batch, wait=True)

    def _delete(self, flt: Any) -> int:
        # Count and delete under one lock: exact within this process; across processes a server
        # may see concurrent writers between the two calls.
        with self._lock, self._engine("delete"):
            n = self._client.count(self._name, count_filter=flt, exact=True).count
            if n:
                self._client.delete(
                    self._name, points_selector=models.FilterSelector(filter=flt), wait=True
                )
        return n

    def _set_payload(self, flt: Any, values: dict[str, Any]) -> int:
        with self._lock, self._engine("set_payload"):
            n = self._client.count(self._name, count_filter=flt, exact=True).count
            if n and values:
                self._client.set_payload(self._name, payload=values, points=flt, wait=True)
        return n

    def _search(self, request: Any) -> list[Any]:
        req: models.QueryRequest = request
        assert req.limit is not None
        assert req.with_payload is not None
        with self._reading(), self._engine("query"):
            return self._client.query_points(
                self._name,
                query=req.query,
                using=req.using,
                prefetch=req.prefetch,
                query_filter=req.filter,
                search_params=req.params,
                limit=req.limit,
                with_payload=req.with_payload,
            ).points

    def _search_batch(self, requests: list[Any]) -> list[list[Any]]:
        with self._reading(), self._engine("query"):
            responses = self._client.query_batch_points(self._name, requests=requests)
        return [resp.points for resp in responses]

    def _fetch(self, uuids: list[str], with_vectors: bool) -> list[Any]:
        with self._reading(), self._engine("retrieve"):
            return self._client.retrieve(
                self._name, ids=uuids, with_payload=True, with_vectors=with_vectors
            )

    def _count(self, flt: Any) -> int:
        with self._reading(), self._engine("count"):
            return self._client.count(self._name, count_filter=flt, exact=True).count

    def _scroll(self, flt: Any, limit: int, offset: str | None) -> tuple[list[Any], object]:
        with self._reading(), self._engine("scroll"):
            return self._client.scroll(
                self._name, scroll_filter=flt, limit=limit, offset=offset, with_payload=True
            )

    # -- internals ------------------------------------------------------------------------------

    def _require(self) -> CollectionSpec:
        self._check_open()
        spec = self._spec
        if spec is not None:
            return spec
        with self._lock, self._engine("open"):
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
        config = collection_config(self._dialect, self._settings, spec)
        self._client.create_collection(self._name, **config.as_kwargs())


class ClientDialect:
    """qdrant-client's models. Local mode is exact and warns about index and search settings,
    so it gets none of them."""

    sparse_type: type = models.SparseVector

    def __init__(self, *, server: bool) -> None:
        self._server = server

    def sparse(self, vector: SparseVector) -> models.SparseVector:
        return models.SparseVector(indices=list(vector.indices), values=list(vector.values))

    def point(self, uuid: str, vectors: dict[str, Any], payload: dict[str, Any]) -> Any:
        return models.PointStruct(id=uuid, vector=vectors, payload=payload)

    def match_value(self, key: str, value: Scalar) -> Any:
        return models.FieldCondition(key=key, match=models.MatchValue(value=value))

    def match_any(self, key: str, values: list[str] | list[int]) -> Any:
        return models.FieldCondition(key=key, match=models.MatchAny(any=values))

    def filter(self, *, must: list[Any] | None = None, should: list[Any] | None = None) -> Any:
        return models.Filter(must=must, should=should)

    def quantization_search(self, oversampling: float) -> Any:
        return models.QuantizationSearchParams(rescore=True, oversampling=oversampling)

    def search_params(self, hnsw_ef: int, exact: bool, quantization: Any) -> Any:
        if not self._server:
            return None
        return models.SearchParams(hnsw_ef=hnsw_ef, exact=exact, quantization=quantization)

    def fusion(self, kind: str, rrf_k: int) -> Any:
        if kind == "rrf":
            return models.RrfQuery(rrf=models.Rrf(k=rrf_k))
        return models.FusionQuery(fusion=models.Fusion.DBSF)

    def prefetch(self, vector: Any, using: str, limit: int, flt: Any, params: Any) -> Any:
        query = models.NearestQuery(nearest=vector)
        return models.Prefetch(query=query, using=using, limit=limit, filter=flt, params=params)

    def nearest(
        self, vector: Any, using: str, flt: Any, params: Any, limit: int, payload: Any
    ) -> Any:
        query = models.NearestQuery(nearest=vector)
        return models.QueryRequest(
            query=query, using=using, filter=flt, params=params, limit=limit, with_payload=payload
        )

    def fused(self, fusion: Any, prefetches: list[Any], flt: Any, limit: int, payload: Any) -> Any:
        return models.QueryRequest(
            prefetch=prefetches, query=fusion, filter=flt, limit=limit, with_payload=payload
        )

    def vector_params(self, size: int) -> Any:
        return models.VectorParams(size=size, distance=models.Distance.COSINE)

    def sparse_params(self, idf: bool) -> Any:
        return models.SparseVectorParams(modifier=models.Modifier.IDF if idf else None)

    def quantization(self, kind: str) -> Any:
        if not self._server:
            return None
        if kind == "int8":
            config = models.ScalarQuantizationConfig(
                type=models.ScalarType.INT8, quantile=0.99, always_ram=True
            )
            return models.ScalarQuantization(scalar=config)
        return models.BinaryQuantization(binary=models.BinaryQuantizationConfig(always_ram=True))

    def hnsw(self, m: int, ef_construct: int, full_scan_threshold_kb: int) -> Any:
        if not self._server:
            return None
        return models.HnswConfigDiff(
            m=m, ef_construct=ef_construct, full_scan_threshold=full_scan_threshold_kb
        )

    def optimizers(self, indexing_threshold_kb: int) -> Any:
        if not self._server:
            return None
        return models.OptimizersConfigDiff(indexing_threshold=indexing_threshold_kb)
