"""The filter rules both Qdrant adapters share, checked on what they ask their SDK to build."""

from __future__ import annotations

from typing import Any

from rayweave.cluster.vectors.points import Scalar, parse_filter
from rayweave.cluster.vectors.qdrant_dialect import engine_condition, engine_filter, payload_indexes
from rayweave.cluster.vectors.store import CollectionSpec


class RecordingDialect:
    """Builds plain tuples instead of SDK objects, so a test reads what was asked for."""

    def match_value(self, key: str, value: Scalar) -> Any:
        return ("value", key, value)

    def match_any(self, key: str, values: list[Scalar]) -> Any:
        return ("any", key, tuple(values))

    def filter(self, *, must: list[Any] | None = None, should: list[Any] | None = None) -> Any:
        return ("filter", tuple(must or ()), tuple(should or ()))


def built(flt: dict[str, object]) -> list[Any]:
    dialect: Any = RecordingDialect()  # only the filter methods: a partial dialect
    return [engine_condition(dialect, m) for m in parse_filter(flt)]


def test_bools_match_by_value_never_through_match_any() -> None:
    assert built({"visible": True}) == [("value", "visible", True)]
    assert built({"visible": [False]}) == [("value", "visible", False)]
    assert built({"visible": [True, False]}) == [
        ("filter", (), (("value", "visible", True), ("value", "visible", False)))
    ]


def test_strings_and_ints_use_match_any_for_lists() -> None:
    assert built({"doc_id": ["a", "b"], "n": [1]}) == [
        ("any", "doc_id", ("a", "b")),
        ("any", "n", (1,)),
    ]
    assert built({"doc_id": [], "n": 3}) == [("any", "doc_id", ()), ("value", "n", 3)]


def test_no_filter_is_none_not_an_empty_filter() -> None:
    dialect: Any = RecordingDialect()  # only the filter methods: a partial dialect
    assert engine_filter(dialect, []) is None


def test_payload_indexes_cover_keyword_and_bool_fields() -> None:
    spec = CollectionSpec(name="c", dense_dim=4, keyword_fields=("doc_id",), bool_fields=("v",))
    assert payload_indexes(spec) == [("doc_id", "keyword"), ("v", "bool")]
