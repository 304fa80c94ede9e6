"""One contract for every `VectorStore` adapter, run against the real engines.

`filled` holds a clustered data set (eight topics) for the read-only tests; rankings are checked
against numpy references (exact cosine, IDF-weighted sparse dot products, reciprocal rank
fusion), which also shows that the adapters agree with each other.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from rayweave.bench.vectors import ClusteredData, clustered_data
from rayweave.cluster.errors import InputError, NotFoundError, QueryError, VectorStoreError
from rayweave.cluster.types import SparseVector
from rayweave.cluster.vectors.qdrant_edge import QdrantEdgeStore
from rayweave.cluster.vectors.store import (
    CollectionSpec,
    ScoredPoint,
    VectorPoint,
    VectorQuery,
    VectorStore,
)

BACKENDS = ("edge", "client-local", "client-memory")
PERSISTENT_BACKENDS = ("edge", "client-local")
DIM = 32
N_POINTS = 240
SPEC = CollectionSpec(name="contract", dense_dim=DIM)
RRF_K = 60  # QdrantSettings.rrf_k default


@pytest.fixture(scope="module")
def dataset() -> ClusteredData:
    """Eight well-separated topics, so that correct rankings are unambiguous."""
    return clustered_data(N_POINTS, DIM, n_queries=16, n_clusters=8, seed=7)


@pytest.fixture(scope="module", params=BACKENDS)
def filled(
    request: pytest.FixtureRequest,
    dataset: ClusteredData,
    tmp_path_factory: pytest.TempPathFactory,
    open_store: Callable[..., VectorStore],
) -> Iterator[tuple[str, VectorStore]]:
    """A read-only store holding the whole data set, shared by this module's tests per backend."""
    # A 1 KB indexing threshold makes the edge engine build HNSW + int8 even for this small set.
    folder = tmp_path_factory.mktemp(f"filled-{request.param}")
    store = open_store(request.param, folder, indexing_threshold_kb=1)
    store.ensure_collection(SPEC)
    store.upsert(dataset.points())
    store.optimize()
    if isinstance(store, QdrantEdgeStore):
        assert store.info()["indexed_vectors"] >= N_POINTS
    yield request.param, store
    store.close()


@pytest.fixture
def store(backend: str, store_factory: Callable[..., VectorStore]) -> VectorStore:
    """The parametrized backend's store, with the empty `contract` collection created."""
    opened = store_factory(backend)
    opened.ensure_collection(SPEC)
    return opened


def small_points(
    n: int = 30, dim: int = DIM, seed: int = 1, **payload: object
) -> list[VectorPoint]:
    rng = np.random.default_rng(seed)
    return [
        VectorPoint(
            id=f"p{i}",
            payload={
                "doc_id": f"d{i % 3}",
                "level": "section",
                "visible": False,
                "n": i,
                **payload,
            },
            dense=rng.standard_normal(dim).astype(np.float32),
            sparse=SparseVector(indices=(i, 1000 + i % 5), values=(1.0, 0.5)),
        )
        for i in range(n)
    ]


def exact_dense(data: ClusteredData, q: int, k: int) -> list[str]:
    scores = data.dense @ data.query_dense[q]
    return [data.point_id(int(j)) for j in np.argsort(-scores, kind="stable")[:k]]


def sparse_scores(data: ClusteredData, query: SparseVector) -> np.ndarray:
    """Qdrant's IDF modifier: query weight x ln((N - df + 0.5) / (df + 0.5) + 1) x document
    weight."""
    n = len(data.sparse)
    out = np.zeros(n)
    for term, qw in zip(query.indices, query.values, strict=True):
        df = sum(term in v.indices for v in data.sparse)
        idf = math.log((n - df + 0.5) / (df + 0.5) + 1)
        for i, v in enumerate(data.sparse):
            if term in v.indices:
                out[i] += qw * idf * v.values[v.indices.index(term)]
    return out


def ids(points: list[ScoredPoint]) -> list[str]:
    return [p.id for p in points]


# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
class TestCollectionLifecycle:
    def test_missing_collection_is_not_found(
        self, backend: str, store_factory: Callable[..., VectorStore]
    ) -> None:
        store = store_factory(backend)
        with pytest.raises(NotFoundError, match="contract"):
            store.count()

    def test_ensure_collection_is_idempotent(self, store: VectorStore) -> None:
        store.upsert(small_points(5))
        store.ensure_collection(SPEC)
        assert store.count() == 5

    def test_other_dim_is_refused_naming_both(self, store: VectorStore) -> None:
        with pytest.raises(VectorStoreError, match=r"'contract'.*32.*48"):
            store.ensure_collection(CollectionSpec(name="contract", dense_dim=48))

    def test_spec_for_another_collection_is_a_bug(
        self, backend: str, store_factory: Callable[..., VectorStore]
    ) -> None:
        with pytest.raises(ValueError, match="other"):
            store_factory(backend).ensure_collection(CollectionSpec(name="other", dense_dim=DIM))

    def test_drop_removes_everything(self, store: VectorStore) -> None:
        store.upsert(small_points(10))
        store.drop()
        with pytest.raises(NotFoundError):
            store.count()
        store.ensure_collection(SPEC)
        assert store.count() == 0

    def test_closed_store_refuses_calls(self, store: VectorStore) -> None:
        store.close()
        with pytest.raises(VectorStoreError, match="closed"):
            store.count()

    def test_image_vectors_are_searchable(
        self, backend: str, store_factory: Callable[..., VectorStore]
    ) -> None:
        store = store_factory(backend)
        store.ensure_collection(CollectionSpec(name="contract", dense_dim=DIM, image_dim=8))
        eye = np.eye(8, dtype=np.float32)
        store.upsert(
            [VectorPoint(id=f"img{i}", payload={"kind": "image"}, image=eye[i]) for i in range(8)]
        )
        store.upsert(small_points(3))
        hits = store.query(VectorQuery(mode="image", dense=eye[5] + 0.1 * eye[6], limit=2))
        assert ids(hits) == ["img5", "img6"]
        with pytest.raises(QueryError, match="image"):
            store.query(VectorQuery(mode="image", dense=np.ones(DIM), limit=2))


@pytest.mark.parametrize("backend", PERSISTENT_BACKENDS)
class TestPersistence:
    def test_reopen_keeps_points_and_payloads(
        self,
        backend: str,
        store_factory: Callable[..., VectorStore],
        store: VectorStore,
        tmp_path: Path,
    ) -> None:
        points = small_points(40)
        store.upsert(points)
        store.set_payload({"doc_id": "d1"}, {"visible": True})
        store.optimize()
        store.close()

        reopened = store_factory(backend)
        assert reopened.count() == 40  # opens lazily, without a spec
        assert reopened.count({"visible": True}) == 13
        hit = reopened.query(VectorQuery(dense=points[7].dense, limit=1, exact=True))[0]
        assert hit.id == "p7"
        assert hit.payload["n"] == 7

    def test_reopen_with_other_dim_is_refused(
        self, backend: str, store_factory: Callable[..., VectorStore], store: VectorStore
    ) -> None:
        store.upsert(small_points(5))
        store.close()
        reopened = store_factory(backend)
        with pytest.raises(VectorStoreError, match=r"'contract'.*32 stored, 64 requested"):
            reopened.ensure_collection(CollectionSpec(name="contract", dense_dim=64))
        assert reopened.count() == 5  # nothing lost

    @pytest.mark.usefixtures("store")  # the first opener, holding the collection
    def test_second_opener_is_refused(
        self, backend: str, store_factory: Callable[..., VectorStore]
    ) -> None:
        with pytest.raises(VectorStoreError, match="another process"):
            store_factory(backend).count()


@pytest.mark.parametrize("backend", BACKENDS)
class TestWrites:
    def test_upsert_is_idempotent(self, store: VectorStore) -> None:
        store.upsert(small_points(25))
        store.upsert(small_points(25))
        assert store.count() == 25

    def test_upsert_replaces_by_id(self, store: VectorStore) -> None:
        store.upsert(small_points(5))
        store.upsert(small_points(1, seed=9, doc_id="new"))
        (p0,) = store.retrieve(["p0"])
        assert p0.payload["doc_id"] == "new"
        assert p0.payload["chunk_id"] == "p0"
        assert store.count() == 5

    @pytest.mark.parametrize(
        ("bad", "message"),
        [
            ({"dense": np.full(DIM, np.nan)}, "p3.*NaN"),
            ({"dense": np.ones(DIM + 1)}, "p3.*dimensions|p3.*shape"),
            ({"sparse": SparseVector(indices=(1, 1), values=(1.0, 2.0))}, "p3.*duplicate"),
            ({"sparse": SparseVector(indices=(-1,), values=(1.0,))}, "p3.*sparse indices"),
            ({"payload": {"when": object()}}, "p3.*when"),
            ({"payload": {"score": float("inf")}}, "p3.*score"),
        ],
    )
    def test_bad_point_rejects_whole_batch(
        self, store: VectorStore, bad: dict[str, object], message: str
    ) -> None:
        points = small_points(6)
        p = points[3]
        fields = {"id": p.id, "payload": p.payload, "dense": p.dense, "sparse": p.sparse, **bad}
        points[3] = VectorPoint(**fields)  # type: ignore[arg-type]
        with pytest.raises(InputError, match=message):
            store.upsert(points)
        assert store.count() == 0

    def test_delete_by_filter_returns_count(self, store: VectorStore) -> None:
        store.upsert(small_points(30))
        assert store.delete({"doc_id": ["d0", "d2"]}) == 20
        assert store.count() == 10
        assert store.delete({"doc_id": "d0"}) == 0
        assert store.delete({"doc_id": "d1", "n": 4}) == 1
        assert store.count() == 9

    def test_mutations_refuse_an_empty_filter(self, store: VectorStore) -> None:
        store.upsert(small_points(5))
        with pytest.raises(InputError, match="non-empty filter"):
            store.delete({})
        with pytest.raises(InputError, match="non-empty filter"):
            store.set_payload({}, {"visible": True})
        assert store.count() == 5

    def test_bool_filters_match_bools_only(self, store: VectorStore) -> None:
        """Every filter form on a bool matches bools by value and never integers (qdrant-edge-py
        reads a plain bool as 1/0, and MatchAny takes no bools): one rule for both adapters."""
        store.upsert(small_points(6))
        assert store.set_payload({"n": [0, 2, 4]}, {"visible": True}) == 3
        expected = {
            "true": ({"visible": True}, 3),
            "false": ({"visible": False}, 3),
            "any-of one": ({"visible": [True]}, 3),
            "any-of false": ({"visible": [False]}, 3),
            "any-of both": ({"visible": [True, False]}, 6),
            "any-of none": ({"visible": []}, 0),
            "int on bool field": ({"visible": 1}, 0),
            "ints on bool field": ({"visible": [1, 0]}, 0),
            "bool on int field": ({"n": True}, 0),
            "bools on int field": ({"n": [True, False]}, 0),
        }
        got = {name: store.count(flt) for name, (flt, _) in expected.items()}  # type: ignore[arg-type]
        assert got == {name: n for name, (_, n) in expected.items()}
        assert store.delete({"visible": [True, False], "doc_id": ["d0", "d1"]}) == 4
        assert store.count({"visible": [False, True]}) == 2

    def test_set_payload_merges_and_counts(self, store: VectorStore) -> None:
        points = small_points(30)
        store.upsert(points)
        visible = {"visible": True}
        assert store.query(VectorQuery(dense=points[4].dense, limit=5, filter=visible)) == []
        assert store.set_payload({"doc_id": "d1"}, {"visible": True, "batch": "b1"}) == 10
        assert store.count(visible) == 10
        hits = store.query(VectorQuery(dense=points[4].dense, limit=30, filter=visible, exact=True))
        assert len(hits) == 10
        assert hits[0].id == "p4"
        assert all(h.payload["doc_id"] == "d1" and h.payload["batch"] == "b1" for h in hits)
        assert hits[0].payload["n"] == 4  # other keys kept
        assert store.set_payload({"doc_id": "nope"}, visible) == 0
        with pytest.raises(InputError, match="chunk_id"):
            store.set_payload({"doc_id": "d1"}, {"chunk_id": "x"})

    def test_concurrent_readers_and_writers(self, store: VectorStore) -> None:
        base = small_points(20)
        store.upsert(base)
        errors: list[BaseException] = []

        def read() -> None:
            try:
                for i in range(15):
                    hits = store.query(VectorQuery(dense=base[i].dense, limit=3, exact=True))
                    assert hits[0].id == f"p{i}"
            except BaseException as exc:  # noqa: BLE001 - a thread's failure, asserted below
                errors.append(exc)

        def write(offset: int) -> None:
            try:
                for b in range(3):
                    extra = [
                        VectorPoint(
                            id=f"w{offset}-{b}-{j}", payload={"doc_id": "w"}, dense=-p.dense
                        )
                        for j, p in enumerate(base[:4])
                    ]
                    store.upsert(extra)
            except BaseException as exc:  # noqa: BLE001 - a thread's failure, asserted below
                errors.append(exc)

        threads = [threading.Thread(target=read) for _ in range(3)]
        threads += [threading.Thread(target=write, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert not errors
        assert store.count() == 20 + 2 * 3 * 4


class TestReads:
    """Read-only checks on the shared, optimised `filled` store of each backend."""

    def test_dense_exact_matches_numpy(
        self, filled: tuple[str, VectorStore], dataset: ClusteredData
    ) -> None:
        _, store = filled
        for q in range(len(dataset.query_labels)):
            hits = store.query(VectorQuery(dense=dataset.query_dense[q], limit=10, exact=True))
            assert ids(hits) == exact_dense(dataset, q, 10)
            assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
            expected = float(dataset.dense[int(hits[0].id.split("-")[1])] @ dataset.query_dense[q])
            assert hits[0].score == pytest.approx(expected, abs=1e-3)

    def test_dense_index_finds_the_topic(
        self, filled: tuple[str, VectorStore], dataset: ClusteredData
    ) -> None:
        _, store = filled
        recall = []
        for q in range(len(dataset.query_labels)):
            hits = store.query(VectorQuery(dense=dataset.query_dense[q], limit=10))
            assert {h.payload["topic"] for h in hits} == {int(dataset.query_labels[q])}
            recall.append(len(set(ids(hits)) & set(exact_dense(dataset, q, 10))) / 10)
        assert np.mean(recall) >= 0.9

    def test_sparse_matches_idf_reference(
        self, filled: tuple[str, VectorStore], dataset: ClusteredData
    ) -> None:
        _, store = filled
        for q in range(len(dataset.query_labels)):
            query = dataset.query_sparse[q]
            hits = store.query(VectorQuery(mode="sparse", sparse=query, limit=5))
            reference = sparse_scores(dataset, query)
            expected = np.sort(reference)[::-1][: len(hits)]
            assert [h.score for h in hits] == pytest.approx(expected.tolist(), rel=1e-3)
            assert all(
                reference[int(h.id.split("-")[1])] == pytest.approx(h.score, rel=1e-3) for h in hits
            )
            assert hits[0].payload["topic"] == int(dataset.query_labels[q])

    @pytest.mark.parametrize("prefetch", [20, 50])
    def test_hybrid_rrf_fuses_both_rankings(
        self, filled: tuple[str, VectorStore], dataset: ClusteredData, prefetch: int
    ) -> None:
        _, store = filled
        for q in range(len(dataset.query_labels)):
            dense = ids(
                store.query(VectorQuery(dense=dataset.query_dense[q], limit=prefetch, exact=True))
            )
            sparse = ids(
                store.query(
                    VectorQuery(mode="sparse", sparse=dataset.query_sparse[q], limit=prefetch)
                )
            )
            fused: dict[str, float] = {}
            for ranking in (dense, sparse):
                for rank, pid in enumerate(ranking):
                    fused[pid] = fused.get(pid, 0.0) + 1.0 / (RRF_K + rank)
            hits = store.query(
                VectorQuery(
                    mode="hybrid",
                    dense=dataset.query_dense[q],
                    sparse=dataset.query_sparse[q],
                    limit=10,
                    prefetch_limit=prefetch,
                    exact=True,
                )
            )
            assert set(ids(hits)) <= set(dense) | set(sparse)
            expected = sorted(fused.values(), reverse=True)[:10]
            assert [h.score for h in hits] == pytest.approx(expected, rel=1e-4)
            assert all(fused[h.id] == pytest.approx(h.score, rel=1e-4) for h in hits)

    def test_hybrid_dbsf_ranks_the_union(
        self, filled: tuple[str, VectorStore], dataset: ClusteredData
    ) -> None:
        _, store = filled
        q = 0
        dense = ids(store.query(VectorQuery(dense=dataset.query_dense[q], limit=30, exact=True)))
        sparse = ids(
            store.query(VectorQuery(mode="sparse", sparse=dataset.query_sparse[q], limit=30))
        )
        hits = store.query(
            VectorQuery(
                mode="hybrid",
                fusion="dbsf",
                dense=dataset.query_dense[q],
                sparse=dataset.query_sparse[q],
                limit=10,
                prefetch_limit=30,
                exact=True,
            )
        )
        assert len(hits) == 10
        assert set(ids(hits)) <= set(dense) | set(sparse)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        both = [pid for pid in dense[:5] if pid in sparse[:5]]
        if both:
            assert hits[0].id in set(dense[:5]) | set(sparse[:5])

    def test_hybrid_respects_filter(
        self, filled: tuple[str, VectorStore], dataset: ClusteredData
    ) -> None:
        _, store = filled
        hits = store.query(
            VectorQuery(
                mode="hybrid",
                dense=dataset.query_dense[1],
                sparse=dataset.query_sparse[1],
                limit=20,
                filter={"level": "section"},
            )
        )
        assert hits
        assert all(h.payload["level"] == "section" for h in hits)

    @pytest.mark.parametrize(
        "flt",
        [
            {"doc_id": "doc-000003"},
            {"level": ["document", "proposition"]},
            {"topic": 2},
            {"topic": [1, 5]},
            {"visible": True},
            {"visible": [True, False]},
            {"level": "section", "topic": [3, 4]},
        ],
    )
    def test_filters_and_count(
        self, filled: tuple[str, VectorStore], dataset: ClusteredData, flt: dict[str, object]
    ) -> None:
        _, store = filled

        def matches(payload: dict[str, object]) -> bool:
            return all(
                payload[k] in v if isinstance(v, list) else payload[k] == v for k, v in flt.items()
            )

        expected = [i for i in range(N_POINTS) if matches(dataset.payload(i))]
        assert store.count(flt) == len(expected)  # type: ignore[arg-type]
        hits = store.query(
            VectorQuery(dense=dataset.query_dense[0], limit=N_POINTS, filter=flt, exact=True)
        )  # type: ignore[arg-type]
        assert sorted(ids(hits)) == sorted(dataset.point_id(i) for i in expected)

    def test_no_match_filters(self, filled: tuple[str, VectorStore]) -> None:
        _, store = filled
        assert store.count({"visible": False}) == 0
        assert store.count({"doc_id": []}) == 0
        assert store.count({"doc_id": "missing"}) == 0
        assert store.count() == N_POINTS

    @pytest.mark.parametrize(
        ("flt", "message"),
        [
            ({"score": 0.5}, "score"),
            ({"doc_id": None}, "doc_id"),
            ({"topic": [1, "a"]}, "topic.*one type"),
        ],
    )
    def test_bad_filters_are_query_errors(
        self, filled: tuple[str, VectorStore], flt: dict[str, object], message: str
    ) -> None:
        _, store = filled
        with pytest.raises(QueryError, match=message):
            store.count(flt)  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        ("query", "message"),
        [
            (VectorQuery(dense=np.ones(DIM + 1)), "shape"),
            (VectorQuery(dense=np.full(DIM, np.nan)), "NaN"),
            (VectorQuery(mode="hybrid", dense=np.ones(DIM)), "sparse"),
            (VectorQuery(mode="sparse"), "sparse"),
            (VectorQuery(mode="nearest", dense=np.ones(DIM)), "valid modes"),  # type: ignore[arg-type]
            (VectorQuery(dense=np.ones(DIM), limit=0), "limit"),
            (
                VectorQuery(
                    mode="hybrid",
                    fusion="max",
                    dense=np.ones(DIM),
                    sparse=SparseVector(indices=(1,), values=(1.0,)),
                ),
                "fusion",
            ),  # type: ignore[arg-type]
        ],
    )
    def test_bad_queries_are_query_errors(
        self, filled: tuple[str, VectorStore], query: VectorQuery, message: str
    ) -> None:
        _, store = filled
        with pytest.raises(QueryError, match=message):
            store.query(query)

    def test_without_payload_ids_survive(
        self, filled: tuple[str, VectorStore], dataset: ClusteredData
    ) -> None:
        _, store = filled
        hits = store.query(
            VectorQuery(dense=dataset.query_dense[2], limit=5, exact=True, with_payload=False)
        )
        assert ids(hits) == exact_dense(dataset, 2, 5)
        assert all(h.payload == {} for h in hits)

    def test_query_batch_equals_single_queries(
        self, filled: tuple[str, VectorStore], dataset: ClusteredData
    ) -> None:
        _, store = filled
        queries = [
            VectorQuery(dense=dataset.query_dense[0], limit=5, exact=True),
            VectorQuery(mode="sparse", sparse=dataset.query_sparse[1], limit=5),
            VectorQuery(
                mode="hybrid",
                dense=dataset.query_dense[2],
                sparse=dataset.query_sparse[2],
                limit=5,
                exact=True,
            ),
        ]
        batch = store.query_batch(queries)
        assert [ids(b) for b in batch] == [ids(store.query(q)) for q in queries]
        assert store.query_batch([]) == []

    def test_retrieve_in_order_with_vectors(
        self, filled: tuple[str, VectorStore], dataset: ClusteredData
    ) -> None:
        _, store = filled
        wanted = [dataset.point_id(9), "missing", dataset.point_id(3)]
        found = store.retrieve(wanted, with_vectors=True)
        assert ids(found) == [dataset.point_id(9), dataset.point_id(3)]
        assert found[0].payload["topic"] == int(dataset.labels[9])
        dense = found[0].vectors["dense"]
        assert isinstance(dense, np.ndarray)
        np.testing.assert_allclose(dense, dataset.dense[9], atol=1e-5)  # stored unit vectors
        sparse = found[0].vectors["sparse"]
        assert isinstance(sparse, SparseVector)
        assert sparse.indices == dataset.sparse[9].indices
        assert sparse.values == pytest.approx(
            dataset.sparse[9].values, rel=1e-6
        )  # stored as float32
        assert store.retrieve([dataset.point_id(1)])[0].vectors == {}

    @pytest.mark.parametrize("flt", [None, {"level": "section"}])
    def test_scroll_covers_every_point_once(
        self, filled: tuple[str, VectorStore], flt: dict[str, object] | None
    ) -> None:
        _, store = filled
        seen: list[str] = []
        offset: str | None = None
        pages = 0
        while True:
            page, offset = store.scroll(filter=flt, limit=37, offset=offset)  # type: ignore[arg-type]
            seen += ids(page)
            pages += 1
            if offset is None:
                break
        assert len(seen) == len(set(seen)) == store.count(flt)  # type: ignore[arg-type]
        assert pages == math.ceil(len(seen) / 37) or pages == math.ceil(len(seen) / 37) + 1
        with pytest.raises(InputError):
            store.scroll(limit=0)


def test_adapters_return_identical_results(
    store_factory: Callable[..., VectorStore], dataset: ClusteredData, tmp_path: Path
) -> None:
    """The same data and queries give the same ids and scores on the edge and client adapters."""
    stores = {b: store_factory(b, path=tmp_path / b) for b in ("edge", "client-memory")}
    for store in stores.values():
        store.ensure_collection(SPEC)
        store.upsert(dataset.points(0, 120))
    queries = [
        VectorQuery(
            dense=dataset.query_dense[3],
            limit=8,
            exact=True,
            filter={"level": ["section", "document"]},
        ),
        VectorQuery(mode="sparse", sparse=dataset.query_sparse[3], limit=8),
        VectorQuery(
            mode="hybrid", dense=dataset.query_dense[4], sparse=dataset.query_sparse[4], limit=8
        ),
    ]
    for q in queries:
        edge, client = (stores[b].query(q) for b in ("edge", "client-memory"))
        assert ids(edge) == ids(client)
        assert [h.score for h in edge] == pytest.approx([h.score for h in client], rel=1e-4)
        assert [h.payload for h in edge] == [h.payload for h in client]
