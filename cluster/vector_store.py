"""The vector store interface that ingestion writes to and retrievers read from.

One store instance serves one collection (a namespace): every chunk level lives in it, told
apart by the `level` payload field. Points carry a named dense vector (`dense`), an optional
sparse vector (`sparse`) and optional image vectors (`image`); ids are chunk ids, mapped to
UUIDs inside the adapters because Qdrant accepts only integers and UUIDs.

Adapters: `QdrantEdgeStore` (qdrant-edge-py, in-process, the default) and `QdrantClientStore`
(qdrant-client: a server URL, or its local mode). `open_vector_store` picks one from settings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

import numpy as np

from rayweave.cluster.settings import QdrantSettings
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
        "doc_id",
        "level",
        "content_type",
        "language",
        "parent_id",
        "source",
    )


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
    with_payload: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoredPoint:
    id: str
    score: float
    payload: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class VectorStore(Protocol):
    def ensure_collection(self, spec: CollectionSpec) -> None:
        """Create the collection if missing; verify its shape if present."""

    def upsert(self, points: Sequence[VectorPoint]) -> None: ...

    def delete(self, filter: Filter) -> int:
        """Delete matching points; returns how many were deleted."""

    def query(self, query: VectorQuery) -> list[ScoredPoint]: ...

    def query_batch(self, queries: Sequence[VectorQuery]) -> list[list[ScoredPoint]]: ...

    def retrieve(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[ScoredPoint]: ...

    def count(self, filter: Filter | None = None) -> int: ...

    def scroll(
        self, *, filter: Filter | None = None, limit: int = 256, offset: str | None = None
    ) -> tuple[list[ScoredPoint], str | None]: ...

    def optimize(self) -> None:
        """Build indexes/quantization now (embedded engines); a no-op for servers."""

    def drop(self) -> None:
        """Remove the collection and its data."""

    def close(self) -> None: ...


def open_vector_store(
    settings: QdrantSettings, *, path: Path, collection: str | None = None
) -> VectorStore:
    """Open the configured adapter in this process for `collection` (default: settings.collection)."""
    name = collection or settings.collection
    if settings.backend == "edge":
        from rayweave.cluster.qdrant_edge_store import QdrantEdgeStore

        return QdrantEdgeStore(settings, path=path, collection=name)
    from rayweave.cluster.qdrant_client_store import QdrantClientStore

    return QdrantClientStore(settings, path=path, collection=name)
