"""Sharing an embedded vector store between processes through one named Ray actor.

The embedded engines (an edge shard, qdrant-client's local mode) lock their folder to one
process, while Ray Data writers and Serve replicas each live in their own. So one detached actor,
`rayweave-vectors-<collection>`, owns the store and everyone else calls it through
`RemoteVectorStore`, which implements the same `VectorStore` protocol. The actor is threaded
(reads run in parallel; the store serialises writes), takes no CPU so it never blocks scheduling,
and sits on the head node, where the data folder lives. A Qdrant server needs none of this:
each process opens its own client.

Points cross the actor boundary as `PointColumns` (a dense matrix and CSR sparse arrays), so a
batch costs a few buffers rather than one pickled object per point.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import ray
from ray.exceptions import ActorUnavailableError, GetTimeoutError, RayActorError, RayTaskError

from rayweave.cluster.errors import (
    InputError,
    RayweaveError,
    ServiceError,
    VectorStoreError,
    reraised_as,
)
from rayweave.cluster.services.idle import IdleResource
from rayweave.cluster.services.runtime import HEAD_NODE
from rayweave.cluster.settings import QDRANT_MEMORY, QdrantSettings, Settings
from rayweave.cluster.types import SparseVector
from rayweave.cluster.vectors.factory import open_vector_store
from rayweave.cluster.vectors.points import dense_matrix
from rayweave.cluster.vectors.store import (
    DENSE,
    IMAGE,
    SPARSE,
    CollectionSpec,
    Filter,
    ScoredPoint,
    VectorPoint,
    VectorQuery,
    VectorStore,
)

log = logging.getLogger(__name__)

ACTOR_PREFIX = "rayweave-vectors-"
# Restarts after a crash reopen the store from disk (its write-ahead log replays).
_MAX_RESTARTS = 3
# What `RemoteVectorStore._call` handles itself (retry, re-create, or report); the rest of a
# failed call becomes a VectorStoreError.
_RAY_ERRORS = (RayTaskError, GetTimeoutError, ActorUnavailableError, RayActorError)
# The actor's method set. Detached actors outlive upgrades: a caller whose code knows a newer set
# replaces an older actor (its data is on disk). 2: version and export, for replica copies;
# 3: hits in a canonical order (equal scores by id), as copies give them.
ACTOR_PROTOCOL = 3
# Points per `export` call: a few MB of vectors and payloads per Ray object.
EXPORT_PAGE = 512


def actor_name(collection: str) -> str:
    return f"{ACTOR_PREFIX}{collection}"


# ---------------------------------------------------------------------------------------------
# Columnar batches


@dataclass(frozen=True, slots=True, kw_only=True)
class PointColumns:
    """Points as columns. Rows whose `has_*` flag is False carry no such vector."""

    ids: list[str]
    payloads: list[Mapping[str, Any]]
    dense: np.ndarray | None = None  # (n, dim) float32
    has_dense: np.ndarray | None = None  # (n,) bool
    image: np.ndarray | None = None
    has_image: np.ndarray | None = None
    sparse_indptr: np.ndarray | None = None  # (n + 1,) int64, CSR row offsets
    sparse_indices: np.ndarray | None = None  # int64
    sparse_values: np.ndarray | None = None  # float32
    has_sparse: np.ndarray | None = None

    @classmethod
    def pack(cls, points: Sequence[VectorPoint]) -> PointColumns:
        ids = [p.id for p in points]
        dense, has_dense = _pack_dense(points, "dense")
        image, has_image = _pack_dense(points, "image")
        indptr = indices = values = has_sparse = None
        if any(p.sparse is not None for p in points):
            has_sparse = np.array([p.sparse is not None for p in points], dtype=bool)
            lengths = np.array(
                [len(p.sparse.indices) if p.sparse is not None else 0 for p in points]
            )
            indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
            try:
                indices = np.fromiter(
                    (i for p in points if p.sparse is not None for i in p.sparse.indices),
                    dtype=np.int64,
                    count=int(indptr[-1]),
                )
                values = np.fromiter(
                    (v for p in points if p.sparse is not None for v in p.sparse.values),
                    dtype=np.float32,
                    count=int(indptr[-1]),
                )
            except (TypeError, ValueError) as exc:
                raise InputError(
                    f"sparse vectors of points {ids[:5]} are not numeric: {exc}"
                ) from exc
        return cls(
            ids=ids,
            payloads=[p.payload for p in points],
            dense=dense,
            has_dense=has_dense,
            image=image,
            has_image=has_image,
            sparse_indptr=indptr,
            sparse_indices=indices,
            sparse_values=values,
            has_sparse=has_sparse,
        )

    def unpack(self) -> list[VectorPoint]:
        points = []
        for i, pid in enumerate(self.ids):
            sparse = None
            if self.has_sparse is not None and self.has_sparse[i]:
                assert self.sparse_indptr is not None
                assert self.sparse_indices is not None
                assert self.sparse_values is not None
                lo, hi = int(self.sparse_indptr[i]), int(self.sparse_indptr[i + 1])
                sparse = SparseVector(
                    indices=tuple(self.sparse_indices[lo:hi].tolist()),
                    values=tuple(self.sparse_values[lo:hi].tolist()),
                )
            points.append(
                VectorPoint(
                    id=pid,
                    payload=self.payloads[i],
                    dense=_row(self.dense, self.has_dense, i),
                    sparse=sparse,
                    image=_row(self.image, self.has_image, i),
                )
            )
        return points


def _pack_dense(
    points: Sequence[VectorPoint], attr: str
) -> tuple[np.ndarray | None, np.ndarray | None]:
    present = [(i, getattr(p, attr)) for i, p in enumerate(points) if getattr(p, attr) is not None]
    if not present:
        return None, None
    rows = dense_matrix([v for _, v in present], [points[i].id for i, _ in present], None, attr)
    if len(present) == len(points):
        return rows, np.ones(len(points), dtype=bool)
    matrix = np.zeros((len(points), rows.shape[1]), dtype=np.float32)
    mask = np.zeros(len(points), dtype=bool)
    where = [i for i, _ in present]
    matrix[where], mask[where] = rows, True
    return matrix, mask


def _row(matrix: np.ndarray | None, mask: np.ndarray | None, i: int) -> np.ndarray | None:
    if matrix is None or mask is None or not mask[i]:
        return None
    row: np.ndarray = matrix[i]
    return row


# ---------------------------------------------------------------------------------------------
# The actor


def _as_point(p: ScoredPoint) -> VectorPoint:
    dense, sparse, image = (p.vectors.get(k) for k in (DENSE, SPARSE, IMAGE))
    return VectorPoint(
        id=p.id,
        payload=p.payload,
        dense=dense if isinstance(dense, np.ndarray) else None,
        sparse=sparse if isinstance(sparse, SparseVector) else None,
        image=image if isinstance(image, np.ndarray) else None,
    )


@ray.remote(num_cpus=0, max_restarts=_MAX_RESTARTS)
class VectorStoreActor:
    """Owns one embedded store; Ray runs its methods on `max_concurrency` threads.

    The engine is closed after `idle_close_s` without calls and reopened by the next one
    (`cluster/services/idle.py`), so actors of collections nobody searches hold no engine."""

    def __init__(self, settings: QdrantSettings, path: str, collection: str) -> None:
        self._path, self._collection = path, collection
        self._engine = IdleResource(
            lambda: open_vector_store(settings, path=Path(path), collection=collection),
            lambda store: store.close(),
            idle_s=settings.idle_close_s,
        )
        self._engine.open()  # fail here, at acquire, on a bad path
        # What replica copies (`cluster/vectors/replica_copy.py`) poll: a new value after every
        # write, and a new prefix per actor life, since a restarted actor may have lost unflushed
        # writes.
        self._life = uuid.uuid4().hex[:12]
        self._writes = 0
        self._writes_lock = threading.Lock()
        self._stop = threading.Event()
        if settings.idle_close_s > 0:
            self._engine.watch(self._stop)

    def describe(self) -> dict[str, Any]:
        return {
            "collection": self._collection,
            "path": self._path,
            "pid": os.getpid(),
            "open": self._engine.is_open,
            "idle_s": round(self._engine.idle_for(), 1),
            "opens": self._engine.opens,
            "protocol": ACTOR_PROTOCOL,
        }

    def version(self) -> str:
        with self._writes_lock:
            return f"{self._life}:{self._writes}"

    @contextlib.contextmanager
    def _writing(self) -> Iterator[VectorStore]:
        """The engine for one write; the version changes after it, failed or not."""
        try:
            with self._engine.use() as store:
                yield store
        finally:
            with self._writes_lock:
                self._writes += 1

    def ensure_collection(self, spec: CollectionSpec) -> None:
        with self._writing() as store:
            store.ensure_collection(spec)

    def upsert(self, columns: PointColumns) -> int:
        with self._writing() as store:
            store.upsert(columns.unpack())
        return len(columns.ids)

    def delete(self, filter: Filter) -> int:
        with self._writing() as store:
            n: int = store.delete(filter)
        return n

    def set_payload(self, filter: Filter, payload: Mapping[str, Any]) -> int:
        with self._writing() as store:
            n: int = store.set_payload(filter, payload)
        return n

    def spec(self) -> CollectionSpec:
        with self._engine.use() as store:
            return store.spec()

    def export(self, offset: str | None, limit: int) -> tuple[PointColumns, str | None]:
        """A page of whole points (payload and vectors) in id order, for replica copies."""
        with self._engine.use() as store:
            page, next_offset = store.scroll(limit=limit, offset=offset)
            full = store.retrieve([p.id for p in page], with_vectors=True)
        return PointColumns.pack([_as_point(p) for p in full]), next_offset

    def query(self, query: VectorQuery) -> list[ScoredPoint]:
        with self._engine.use() as store:
            hits: list[ScoredPoint] = store.query(query)
        return hits

    def query_batch(self, queries: Sequence[VectorQuery]) -> list[list[ScoredPoint]]:
        with self._engine.use() as store:
            hits: list[list[ScoredPoint]] = store.query_batch(queries)
        return hits

    def retrieve(self, ids: Sequence[str], with_vectors: bool = False) -> list[ScoredPoint]:
        with self._engine.use() as store:
            found: list[ScoredPoint] = store.retrieve(ids, with_vectors=with_vectors)
        return found

    def count(self, filter: Filter | None = None) -> int:
        with self._engine.use() as store:
            n: int = store.count(filter)
        return n

    def scroll(
        self, filter: Filter | None = None, limit: int = 256, offset: str | None = None
    ) -> tuple[list[ScoredPoint], str | None]:
        with self._engine.use() as store:
            page: tuple[list[ScoredPoint], str | None] = store.scroll(
                filter=filter, limit=limit, offset=offset
            )
        return page

    def optimize(self) -> None:
        with self._engine.use() as store:
            store.optimize()

    def drop(self) -> None:
        with self._writing() as store:
            store.drop()

    def close(self) -> None:
        self._stop.set()
        self._engine.close()


def _acquire_actor(settings: QdrantSettings, path: Path, collection: str, namespace: str) -> Any:
    """Get or create the named actor (race-safe: Ray resolves concurrent creators to one),
    replacing one that older code started (see `ACTOR_PROTOCOL`)."""
    deadline = time.monotonic() + settings.timeout_s
    replacing = False
    while True:
        try:
            handle, info = _get_or_create(settings, path, collection, namespace)
        except VectorStoreError:
            if not replacing or time.monotonic() >= deadline:
                raise
            time.sleep(0.5)  # found the replaced actor still dying
            continue
        if int(info.get("protocol", 1)) >= ACTOR_PROTOCOL:
            return handle
        if time.monotonic() >= deadline:
            raise VectorStoreError(
                f"vector actor {actor_name(collection)!r} runs older code and was not replaced "
                f"within {settings.timeout_s}s; restart the stack (rayweave stop, rayweave start)"
            )
        log.warning("vector actor %s runs older code: replacing it", actor_name(collection))
        with contextlib.suppress(Exception):
            ray.kill(handle, no_restart=True)
        replacing = True
        time.sleep(0.5)  # the name is released once the actor is dead


def _get_or_create(
    settings: QdrantSettings, path: Path, collection: str, namespace: str
) -> tuple[Any, dict[str, Any]]:
    name = actor_name(collection)
    handle = VectorStoreActor.options(  # type: ignore[attr-defined]
        name=name,
        namespace=namespace,
        lifetime="detached",
        get_if_exists=True,
        max_concurrency=settings.actor_max_concurrency,
        resources=HEAD_NODE,
    ).remote(settings, str(path), collection)
    try:
        info = ray.get(handle.describe.remote(), timeout=settings.timeout_s)
    except RayActorError as exc:
        raise VectorStoreError(f"vector actor {name!r} failed to start: {exc}") from exc
    except GetTimeoutError as exc:
        raise VectorStoreError(
            f"vector actor {name!r} did not start within {settings.timeout_s}s"
        ) from exc
    if Path(info["path"]) != path:
        raise VectorStoreError(
            f"vector actor {name!r} in namespace {namespace!r} serves {info['path']}, not {path}; "
            "stop it (rayweave stop) or use another namespace"
        )
    return handle, info


# ---------------------------------------------------------------------------------------------
# The proxy


class RemoteVectorStore:
    """`VectorStore` that forwards every call to the shared named actor.

    Errors raised by the store (QueryError, NotFoundError, VectorStoreError, ...) arrive with
    their own type; transport failures become VectorStoreError with the cause attached. A call
    that finds the actor restarting waits for it (within the call's timeout); one that finds it
    dead re-creates it from disk and retries once. Retrying is safe: every operation of the
    protocol is idempotent.
    """

    def __init__(
        self, settings: QdrantSettings, *, path: Path, collection: str, namespace: str
    ) -> None:
        self._settings = settings
        self._path = Path(path).expanduser()
        self._collection = collection
        self._namespace = namespace
        self._name = actor_name(collection)
        self._handle = _acquire_actor(settings, self._path, collection, namespace)

    def __repr__(self) -> str:
        return f"RemoteVectorStore({self._collection!r} via actor {self._name!r})"

    def _call(self, method: str, *args: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
        timeout = timeout_s or self._settings.timeout_s
        deadline = time.monotonic() + timeout
        reacquired = False
        failed = f"vector actor {self._name!r}: {method} failed"
        while True:
            try:
                with reraised_as(VectorStoreError, failed, keep=_RAY_ERRORS):
                    ref = getattr(self._handle, method).remote(*args, **kwargs)
                    return ray.get(ref, timeout=max(deadline - time.monotonic(), 0.1))
            except RayTaskError as exc:
                cause = exc.cause
                if isinstance(cause, RayweaveError):
                    raise cause from exc
                raise VectorStoreError(f"{failed}: {cause!r}") from cause
            except GetTimeoutError as exc:
                raise VectorStoreError(
                    f"vector actor {self._name!r} did not answer {method} within {timeout}s"
                ) from exc
            except ActorUnavailableError as exc:
                # Restarting after a crash (or unreachable for a moment): wait for it.
                if time.monotonic() >= deadline:
                    raise VectorStoreError(
                        f"vector actor {self._name!r} stayed unavailable: {exc}"
                    ) from exc
                time.sleep(0.2)
            except RayActorError as exc:
                # Dead for good: re-create it from disk, once.
                if reacquired:
                    raise VectorStoreError(
                        f"vector actor {self._name!r} is unavailable: {exc}"
                    ) from exc
                log.warning("vector actor %s died during %s; re-creating it", self._name, method)
                reacquired = True
                self._handle = _acquire_actor(
                    self._settings, self._path, self._collection, self._namespace
                )

    def ensure_collection(self, spec: CollectionSpec) -> None:
        self._call("ensure_collection", spec)

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        batch = self._settings.upsert_batch
        # Sequential batches keep last-write-wins order for repeated ids.
        for start in range(0, len(points), batch):
            self._call("upsert", PointColumns.pack(points[start : start + batch]))

    def delete(self, filter: Filter) -> int:
        n: int = self._call("delete", filter)
        return n

    def set_payload(self, filter: Filter, payload: Mapping[str, Any]) -> int:
        n: int = self._call("set_payload", filter, dict(payload))
        return n

    def query(self, query: VectorQuery) -> list[ScoredPoint]:
        hits: list[ScoredPoint] = self._call("query", query)
        return hits

    def query_batch(self, queries: Sequence[VectorQuery]) -> list[list[ScoredPoint]]:
        hits: list[list[ScoredPoint]] = self._call("query_batch", list(queries))
        return hits

    def retrieve(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[ScoredPoint]:
        found: list[ScoredPoint] = self._call("retrieve", list(ids), with_vectors)
        return found

    def count(self, filter: Filter | None = None) -> int:
        n: int = self._call("count", filter)
        return n

    def scroll(
        self, *, filter: Filter | None = None, limit: int = 256, offset: str | None = None
    ) -> tuple[list[ScoredPoint], str | None]:
        page: tuple[list[ScoredPoint], str | None] = self._call("scroll", filter, limit, offset)
        return page

    def spec(self) -> CollectionSpec:
        spec: CollectionSpec = self._call("spec")
        return spec

    def version(self) -> str:
        """Changes after every write through the actor (see `VectorStoreActor.version`)."""
        v: str = self._call("version")
        return v

    def export(
        self, *, offset: str | None = None, limit: int = EXPORT_PAGE
    ) -> tuple[list[VectorPoint], str | None]:
        """A page of whole points, vectors included, and the cursor of the next (None: done)."""
        columns, next_offset = self._call("export", offset, limit)
        return columns.unpack(), next_offset

    def optimize(self) -> None:
        self._call("optimize", timeout_s=self._settings.optimize_timeout_s)

    def drop(self) -> None:
        self._call("drop")

    def close(self) -> None:
        """Releases this proxy only: the actor keeps serving others until
        `shutdown_vector_actors`."""


# ---------------------------------------------------------------------------------------------
# Entry points


def connect_vector_store(
    settings: QdrantSettings,
    *,
    path: Path,
    collection: str | None = None,
    namespace: str = "rayweave",
    shared: bool,
) -> VectorStore:
    """The store a component should use in its own process.

    A server URL gives a direct client (one per process or actor, as in production). An embedded
    backend gives, with `shared=True`, a proxy to the get-or-created named actor (the caller must
    be connected to Ray), else the store opened in this process, which then owns its folder.
    """
    name = collection or settings.collection
    if settings.backend == "client" and settings.url not in (None, QDRANT_MEMORY):
        return open_vector_store(settings, path=path, collection=name)
    if not shared:
        return open_vector_store(settings, path=path, collection=name)
    if not ray.is_initialized():
        raise ServiceError(
            "a shared embedded vector store needs a connected Ray runtime (ray.init)"
        )
    return RemoteVectorStore(settings, path=path, collection=name, namespace=namespace)


def vector_store_for(
    settings: Settings, collection: str | None = None, *, shared: bool = True
) -> VectorStore:
    """`connect_vector_store` with everything it needs taken from rayweave's settings."""
    return connect_vector_store(
        settings.qdrant,
        path=settings.vector_path,
        collection=collection or settings.qdrant.collection,
        namespace=settings.ray.namespace,
        shared=shared,
    )


def _actor_names(namespace: str) -> list[str]:
    return sorted(
        entry["name"]
        for entry in ray.util.list_named_actors(all_namespaces=True)
        if isinstance(entry, dict)
        and entry["namespace"] == namespace
        and entry["name"].startswith(ACTOR_PREFIX)
    )


def describe_vector_actors(
    namespace: str = "rayweave", *, timeout_s: float = 10.0
) -> list[dict[str, Any]]:
    """What each vector actor in `namespace` holds: collection, path, whether its engine is open,
    seconds since its last call (an actor that does not answer says so in `error`)."""
    if not ray.is_initialized():
        raise ServiceError("listing vector actors needs a connected Ray runtime (ray.init)")
    out: list[dict[str, Any]] = []
    for name in _actor_names(namespace):
        try:
            handle = ray.get_actor(name, namespace=namespace)
            info: Any = ray.get(handle.describe.remote(), timeout=timeout_s)
            out.append(dict(info))
        except Exception as exc:  # noqa: BLE001 - gone or unresponsive: still listed
            out.append({"collection": name.removeprefix(ACTOR_PREFIX), "error": repr(exc)})
    return out


def shutdown_vector_actors(namespace: str = "rayweave", *, timeout_s: float = 30.0) -> list[str]:
    """Flush and close every vector actor in `namespace`, then kill it; returns their names."""
    if not ray.is_initialized():
        raise ServiceError("shutting down vector actors needs a connected Ray runtime (ray.init)")
    names = _actor_names(namespace)
    for name in names:
        try:
            handle = ray.get_actor(name, namespace=namespace)
        except ValueError:
            continue  # already gone
        try:
            ray.get(handle.close.remote(), timeout=timeout_s)
        except Exception as exc:  # noqa: BLE001 - kill it anyway; the WAL covers unflushed writes
            log.warning("vector actor %s did not close cleanly: %s", name, exc)
        ray.kill(handle, no_restart=True)
    return names
