"""HTTP request/response models: validation errors name the field, limits, hit conversion."""

from __future__ import annotations

from typing import Any, cast

import pytest
from pydantic import ValidationError

from rayweave.cluster.types import GraphPath, Hit, Level, QueryType
from rayweave.serve.schemas import (
    AnswerResponse,
    ContentScope,
    PathModel,
    Profile,
    ResultItem,
    SearchFilters,
    SearchRequest,
    SearchResponse,
)


def _error_locs(exc: ValidationError) -> list[tuple[str | int, ...]]:
    return [tuple(e["loc"]) for e in exc.errors()]


class TestSearchRequest:
    def test_defaults(self) -> None:
        r = SearchRequest(query="q")
        assert r.top_k is None
        assert r.profile is None
        assert r.level == "any"
        assert r.include_context is True
        assert r.context_max_tokens == 2000

    def test_strings_become_enums(self) -> None:
        r = SearchRequest.model_validate(
            {"query": "q", "profile": "hybrid+graph+refine", "query_type": "multi-hop"}
        )
        assert r.profile is Profile.FULL
        assert r.query_type is QueryType.MULTI_HOP

    @pytest.mark.parametrize(
        ("body", "loc"),
        [
            ({}, ("query",)),
            ({"text": "q"}, ("query",)),
            ({"query": "q", "profile": "magic"}, ("profile",)),
            ({"query": "q", "query_type": "poem"}, ("query_type",)),
            ({"query": "q", "level": "chapter"}, ("level",)),
            ({"query": "q", "context_max_tokens": 63}, ("context_max_tokens",)),
            ({"query": "q", "context_max_tokens": 32001}, ("context_max_tokens",)),
            ({"query": "q", "conversation_id": "c" * 129}, ("conversation_id",)),
            ({"query": "q", "user_id": "u" * 129}, ("user_id",)),
            ({"query": "q", "top_k": "ten"}, ("top_k",)),
            ({"query": "q", "filters": {"kind": ["x"]}}, ("filters", "kind")),
            ({"query": "q", "filters": {"language": "python"}}, ("filters", "language")),
        ],
    )
    def test_bad_input_names_the_field(self, body: dict[str, Any], loc: tuple[str, ...]) -> None:
        with pytest.raises(ValidationError) as err:
            SearchRequest.model_validate(body)
        assert loc in _error_locs(err.value)

    def test_limits_are_inclusive(self) -> None:
        assert SearchRequest(query="q", context_max_tokens=64).context_max_tokens == 64
        assert SearchRequest(query="q", context_max_tokens=32000).context_max_tokens == 32000
        assert SearchRequest(query="q", conversation_id="c" * 128).conversation_id == "c" * 128

    def test_unknown_field_is_rejected(self) -> None:
        with pytest.raises(ValidationError) as err:
            SearchRequest.model_validate({"query": "q", "topk": 3})
        assert ("topk",) in _error_locs(err.value)
        assert err.value.errors()[0]["type"] == "extra_forbidden"

    def test_filters(self) -> None:
        r = SearchRequest.model_validate(
            {"query": "q", "filters": {"content_type": ["code"], "doc_id": ["a", "b"]}}
        )
        assert r.filters == SearchFilters(content_type=["code"], doc_id=["a", "b"])
        assert r.filters is not None
        assert r.filters.source is None

    def test_profile_values_match_the_retrieval_settings(self) -> None:
        from typing import get_args

        from rayweave.cluster.settings import RetrievalSettings

        allowed = get_args(RetrievalSettings.model_fields["default_profile"].annotation)
        assert {p.value for p in Profile} == set(allowed)


class TestResultItem:
    def test_of_hit(self) -> None:
        hit = Hit(
            id="h",
            doc_id="d",
            text="t",
            score=0.123456789,
            level=Level.SECTION,
            source="a.md",
            title="A",
            section_path=("x", "y"),
            retrievers=("dense", "graph"),
            paths=(GraphPath(nodes=("a", "b"), relationships=("MENTIONS",), score=0.5),),
            duplicates=("copy.md",),
        )
        item = ResultItem.of(hit)
        assert item.score == 0.123457
        assert item.level == "section"
        assert item.section_path == ["x", "y"]
        assert item.retrievers == ["dense", "graph"]
        assert item.paths == [PathModel(nodes=["a", "b"], relationships=["MENTIONS"], score=0.5)]
        assert item.duplicates == ["copy.md"]
        assert item.model_dump()["paths"][0]["nodes"] == ["a", "b"]

    def test_numpy_score_becomes_a_float(self) -> None:
        import numpy as np

        score = cast(float, np.float32(0.5))  # what a numpy-backed ranker hands over
        item = ResultItem.of(Hit(id="h", doc_id="d", text="t", score=score))
        assert type(item.score) is float
        assert item.model_dump_json()


class TestResponses:
    def _response(self, cls: type[SearchResponse], **extra: Any) -> SearchResponse:
        return cls(
            query="q",
            query_type=QueryType.GENERAL,
            content_scope=ContentScope.DOCS,
            profile=Profile.HYBRID,
            results=[],
            **extra,
        )

    def test_defaults_are_empty_not_shared(self) -> None:
        a, b = self._response(SearchResponse), self._response(SearchResponse)
        a.degraded.append("web")
        assert b.degraded == []
        assert a.context is None
        assert a.statements is None

    def test_answer_response_extends_search_response(self) -> None:
        r = self._response(AnswerResponse, answer=None, answer_note="no LLM")
        dumped = r.model_dump(mode="json")
        assert dumped["profile"] == "hybrid"
        assert dumped["content_scope"] == "docs"
        assert dumped["answer"] is None
        assert dumped["answer_note"] == "no LLM"

    def test_response_rejects_unknown_scope(self) -> None:
        with pytest.raises(ValidationError) as err:
            SearchResponse.model_validate(
                {
                    "query": "q",
                    "query_type": "general",
                    "content_scope": "email",
                    "profile": "dense",
                    "results": [],
                }
            )
        assert ("content_scope",) in _error_locs(err.value)
