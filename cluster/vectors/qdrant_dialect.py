"""What the two Qdrant SDKs are asked to build, and the builders written once on top of them.

qdrant-client and qdrant-edge-py model one engine with different classes. Each adapter supplies a
`QdrantDialect` (constructors only, no decisions); filters, points, search requests and
collection configs are assembled here, so both adapters send the engine the same requests and
cannot drift apart (the bool handling of filters once did).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Protocol

from rayweave.cluster.settings import QdrantSettings
from rayweave.cluster.types import SparseVector
from rayweave.cluster.vectors.points import FieldMatch, PreparedPoint, PreparedQuery, Scalar
from rayweave.cluster.vectors.store import DENSE, IMAGE, SPARSE, CollectionSpec


class QdrantDialect(Protocol):
    """One SDK's constructors. A method returning None leaves that setting to the engine."""

    @property
    def sparse_type(self) -> type:
        """The SDK's sparse vector class, to recognise sparse vectors read back."""

    def sparse(self, vector: SparseVector) -> Any: ...

    def point(self, uuid: str, vectors: dict[str, Any], payload: dict[str, Any]) -> Any: ...

    def match_value(self, key: str, value: Scalar) -> Any: ...

    def match_any(self, key: str, values: list[str] | list[int]) -> Any: ...

    def filter(self, *, must: list[Any] | None = None, should: list[Any] | None = None) -> Any: ...

    def quantization_search(self, oversampling: float) -> Any: ...

    def search_params(self, hnsw_ef: int, exact: bool, quantization: Any) -> Any: ...

    def fusion(self, kind: str, rrf_k: int) -> Any: ...

    def prefetch(self, vector: Any, using: str, limit: int, flt: Any, params: Any) -> Any: ...

    def nearest(
        self, vector: Any, using: str, flt: Any, params: Any, limit: int, payload: Any
    ) -> Any: ...

    def fused(self, fusion: Any, prefetches: list[Any], flt: Any, limit: int, payload: Any) -> Any:
        """A request fusing the prefetches' candidates."""

    def vector_params(self, size: int) -> Any: ...

    def sparse_params(self, idf: bool) -> Any: ...

    def quantization(self, kind: str) -> Any:
        """`kind` is "int8" or "binary"."""

    def hnsw(self, m: int, ef_construct: int, full_scan_threshold_kb: int) -> Any: ...

    def optimizers(self, indexing_threshold_kb: int) -> Any: ...


# ---------------------------------------------------------------------------------------------
# Filters


def engine_condition(d: QdrantDialect, m: FieldMatch) -> Any:
    """Bools always match by value: MatchAny takes only strings and integers, so an any-of over
    bools is a `should` of single matches."""
    if m.values and isinstance(m.values[0], bool):
        if m.any_of and len(m.values) > 1:
            return d.filter(should=[d.match_value(m.key, v) for v in m.values])
        return d.match_value(m.key, m.values[0])
    if m.any_of:
        texts = [v for v in m.values if isinstance(v, str)]
        numbers = [v for v in m.values if not isinstance(v, str)]
        return d.match_any(m.key, numbers if numbers else texts)
    return d.match_value(m.key, m.values[0])


def engine_must(d: QdrantDialect, matches: list[FieldMatch]) -> Any:
    return d.filter(must=[engine_condition(d, m) for m in matches])


def engine_filter(d: QdrantDialect, matches: list[FieldMatch]) -> Any:
    """No filter at all (None) when nothing is asked, which engines treat as "everything"."""
    return engine_must(d, matches) if matches else None


# ---------------------------------------------------------------------------------------------
# Points and requests


def engine_point(d: QdrantDialect, p: PreparedPoint) -> Any:
    vectors: dict[str, Any] = {}
    if p.dense is not None:
        vectors[DENSE] = p.dense
    if p.sparse is not None:
        vectors[SPARSE] = d.sparse(p.sparse)
    if p.image is not None:
        vectors[IMAGE] = p.image
    return d.point(p.uuid, vectors, p.payload)


def search_params(d: QdrantDialect, s: QdrantSettings, exact: bool) -> Any:
    quant = None
    if s.quantization != "none":
        quant = d.quantization_search(s.quantization_oversampling)
    return d.search_params(s.search_ef, exact, quant)


def engine_request(d: QdrantDialect, s: QdrantSettings, pq: PreparedQuery) -> Any:
    """Hybrid: dense and sparse prefetches fused in the engine; else one nearest search."""
    flt = engine_filter(d, pq.matches)
    params = search_params(d, s, pq.exact)
    if pq.mode == "hybrid":
        assert pq.dense is not None
        assert pq.sparse is not None
        prefetches = [
            d.prefetch(pq.dense, DENSE, pq.prefetch_limit, flt, params),
            d.prefetch(d.sparse(pq.sparse), SPARSE, pq.prefetch_limit, flt, None),
        ]
        fusion = d.fusion(pq.fusion, s.rrf_k)
        return d.fused(fusion, prefetches, flt, pq.limit, pq.payload_selector)
    vector: Any
    if pq.mode == "sparse":
        assert pq.sparse is not None
        vector, using = d.sparse(pq.sparse), SPARSE
    else:
        assert pq.dense is not None
        vector, using = pq.dense, IMAGE if pq.mode == "image" else DENSE
    return d.nearest(vector, using, flt, params, pq.limit, pq.payload_selector)


# ---------------------------------------------------------------------------------------------
# Collections


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectionConfig:
    """A collection's engine settings in one SDK's classes (None: the engine's default), named
    as Qdrant's API (and qdrant-client's `create_collection`) names them."""

    vectors_config: dict[str, Any]
    sparse_vectors_config: dict[str, Any] | None
    quantization_config: Any
    hnsw_config: Any
    optimizers_config: Any

    def as_kwargs(self) -> dict[str, Any]:
        """The fields by name, values as they are (`asdict` would deep-copy SDK objects)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def collection_config(
    d: QdrantDialect, s: QdrantSettings, spec: CollectionSpec
) -> CollectionConfig:
    vectors = {DENSE: d.vector_params(spec.dense_dim)}
    if spec.image_dim is not None:
        vectors[IMAGE] = d.vector_params(spec.image_dim)
    return CollectionConfig(
        vectors_config=vectors,
        sparse_vectors_config={SPARSE: d.sparse_params(s.sparse_idf)} if spec.sparse else None,
        quantization_config=None if s.quantization == "none" else d.quantization(s.quantization),
        hnsw_config=d.hnsw(s.hnsw_m, s.hnsw_ef_construct, s.indexing_threshold_kb),
        optimizers_config=d.optimizers(s.indexing_threshold_kb),
    )


def payload_indexes(spec: CollectionSpec) -> list[tuple[str, str]]:
    """(field, "keyword" | "bool") for every payload field the spec indexes."""
    return [
        *((f, "keyword") for f in spec.keyword_fields),
        *((f, "bool") for f in spec.bool_fields),
    ]
