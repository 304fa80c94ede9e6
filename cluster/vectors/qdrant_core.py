"""The `VectorStore` contract written once for both Qdrant adapters.

Validation, conversion, batching and ranking live here; an adapter only says how its SDK runs
each engine call (and with which locks), through the abstract `_...` methods below. Every input
is checked before an engine sees it, so both adapters reject the same input with one message.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

from rayweave.cluster.errors import InputError, VectorStoreError, reraised_as
from rayweave.cluster.settings import QdrantSettings
from rayweave.cluster.types import point_uuid
from rayweave.cluster.vectors.points import (
    CHUNK_ID,
    PreparedQuery,
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
from rayweave.cluster.vectors.qdrant_dialect import (
    QdrantDialect,
    engine_filter,
    engine_must,
    engine_point,
    engine_request,
)
from rayweave.cluster.vectors.store import (
    CollectionSpec,
    Filter,
    ScoredPoint,
    VectorPoint,
    VectorQuery,
)


def in_use_error(collection: str, where: object) -> VectorStoreError:
    """Embedded engines lock their folder; the message says how to share it instead."""
    return VectorStoreError(
        f"vector collection {collection!r} at {where} is open in another process; "
        "embedded Qdrant is single-process: share it through the vector actor "
        "(connect_vector_store(..., shared=True))"
    )


class QdrantStoreCore(ABC):
    """One collection; subclasses run the engine calls (see module docstring)."""

    # Names the SDK in error messages.
    ENGINE: ClassVar[str]

    def __init__(self, settings: QdrantSettings, collection: str, dialect: QdrantDialect) -> None:
        self._settings = settings
        self._name = collection
        self._dialect = dialect
        self._lock = threading.RLock()
        self._spec: CollectionSpec | None = None
        self._closed = False

    # -- what an adapter runs -------------------------------------------------------------------

    @abstractmethod
    def _require(self) -> CollectionSpec:
        """The collection's shape, opening an existing collection on first use."""

    @abstractmethod
    def _write(self, batches: list[list[Any]]) -> None:
        """Upsert the engine points, batch by batch, durably."""

    @abstractmethod
    def _delete(self, flt: Any) -> int:
        """Delete the points matching the engine filter; returns how many."""

    @abstractmethod
    def _set_payload(self, flt: Any, values: dict[str, Any]) -> int:
        """Merge `values` into the matching points (none when empty); returns how many match."""

    @abstractmethod
    def _search(self, request: Any) -> list[Any]:
        """Hits (`id`, `score`, `payload`) of one engine request."""

    @abstractmethod
    def _search_batch(self, requests: list[Any]) -> list[list[Any]]:
        """Hits of each request, in order."""

    @abstractmethod
    def _fetch(self, uuids: list[str], with_vectors: bool) -> list[Any]:
        """Records (`id`, `payload`, `vector`) of the points that exist, in any order."""

    @abstractmethod
    def _count(self, flt: Any) -> int: ...

    @abstractmethod
    def _scroll(self, flt: Any, limit: int, offset: str | None) -> tuple[list[Any], object]:
        """A page of records (with payloads) and the engine's next offset (None at the end)."""

    # -- shared pieces --------------------------------------------------------------------------

    def _check_name(self, spec: CollectionSpec) -> None:
        if spec.name != self._name:
            raise ValueError(
                f"spec names collection {spec.name!r}, this store holds {self._name!r}"
            )

    def _check_open(self) -> None:
        if self._closed:
            raise VectorStoreError(f"vector store for collection {self._name!r} is closed")

    @contextmanager
    def _engine(self, op: str) -> Iterator[None]:
        """SDK errors (HTTP, engine and local-mode errors are plain exceptions) become
        VectorStoreErrors naming the collection."""
        with reraised_as(
            VectorStoreError, f"{self.ENGINE} {op} on collection {self._name!r} failed"
        ):
            yield

    def _request(self, pq: PreparedQuery) -> Any:
        return engine_request(self._dialect, self._settings, pq)

    # -- the VectorStore contract ---------------------------------------------------------------

    def spec(self) -> CollectionSpec:
        return self._require()

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        if not points:
            return
        prepared = prepare_points(points, self._require())
        size = self._settings.upsert_batch
        self._write(
            [
                [engine_point(self._dialect, p) for p in prepared[start : start + size]]
                for start in range(0, len(prepared), size)
            ]
        )

    def delete(self, filter: Filter) -> int:
        flt = engine_must(self._dialect, require_filter(filter, "delete"))
        self._require()
        return self._delete(flt)

    def set_payload(self, filter: Filter, payload: Mapping[str, Any]) -> int:
        flt = engine_must(self._dialect, require_filter(filter, "set_payload"))
        values = json_payload(payload, "set_payload")
        if CHUNK_ID in values:
            raise InputError(
                f"set_payload may not change {CHUNK_ID!r}: it maps points back to chunks"
            )
        self._require()
        return self._set_payload(flt, values)

    def query(self, query: VectorQuery) -> list[ScoredPoint]:
        pq = prepare_query(query, self._require())
        return _ranked_hits(self._search(self._request(pq)), pq)

    def query_batch(self, queries: Sequence[VectorQuery]) -> list[list[ScoredPoint]]:
        if not queries:
            return []
        spec = self._require()
        prepared = [prepare_query(q, spec) for q in queries]
        found = self._search_batch([self._request(pq) for pq in prepared])
        return [_ranked_hits(hits, pq) for pq, hits in zip(prepared, found, strict=True)]

    def retrieve(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[ScoredPoint]:
        if not ids:
            return []
        self._require()
        uuids = [point_uuid(i) for i in ids]
        by_uuid = {str(r.id): r for r in self._fetch(uuids, with_vectors)}
        sparse_type = self._dialect.sparse_type
        return [
            ScoredPoint(
                id=chunk_id_of(rec.payload, rec.id),
                score=0.0,
                payload=rec.payload or {},
                vectors=point_vectors(rec.vector, sparse_type) if with_vectors else {},
            )
            for rec in (by_uuid.get(uuid) for uuid in uuids)
            if rec is not None
        ]

    def count(self, filter: Filter | None = None) -> int:
        flt = engine_filter(self._dialect, parse_filter(filter))
        self._require()
        return self._count(flt)

    def scroll(
        self, *, filter: Filter | None = None, limit: int = 256, offset: str | None = None
    ) -> tuple[list[ScoredPoint], str | None]:
        if limit < 1:
            raise InputError(f"scroll limit must be at least 1, got {limit}")
        flt = engine_filter(self._dialect, parse_filter(filter))
        self._require()
        records, next_offset = self._scroll(flt, limit, offset)
        points = [scored_point(r.id, 0.0, r.payload, True) for r in records]
        return points, None if next_offset is None else str(next_offset)


def _ranked_hits(hits: list[Any], pq: PreparedQuery) -> list[ScoredPoint]:
    out: list[ScoredPoint] = ranked(
        [scored_point(h.id, h.score, h.payload, pq.with_payload) for h in hits]
    )
    return out
