"""Replica copies of an embedded collection: the same answers as its actor, never staler than a
poll, and no copy above the size limit. On a real Ray with a real vector store actor."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from rayweave.cluster.settings import QdrantSettings
from rayweave.cluster.types import SparseVector
from rayweave.cluster.vectors.replica_copy import ReplicaVectorStore
from rayweave.cluster.vectors.service import (
    RemoteVectorStore,
    connect_vector_store,
    shutdown_vector_actors,
)
from rayweave.cluster.vectors.store import CollectionSpec, VectorPoint, VectorQuery

pytestmark = pytest.mark.integration

DIM = 16
SETTINGS = QdrantSettings(upsert_batch=64, timeout_s=60)
REFRESH_S = 0.2


def points(prefix: str, n: int, seed: int) -> list[VectorPoint]:
    rng = np.random.default_rng(seed)
    return [
        VectorPoint(
            id=f"{prefix}-{i}",
            payload={"doc_id": f"{prefix}-doc{i // 10}", "visible": True, "text": f"t{i}"},
            dense=rng.standard_normal(DIM).astype(np.float32),
            sparse=SparseVector(
                indices=(i, 300 + i % 5), values=tuple(rng.uniform(0.1, 1.0, 2).tolist())
            ),
        )
        for i in range(n)
    ]


@pytest.fixture
def remote(ray_session: None, tmp_path: Path) -> Iterator[RemoteVectorStore]:
    namespace = f"rw-copy-{uuid.uuid4().hex[:8]}"
    store = connect_vector_store(
        SETTINGS, path=tmp_path / "vectors", collection="c", namespace=namespace, shared=True
    )
    assert isinstance(store, RemoteVectorStore)
    store.ensure_collection(CollectionSpec(name="c", dense_dim=DIM))
    store.upsert(points("a", 300, seed=1))
    yield store
    shutdown_vector_actors(namespace)


@pytest.fixture
def replica(
    remote: RemoteVectorStore, tmp_path: Path
) -> Iterator[Callable[[int], ReplicaVectorStore]]:
    made: list[ReplicaVectorStore] = []

    def make(max_points: int) -> ReplicaVectorStore:
        made.append(
            ReplicaVectorStore(
                remote,
                SETTINGS,
                collection="c",
                root=tmp_path / "copies",
                max_points=max_points,
                refresh_s=REFRESH_S,
            )
        )
        return made[-1]

    yield make
    for store in made:
        store.close()


def until(condition: Callable[[], bool], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


def queries(seed: int) -> list[VectorQuery]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(10):
        dense = rng.standard_normal(DIM).astype(np.float32)
        sparse = SparseVector(indices=(i * 7, 301), values=(1.0, 0.3))
        flt = {"visible": True} if i % 2 else {"doc_id": ["a-doc1", "a-doc3", "b-doc0"]}
        out += [
            VectorQuery(mode="dense", dense=dense, limit=20, filter=flt),
            VectorQuery(mode="sparse", sparse=sparse, limit=20, filter=flt),
            # Every fused candidate: equal fused scores at a cut-off may fall either way.
            VectorQuery(mode="hybrid", dense=dense, sparse=sparse, limit=200),
        ]
    return out


def answers(
    store: ReplicaVectorStore | RemoteVectorStore,
    modes: tuple[str, ...] = ("dense", "sparse", "hybrid"),
) -> list[list[tuple[float, str]]]:
    """Hits by score, ties by id: engines order equal scores by storage, which a copy redoes."""
    return [
        sorted((-round(h.score, 5), h.id) for h in store.query(q))
        for q in queries(7)
        if q.mode in modes
    ]


def test_the_copy_answers_what_the_actor_answers(
    remote: RemoteVectorStore, replica: Callable[[int], ReplicaVectorStore]
) -> None:
    store = replica(10_000)
    until(lambda: store.reading_from == "copy")
    assert answers(store) == answers(remote)
    assert [p.id for p in store.retrieve(["a-5", "nope", "a-7"])] == ["a-5", "a-7"]
    assert store.retrieve(["a-5"])[0].payload["text"] == "t5"
    assert store.count({"doc_id": "a-doc2"}) == 10


def test_writes_are_seen_at_once_by_the_writer_and_within_a_poll_by_others(
    remote: RemoteVectorStore, replica: Callable[[int], ReplicaVectorStore]
) -> None:
    store, other = replica(10_000), replica(10_000)
    until(lambda: store.reading_from == "copy" and other.reading_from == "copy")
    store.delete({"doc_id": "a-doc0"})
    # The writer reads its own write at once: through the actor until its copy catches up.
    assert store.count({"doc_id": "a-doc0"}) == 0
    # Another replica sees it within one poll (plus the poll's own call).
    time.sleep(REFRESH_S * 3)
    assert other.count({"doc_id": "a-doc0"}) == 0
    until(lambda: store.reading_from == "copy")
    built = store.builds
    other.upsert(points("b", 20, seed=2))
    # The other replica's write reaches this copy by a rebuild once writes pause.
    until(lambda: store.reading_from == "copy" and store.builds > built)
    assert [p.id for p in store.retrieve(["b-3"])] == ["b-3"]
    # Sparse scores weigh terms by IDF, which the actor's engine still counts over the deleted
    # points (until a vacuum) and the copy does not: after deletes only dense scores agree.
    assert answers(store, ("dense",)) == answers(remote, ("dense",))


def test_no_copy_above_the_size_limit(
    remote: RemoteVectorStore, replica: Callable[[int], ReplicaVectorStore]
) -> None:
    store = replica(100)
    time.sleep(REFRESH_S * 5)
    assert store.reading_from == "actor"
    assert store.builds == 0
    assert answers(store) == answers(remote)


def test_close_removes_the_copy(
    replica: Callable[[int], ReplicaVectorStore], tmp_path: Path
) -> None:
    store = replica(10_000)
    until(lambda: store.reading_from == "copy")
    assert list((tmp_path / "copies").iterdir())
    store.close()
    assert list((tmp_path / "copies").iterdir()) == []
