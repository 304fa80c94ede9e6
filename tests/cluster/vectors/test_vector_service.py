"""The shared vector actor: one embedded store served to several processes through a real Ray."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import ray
from ray import cloudpickle
from ray.exceptions import ActorUnavailableError

from rayweave.cluster.errors import (
    InputError,
    NotFoundError,
    QueryError,
    ServiceError,
    VectorStoreError,
)
from rayweave.cluster.settings import QdrantSettings
from rayweave.cluster.types import SparseVector
from rayweave.cluster.vectors.qdrant_client import QdrantClientStore
from rayweave.cluster.vectors.qdrant_edge import QdrantEdgeStore
from rayweave.cluster.vectors.service import (
    PointColumns,
    RemoteVectorStore,
    actor_name,
    connect_vector_store,
    describe_vector_actors,
    shutdown_vector_actors,
)
from rayweave.cluster.vectors.store import CollectionSpec, VectorPoint, VectorQuery

# Ray tasks below are defined here; ship them by value (this folder is not an importable package).
cloudpickle.register_pickle_by_value(sys.modules[__name__])

DIM = 16
SETTINGS = QdrantSettings(upsert_batch=64, timeout_s=60)


def make_points(prefix: str, n: int, seed: int, *, visible: bool = True) -> list[VectorPoint]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        sparse = None if i % 4 == 3 else SparseVector(indices=(i, 500 + i % 7), values=(1.0, 0.25))
        out.append(
            VectorPoint(
                id=f"{prefix}-{i}",
                payload={"doc_id": f"{prefix}-doc{i // 10}", "visible": visible, "writer": prefix},
                dense=rng.standard_normal(DIM).astype(np.float32),
                sparse=sparse,
            )
        )
    return out


class TestPointColumns:
    def test_round_trip_keeps_every_field(self) -> None:
        points = make_points("a", 9, seed=1)
        points.append(
            VectorPoint(
                id="sparse-only", payload={}, sparse=SparseVector(indices=(3,), values=(0.5,))
            )
        )
        cols = PointColumns.pack(points)
        assert cols.dense is not None
        assert cols.dense.shape == (10, DIM)
        assert cols.dense.dtype == np.float32
        back = cols.unpack()
        assert [p.id for p in back] == [p.id for p in points]
        for got, want in zip(back, points, strict=True):
            assert got.payload == want.payload
            if want.dense is None:
                assert got.dense is None
            else:
                np.testing.assert_array_equal(got.dense, want.dense)
            if want.sparse is None:
                assert got.sparse is None
            else:
                assert got.sparse is not None
                assert got.sparse.indices == want.sparse.indices
                assert got.sparse.values == pytest.approx(want.sparse.values)

    def test_ragged_dense_names_the_point(self) -> None:
        points = [
            *make_points("a", 3, seed=1),
            VectorPoint(id="odd", payload={}, dense=np.ones(DIM + 2)),
        ]
        with pytest.raises(InputError, match="odd"):
            PointColumns.pack(points)


@ray.remote(num_cpus=0.25)
def _write_from_task(
    settings: QdrantSettings, path: str, namespace: str, prefix: str, seed: int
) -> int:
    store = connect_vector_store(
        settings, path=Path(path), collection="shared", namespace=namespace, shared=True
    )
    store.ensure_collection(CollectionSpec(name="shared", dense_dim=DIM))
    store.upsert(make_points(prefix, 150, seed))
    return os.getpid()


@pytest.fixture
def namespace(ray_session: None) -> Iterator[str]:
    """A namespace per test; its vector actors are shut down afterwards."""
    ns = f"rw-test-{uuid.uuid4().hex[:8]}"
    yield ns
    shutdown_vector_actors(ns)


def actor_pid(namespace: str, collection: str) -> int:
    handle = ray.get_actor(actor_name(collection), namespace=namespace)
    deadline = time.monotonic() + 60
    while True:
        try:
            pid: int = ray.get(handle.describe.remote(), timeout=60)["pid"]
            return pid
        except ActorUnavailableError:  # still restarting
            assert time.monotonic() < deadline
            time.sleep(0.2)


@pytest.mark.integration
class TestSharedStore:
    def test_proxy_behaves_like_the_store(self, namespace: str, tmp_path: Path) -> None:
        store = connect_vector_store(
            SETTINGS, path=tmp_path, collection="proxy", namespace=namespace, shared=True
        )
        assert isinstance(store, RemoteVectorStore)
        with pytest.raises(NotFoundError, match="proxy"):
            store.count()
        store.ensure_collection(CollectionSpec(name="proxy", dense_dim=DIM))
        points = make_points("p", 200, seed=3, visible=False)  # several upsert batches of 64
        store.upsert(points)
        store.upsert(points[:50])
        assert store.count() == 200
        assert store.set_payload({"doc_id": ["p-doc1", "p-doc2"]}, {"visible": True}) == 20
        hits = store.query(
            VectorQuery(dense=points[15].dense, limit=3, filter={"visible": True}, exact=True)
        )
        assert hits[0].id == "p-15"
        hybrid = store.query_batch(
            [VectorQuery(mode="hybrid", dense=points[9].dense, sparse=points[9].sparse, limit=5)]
            * 2
        )
        assert [h.id for h in hybrid[0]] == [h.id for h in hybrid[1]]
        assert hybrid[0][0].id == "p-9"
        (got,) = store.retrieve(["p-8"], with_vectors=True)
        np.testing.assert_allclose(
            got.vectors["dense"], points[8].dense / np.linalg.norm(points[8].dense), atol=1e-5
        )
        seen, offset = [], None
        while True:
            page, offset = store.scroll(limit=33, offset=offset)
            seen += [p.id for p in page]
            if offset is None:
                break
        assert sorted(seen) == sorted(p.id for p in points)
        assert store.delete({"doc_id": "p-doc0"}) == 10
        store.optimize()
        assert store.count() == 190

    def test_errors_keep_their_type(self, namespace: str, tmp_path: Path) -> None:
        store = connect_vector_store(
            SETTINGS, path=tmp_path, collection="errs", namespace=namespace, shared=True
        )
        store.ensure_collection(CollectionSpec(name="errs", dense_dim=DIM))
        with pytest.raises(QueryError, match="shape"):
            store.query(VectorQuery(dense=np.ones(DIM + 1)))
        with pytest.raises(InputError, match="non-empty filter"):
            store.delete({})
        with pytest.raises(VectorStoreError, match=r"'errs'.*16 stored, 8 requested"):
            store.ensure_collection(CollectionSpec(name="errs", dense_dim=8))

    def test_two_processes_write_one_reads(self, namespace: str, tmp_path: Path) -> None:
        refs = [
            _write_from_task.remote(SETTINGS, str(tmp_path), namespace, prefix, seed)
            for prefix, seed in (("left", 1), ("right", 2))
        ]
        writer_pids = ray.get(refs, timeout=180)
        reader = connect_vector_store(
            SETTINGS, path=tmp_path, collection="shared", namespace=namespace, shared=True
        )
        assert reader.count() == 300
        assert reader.count({"writer": "left"}) == reader.count({"writer": "right"}) == 150
        owner = actor_pid(namespace, "shared")
        assert len({*writer_pids, owner, os.getpid()}) == 4  # four distinct processes

    def test_data_survives_actor_death(self, namespace: str, tmp_path: Path) -> None:
        store = connect_vector_store(
            SETTINGS, path=tmp_path, collection="durable", namespace=namespace, shared=True
        )
        store.ensure_collection(CollectionSpec(name="durable", dense_dim=DIM))
        points = make_points("d", 120, seed=5)
        store.upsert(points)
        first = actor_pid(namespace, "durable")

        # A crash: Ray restarts the actor, which reopens the store from disk.
        ray.kill(ray.get_actor(actor_name("durable"), namespace=namespace), no_restart=False)
        assert store.count() == 120
        second = actor_pid(namespace, "durable")
        assert second != first

        # Gone for good: the proxy re-creates the actor on its next call.
        ray.kill(ray.get_actor(actor_name("durable"), namespace=namespace), no_restart=True)
        deadline = time.monotonic() + 30
        while actor_name("durable") in [
            a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
        ]:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert store.query(VectorQuery(dense=points[42].dense, limit=1, exact=True))[0].id == "d-42"
        assert store.count() == 120
        assert actor_pid(namespace, "durable") not in (first, second)

    def test_client_local_backend_is_shared_too(self, namespace: str, tmp_path: Path) -> None:
        settings = QdrantSettings(backend="client", upsert_batch=16, timeout_s=60)
        store = connect_vector_store(
            settings, path=tmp_path, collection="cl", namespace=namespace, shared=True
        )
        assert isinstance(store, RemoteVectorStore)
        store.ensure_collection(CollectionSpec(name="cl", dense_dim=DIM))
        points = make_points("c", 40, seed=4)
        store.upsert(points)
        assert store.count({"doc_id": "c-doc2"}) == 10
        assert store.query(VectorQuery(dense=points[21].dense, limit=1))[0].id == "c-21"

    def test_actor_bound_to_another_path_is_refused(self, namespace: str, tmp_path: Path) -> None:
        connect_vector_store(
            SETTINGS, path=tmp_path / "a", collection="bound", namespace=namespace, shared=True
        )
        with pytest.raises(VectorStoreError, match="serves"):
            connect_vector_store(
                SETTINGS, path=tmp_path / "b", collection="bound", namespace=namespace, shared=True
            )

    def test_an_idle_actor_closes_its_engine_and_reopens_it(
        self, namespace: str, tmp_path: Path
    ) -> None:
        quick = SETTINGS.model_copy(update={"idle_close_s": 0.5})
        store = connect_vector_store(
            quick, path=tmp_path, collection="idle", namespace=namespace, shared=True
        )
        store.ensure_collection(CollectionSpec(name="idle", dense_dim=DIM))
        store.upsert(make_points("idle", 20, seed=3))
        (info,) = describe_vector_actors(namespace)
        assert info["collection"] == "idle"
        assert info["open"]
        deadline = time.monotonic() + 30
        while describe_vector_actors(namespace)[0]["open"]:
            assert time.monotonic() < deadline, "the engine stayed open"
            time.sleep(0.2)
        # The next call reopens it, data intact.
        assert store.count() == 20
        (info,) = describe_vector_actors(namespace)
        assert info["open"]
        assert info["opens"] == 2

    def test_shutdown_closes_and_kills(self, ray_session: None, tmp_path: Path) -> None:
        ns = f"rw-test-{uuid.uuid4().hex[:8]}"
        for name in ("one", "two"):
            store = connect_vector_store(
                SETTINGS, path=tmp_path, collection=name, namespace=ns, shared=True
            )
            store.ensure_collection(CollectionSpec(name=name, dense_dim=DIM))
            store.upsert(make_points(name, 10, seed=1))
        assert sorted(shutdown_vector_actors(ns)) == [actor_name("one"), actor_name("two")]
        deadline = time.monotonic() + 30
        while any(a["namespace"] == ns for a in ray.util.list_named_actors(all_namespaces=True)):
            assert time.monotonic() < deadline
            time.sleep(0.2)
        # The folder was released: this process can now open it directly.
        direct = connect_vector_store(SETTINGS, path=tmp_path, collection="one", shared=False)
        try:
            assert direct.count() == 10
        finally:
            direct.close()
        assert shutdown_vector_actors(ns) == []


class TestConnectModes:
    def test_unshared_embedded_opens_in_process(self, tmp_path: Path) -> None:
        store = connect_vector_store(SETTINGS, path=tmp_path, shared=False)
        assert isinstance(store, QdrantEdgeStore)
        store.close()
        local = connect_vector_store(QdrantSettings(backend="client"), path=tmp_path, shared=False)
        assert isinstance(local, QdrantClientStore)
        local.close()

    def test_server_url_gives_a_direct_client(self, tmp_path: Path) -> None:
        # No request is made until first use, so no server is needed to check the wiring.
        settings = QdrantSettings(backend="client", url="https://127.0.0.1:9", api_key="k")
        store = connect_vector_store(settings, path=tmp_path, shared=True)
        assert isinstance(store, QdrantClientStore)
        with pytest.raises(VectorStoreError, match="rayweave"):
            store.count()
        store.close()

    def test_shared_needs_ray(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(ray, "is_initialized", lambda: False)
        with pytest.raises(ServiceError, match="Ray"):
            connect_vector_store(SETTINGS, path=tmp_path, shared=True)
        with pytest.raises(ServiceError, match="Ray"):
            shutdown_vector_actors("anything")

    def test_edge_setups_never_load_qdrant_client(self, tmp_path: Path) -> None:
        # A fresh interpreter: this test module itself imports the client adapter.
        script = (
            "import sys\n"
            "from pathlib import Path\n"
            "from rayweave.cluster.settings import QdrantSettings\n"
            "from rayweave.cluster.vectors.service import connect_vector_store\n"
            "store = connect_vector_store(\n"
            f"    QdrantSettings(), path=Path({str(tmp_path)!r}), shared=False\n"
            ")\n"
            "store.close()\n"
            "print(sorted(m for m in sys.modules if m.startswith('qdrant_client')))\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
        )
        assert out.stdout.strip() == "[]", out.stdout


@ray.remote(num_cpus=0)
class _OldVectorActor:
    """What an earlier version left running: same name, no `protocol`, no `version`."""

    def __init__(self, path: str) -> None:
        self.path = path

    def describe(self) -> dict[str, object]:
        return {"collection": "old", "path": self.path, "pid": os.getpid(), "open": True}


@pytest.mark.integration
def test_an_actor_older_code_started_is_replaced(namespace: str, tmp_path: Path) -> None:
    old = _OldVectorActor.options(  # type: ignore[attr-defined]
        name=actor_name("old"), namespace=namespace, lifetime="detached"
    ).remote(str(tmp_path))
    old_pid = ray.get(old.describe.remote())["pid"]
    store = connect_vector_store(
        SETTINGS, path=tmp_path, collection="old", namespace=namespace, shared=True
    )
    assert isinstance(store, RemoteVectorStore)
    assert actor_pid(namespace, "old") != old_pid
    store.ensure_collection(CollectionSpec(name="old", dense_dim=DIM))
    before = store.version()
    store.upsert(make_points("o", 3, seed=5))
    assert store.version() != before
