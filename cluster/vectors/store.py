"""The vector store interface that ingestion writes to and retrievers read from.

One store instance serves one collection (a namespace): every chunk level lives in it, told
apart by the `level` payload field. Points carry a named dense vector (`dense`), an optional
sparse vector (`sparse`) and optional image vectors (`image`); ids are chunk ids, mapped to
UUIDs inside the adapters because Qdrant accepts only integers and UUIDs.

Adapters: `QdrantEdgeStore` (qdrant-edge-py, in-process, the default) and `QdrantClientStore`
(qdrant-client: a server URL, or its local mode); `rayweave.cluster.vectors.factory` picks one
from settings. Embedded engines lock their folder to one process; components in other processes
(Ray Data writers, Serve replicas) use `rayweave.cluster.vectors.service.connect_vector_store`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

import numpy as np

from rayweave.cluster.types import SparseVector

# Equality on a keyword/int/bool payload field, or any-of when the value is a list/tuple.
FilterValue: TypeAlias = str | int | bool | Sequence[str] | Sequence[int]
Filter: TypeAlias = Mapping[str, FilterValue]
SearchMode = Literal["dense", "sparse", "hybrid", "image"]

DENSE = "dense"
SPARSE = "sparse"
IMAGE = "image"


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectionSpec:
    """Shape of a collection. Re-opening with a different shape is an error, not a silent reset."""

    name: str
    dense_dim: int
    sparse: bool = True
    image_dim: int | None = None
    # Payload fields that get a keyword index (filters on them stay fast at scale).
    keyword_fields: tuple[str, ...] = (
        "chunk_id",
        "doc_id",
        "level",
        "content_type",
        "language",
        "parent_id",
        "source",
    )
    # Payload fields that get a bool index: `visible` hides a document's chunks until all are
    # written.
    bool_fields: tuple[str, ...] = ("visible",)


@dataclass(frozen=True, slots=True, kw_only=True)
class VectorPoint:
    id: str
    payload: Mapping[str, Any]
    dense: np.ndarray | Sequence[float] | None = None
    sparse: SparseVector | None = None
    image: np.ndarray | Sequence[float] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class VectorQuery:
    """One search. `hybrid` prefetches dense and sparse candidates and fuses them in Qdrant."""

    mode: SearchMode = "dense"
    dense: np.ndarray | Sequence[float] | None = None
    sparse: SparseVector | None = None
    limit: int = 10
    filter: Filter | None = None
    prefetch_limit: int = 50
    fusion: Literal["rrf", "dbsf"] = "rrf"
    exact: bool = False
    # True: the whole payload; False: none; names: only those fields (a search that passes ids
    # on and reads text later should not copy every hit's text).
    with_payload: bool | tuple[str, ...] = True


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoredPoint:
    """A search hit or a retrieved point; `id` is the chunk id, `score` 0.0 outside searches.

    `vectors` is filled only by `retrieve(..., with_vectors=True)`: dense and image vectors as
    float32 arrays (cosine collections return them normalised), sparse as `SparseVector`.
    """

    id: str
    score: float
    payload: Mapping[str, Any] = field(default_factory=dict)
    vectors: Mapping[str, np.ndarray | SparseVector] = field(default_factory=dict)


@runtime_checkable
class VectorStore(Protocol):
    """One collection of points. Implementations are safe to call from several threads.

    Writes are acknowledged only once durable (flushed, or confirmed by the server). Filters map
    payload fields to a value (equality) or a list (any-of); all entries must hold. Mutations by
    filter refuse an empty filter: `drop()` is the way to remove everything.
    """

    def ensure_collection(self, spec: CollectionSpec) -> None:
        """Create the collection if missing; verify its shape if present (VectorStoreError if
        not)."""

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points by id; the same ids twice leave one copy."""

    def delete(self, filter: Filter) -> int:
        """Delete matching points; returns how many were deleted."""

    def set_payload(self, filter: Filter, payload: Mapping[str, Any]) -> int:
        """Merge `payload`'s keys into every matching point's payload; returns how many matched.

        Ingestion writes a document's chunks with `visible=False`, then flips them all to True
        with one call, so readers filtering on `visible` never see half a document.
        """

    def query(self, query: VectorQuery) -> list[ScoredPoint]:
        """Best matches first. `image` mode searches the `image` vector with `query.dense`."""

    def query_batch(self, queries: Sequence[VectorQuery]) -> list[list[ScoredPoint]]:
        """One result list per query, in order; engines plan the batch as a whole."""

    def retrieve(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[ScoredPoint]:
        """Points by chunk id, in the order asked; unknown ids are left out."""

    def count(self, filter: Filter | None = None) -> int:
        """Exact number of matching points."""

    def scroll(
        self, *, filter: Filter | None = None, limit: int = 256, offset: str | None = None
    ) -> tuple[list[ScoredPoint], str | None]:
        """A page of points in id order and an opaque cursor for the next page (None at the end)."""

    def spec(self) -> CollectionSpec:
        """The shape of the existing collection (NotFoundError when there is none)."""

    def optimize(self) -> None:
        """Build indexes/quantization now (embedded engines); a no-op for servers."""

    def drop(self) -> None:
        """Remove the collection and its data."""

    def close(self) -> None:
        """Flush and release the collection (files, locks, connections)."""
