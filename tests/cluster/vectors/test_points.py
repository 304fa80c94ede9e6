"""The checks and conversions every vector adapter shares, pure: no engine sees these inputs."""

from __future__ import annotations

from enum import Enum
from typing import Any

import numpy as np
import pytest

from rayweave.cluster.errors import InputError, QueryError, VectorStoreError
from rayweave.cluster.types import SparseVector, point_uuid
from rayweave.cluster.vectors.points import (
    CHUNK_ID,
    FieldMatch,
    check_shape,
    check_sparse,
    chunk_id_of,
    dense_matrix,
    json_payload,
    json_value,
    parse_filter,
    point_vectors,
    prepare_points,
    prepare_query,
    ranked,
    require_filter,
    scored_point,
)
from rayweave.cluster.vectors.store import CollectionSpec, ScoredPoint, VectorPoint, VectorQuery

SPEC = CollectionSpec(name="c", dense_dim=3)
SPARSE = SparseVector(indices=(2, 7), values=(0.5, 1.0))
FLOAT_FILTER: Any = {"x": 1.5}


class Colour(Enum):
    RED = "red"


class TestParseFilter:
    def test_no_filter_matches_everything(self) -> None:
        assert parse_filter(None) == []
        assert parse_filter({}) == []

    def test_scalars_match_by_value_and_sequences_any_of(self) -> None:
        flt: Any = {"level": "section", "n": 3, "visible": True, "doc_id": ["a", "b"]}
        assert parse_filter(flt) == [
            FieldMatch("level", ("section",), any_of=False),
            FieldMatch("n", (3,), any_of=False),
            FieldMatch("visible", (True,), any_of=False),
            FieldMatch("doc_id", ("a", "b"), any_of=True),
        ]

    def test_numpy_and_enum_values_become_plain_python(self) -> None:
        flt: Any = {"n": np.int64(4), "colour": Colour.RED, "topic": np.array([1, 2])}
        matches = parse_filter(flt)
        assert matches == [
            FieldMatch("n", (4,), any_of=False),
            FieldMatch("colour", ("red",), any_of=False),
            FieldMatch("topic", (1, 2), any_of=True),
        ]
        assert type(matches[0].values[0]) is int
        assert type(matches[2].values[0]) is int

    def test_any_of_drops_repeats_keeping_order_and_accepts_every_collection(self) -> None:
        for raw in (["b", "a", "b"], ("b", "a", "b")):
            flt: Any = {"doc_id": raw}
            assert parse_filter(flt) == [FieldMatch("doc_id", ("b", "a"), any_of=True)]
        flt = {"doc_id": frozenset({"x"})}
        assert parse_filter(flt) == [FieldMatch("doc_id", ("x",), any_of=True)]
        flt = {"doc_id": []}
        assert parse_filter(flt) == [FieldMatch("doc_id", (), any_of=True)]

    @pytest.mark.parametrize(
        ("flt", "message"),
        [
            (["doc_id"], "must be a mapping.*list"),
            ({"": "x"}, "non-empty strings"),
            ({1: "x"}, "non-empty strings"),
            ({"score": 0.5}, "'score'.*float"),
            ({"doc_id": None}, "'doc_id'.*NoneType"),
            ({"topic": [1, "a"]}, "'topic'.*one type"),
            ({"topic": [1, True]}, "'topic'.*one type"),
            ({"topic": [True, 1]}, "'topic'.*one type"),
            ({"tags": [["a"]]}, "'tags'.*list"),
        ],
    )
    def test_bad_filters_are_query_errors_naming_the_field(self, flt: Any, message: str) -> None:
        with pytest.raises(QueryError, match=message):
            parse_filter(flt)

    def test_mutations_need_a_non_empty_filter(self) -> None:
        with pytest.raises(InputError, match="delete needs a non-empty filter"):
            require_filter({}, "delete")
        with pytest.raises(InputError, match="set_payload needs a non-empty filter"):
            require_filter(None, "set_payload")
        assert require_filter({"doc_id": "a"}, "delete") == [
            FieldMatch("doc_id", ("a",), any_of=False)
        ]


class TestPayloads:
    def test_values_become_json_safe_copies(self) -> None:
        raw = {
            "n": np.int32(3),
            "x": np.float64(0.5),
            "v": np.array([1.0, 2.0]),
            "t": ("a", 1),
            "e": Colour.RED,
            "nested": {"ok": [True, None]},
        }
        assert json_payload(raw, "point 'p'") == {
            "n": 3,
            "x": 0.5,
            "v": [1.0, 2.0],
            "t": ["a", 1],
            "e": "red",
            "nested": {"ok": [True, None]},
        }

    @pytest.mark.parametrize(
        ("value", "message"),
        [
            (float("nan"), r"p\.x is nan"),
            ({"deep": [1.0, float("-inf")]}, r"p\.x\.deep\[1\] is -inf"),
            (np.array([0.0, np.inf]), r"p\.x\[1\] is inf"),
            ({1: "a"}, r"p\.x has a non-string key 1"),
            (object(), r"p\.x has unsupported type object"),
            ({"s": {"a"}}, r"p\.x\.s has unsupported type set"),
        ],
    )
    def test_bad_values_name_their_path(self, value: object, message: str) -> None:
        with pytest.raises(InputError, match=message):
            json_payload({"x": value}, "p")

    def test_a_payload_must_be_a_mapping(self) -> None:
        not_a_mapping: Any = ["a"]
        with pytest.raises(InputError, match="payload of p must be a mapping, got list"):
            json_payload(not_a_mapping, "p")
        assert json_value(None, "p") is None


class TestHits:
    def test_chunk_id_comes_from_the_payload_else_the_uuid(self) -> None:
        assert chunk_id_of({CHUNK_ID: "c1"}, "u") == "c1"
        assert chunk_id_of({CHUNK_ID: 7}, "u") == "u"  # written by someone else
        assert chunk_id_of({}, 42) == "42"
        assert chunk_id_of(None, "u") == "u"

    def test_ranked_is_best_first_and_ties_go_by_chunk_id(self) -> None:
        points = [ScoredPoint(id=i, score=s) for i, s in (("b", 0.5), ("c", 0.9), ("a", 0.5))]
        assert [p.id for p in ranked(points)] == ["c", "a", "b"]
        assert [p.id for p in ranked(list(reversed(points)))] == ["c", "a", "b"]
        assert ranked([]) == []

    def test_scored_point_keeps_or_drops_the_payload(self) -> None:
        payload = {CHUNK_ID: "c1", "text": "t"}
        engine_score: Any = np.float32(0.25)  # what an engine hands back
        hit = scored_point("u", engine_score, payload, with_payload=True)
        assert hit == ScoredPoint(id="c1", score=0.25, payload=payload)
        assert type(hit.score) is float
        assert hit.payload is not payload  # a copy: the engine's record is not shared
        assert scored_point("u", 1, payload, with_payload=False).payload == {}
        assert scored_point("u", 1, None, with_payload=("text",)).payload == {}

    def test_point_vectors_convert_dense_and_the_engines_sparse_type(self) -> None:
        class EngineSparse:
            def __init__(self) -> None:
                self.indices = [3, 9]
                self.values = [0.5, 0.25]

        got = point_vectors({"dense": [1, 2], "sparse": EngineSparse()}, EngineSparse)
        dense = got["dense"]
        assert isinstance(dense, np.ndarray)
        assert dense.dtype == np.float32
        assert dense.tolist() == [1.0, 2.0]
        assert got["sparse"] == SparseVector(indices=(3, 9), values=(0.5, 0.25))
        assert point_vectors(None, EngineSparse) == {}
        assert point_vectors([1.0], EngineSparse) == {}  # an unnamed vector is not ours


class TestVectors:
    def test_dense_matrix_stacks_float32(self) -> None:
        matrix = dense_matrix([[1, 2, 3], np.ones(3)], ["a", "b"], 3, "dense")
        assert matrix.dtype == np.float32
        assert matrix.shape == (2, 3)

    @pytest.mark.parametrize(
        ("rows", "dim", "message"),
        [
            ([[1.0, 2.0, 3.0], [1.0, 2.0]], None, r"point 'b': dense vector has shape \(2,\)"),
            ([[1.0, 2.0], [1.0, 2.0]], 3, "point 'a': dense vector has 2 dimensions.*has 3"),
            ([[1.0, 2.0, 3.0], [1.0, np.nan, 3.0]], 3, "point 'b': dense vector contains NaN"),
            ([[[1.0]], [[2.0]]], None, "must be 1-D"),
            ([["x", "y"], ["z", "w"]], None, r"points \['a', 'b'\] are not numeric"),
        ],
    )
    def test_bad_rows_name_the_point(self, rows: Any, dim: int | None, message: str) -> None:
        with pytest.raises(InputError, match=message):
            dense_matrix(rows, ["a", "b"], dim, "dense")

    def test_check_sparse_normalises_to_python_numbers(self) -> None:
        index: Any = np.int64(1)
        weight: Any = np.float32(0.5)
        raw = SparseVector(indices=(index,), values=(weight,))
        checked = check_sparse(raw, "q")
        assert checked == SparseVector(indices=(1,), values=(0.5,))
        assert type(checked.indices[0]) is int
        assert check_sparse(SparseVector(indices=(), values=()), "q").indices == ()

    @pytest.mark.parametrize(
        ("vector", "message"),
        [
            (SparseVector(indices=(2**32,), values=(1.0,)), r"q: sparse indices must lie"),
            (SparseVector(indices=(-1,), values=(1.0,)), r"q: sparse indices must lie"),
            (SparseVector(indices=(1, 1), values=(1.0, 2.0)), "q: sparse vector has duplicate"),
            (SparseVector(indices=(1,), values=(float("nan"),)), "q: sparse vector contains NaN"),
            (SparseVector(indices=("a",), values=(1.0,)), "q: sparse vector is not numeric"),  # type: ignore[arg-type]
            ({"indices": (1,)}, "q: sparse vector must be a SparseVector, got dict"),
        ],
    )
    def test_bad_sparse_vectors_are_input_errors(self, vector: Any, message: str) -> None:
        with pytest.raises(InputError, match=message):
            check_sparse(vector, "q")


class TestPreparePoints:
    def test_points_get_uuids_and_keep_their_chunk_id_in_the_payload(self) -> None:
        points = [
            VectorPoint(id="a", payload={"n": np.int8(1)}, dense=[1, 0, 0], sparse=SPARSE),
            VectorPoint(id="b", payload={}, sparse=SPARSE),
        ]
        first, second = prepare_points(points, SPEC)
        assert first.uuid == point_uuid("a")
        assert first.payload == {"n": 1, CHUNK_ID: "a"}
        assert first.dense == [1.0, 0.0, 0.0]
        assert first.sparse == SPARSE
        assert first.image is None
        assert (second.dense, second.payload) == (None, {CHUNK_ID: "b"})

    def test_the_caller_cannot_overwrite_the_chunk_id(self) -> None:
        (prepared,) = prepare_points(
            [VectorPoint(id="a", payload={CHUNK_ID: "z"}, dense=[1, 0, 0])], SPEC
        )
        assert prepared.payload[CHUNK_ID] == "a"

    @pytest.mark.parametrize(
        ("point", "spec", "message"),
        [
            (VectorPoint(id="a", payload={}), SPEC, "point 'a' has no vector"),
            (VectorPoint(id="", payload={}, dense=[1, 0, 0]), SPEC, "non-empty strings"),
            (
                VectorPoint(id="a", payload={}, image=[1.0]),
                SPEC,
                "point 'a' has a image vector; the collection has none",
            ),
            (
                VectorPoint(id="a", payload={}, sparse=SPARSE),
                CollectionSpec(name="c", dense_dim=3, sparse=False),
                "point 'a' has a sparse vector; collection 'c' has none",
            ),
            ("a", SPEC, "upsert takes VectorPoint values, got str"),
        ],
    )
    def test_bad_points_are_refused(self, point: Any, spec: CollectionSpec, message: str) -> None:
        with pytest.raises(InputError, match=message):
            prepare_points([point], spec)


class TestPrepareQuery:
    def test_hybrid_takes_both_vectors_and_prefetches_at_least_the_limit(self) -> None:
        query = VectorQuery(
            mode="hybrid", dense=np.ones(3), sparse=SPARSE, limit=80, filter={"level": "section"}
        )
        prepared = prepare_query(query, SPEC)
        assert prepared.dense == [1.0, 1.0, 1.0]
        assert prepared.sparse == SPARSE
        assert prepared.prefetch_limit == 80
        assert prepared.matches == [FieldMatch("level", ("section",), any_of=False)]
        assert prepare_query(VectorQuery(dense=[0, 0, 1], limit=5), SPEC).prefetch_limit == 50

    def test_an_image_search_checks_against_the_image_dim(self) -> None:
        spec = CollectionSpec(name="c", dense_dim=3, image_dim=2)
        prepared = prepare_query(VectorQuery(mode="image", dense=[1, 0]), spec)
        assert (prepared.dense, prepared.sparse) == ([1.0, 0.0], None)
        with pytest.raises(QueryError, match=r"image query vector has shape \(3,\)"):
            prepare_query(VectorQuery(mode="image", dense=[1, 0, 0]), spec)
        with pytest.raises(QueryError, match="the collection has no image vector"):
            prepare_query(VectorQuery(mode="image", dense=[1, 0]), SPEC)

    @pytest.mark.parametrize(
        ("query", "spec", "message"),
        [
            (VectorQuery(), SPEC, "a dense search needs a dense query vector"),
            (
                VectorQuery(mode="sparse", sparse=SPARSE),
                CollectionSpec(name="c", dense_dim=3, sparse=False),
                "collection 'c' has no sparse vector",
            ),
            (
                VectorQuery(mode="sparse", sparse=SparseVector(indices=(1, 1), values=(1, 1))),
                SPEC,
                "sparse query: sparse vector has duplicate indices",
            ),
            (VectorQuery(mode="hybrid", dense=[1, 0, 0]), SPEC, "hybrid search needs a sparse"),
            (VectorQuery(dense=[1, 0, 0], filter=FLOAT_FILTER), SPEC, "'x'"),
            ("dense", SPEC, "query must be a VectorQuery, got str"),
        ],
    )
    def test_bad_queries_are_query_errors(
        self, query: Any, spec: CollectionSpec, message: str
    ) -> None:
        with pytest.raises(QueryError, match=message):
            prepare_query(query, spec)

    @pytest.mark.parametrize(
        ("with_payload", "selector"),
        [(True, True), (False, [CHUNK_ID]), (("text", "title"), [CHUNK_ID, "text", "title"])],
    )
    def test_payload_selector_always_brings_the_chunk_id(
        self, with_payload: bool | tuple[str, ...], selector: bool | list[str]
    ) -> None:
        query = VectorQuery(dense=[1, 0, 0], with_payload=with_payload)
        assert prepare_query(query, SPEC).payload_selector == selector


class TestCheckShape:
    def test_the_same_shape_passes(self) -> None:
        check_shape(SPEC, CollectionSpec(name="c", dense_dim=3))

    def test_every_difference_is_named(self) -> None:
        stored = CollectionSpec(name="c", dense_dim=3, sparse=True, image_dim=None)
        wanted = CollectionSpec(name="c", dense_dim=4, sparse=False, image_dim=8)
        with pytest.raises(VectorStoreError) as info:
            check_shape(stored, wanted)
        message = str(info.value)
        assert "collection 'c' exists with another shape" in message
        assert "dense dim 3 stored, 4 requested" in message
        assert "sparse vector present in the stored collection" in message
        assert "image dim None stored, 8 requested" in message
