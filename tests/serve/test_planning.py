from __future__ import annotations

import pytest

from rayweave.cluster.settings import RetrievalSettings
from rayweave.cluster.types import Hit
from rayweave.serve.fusion import fuse
from rayweave.serve.planning import WEIGHTS, make_plan
from rayweave.serve.schemas import ContentScope, Profile, QueryType
from rayweave.serve.search import Classification

DOCS = Classification(query_type=QueryType.WHAT_IS, scope=ContentScope.DOCS)
CODE = Classification(query_type=QueryType.CODE, scope=ContentScope.CODE)


@pytest.mark.parametrize(
    ("profile", "dense", "sparse", "graph", "refine"),
    [
        (Profile.DENSE, True, False, False, "off"),
        (Profile.SPARSE, False, True, False, "off"),
        (Profile.HYBRID, True, True, False, "off"),
        (Profile.GRAPH, True, True, True, "off"),
        (Profile.FULL, True, True, True, "tfidf"),
    ],
)
def test_profiles_select_retrievers(
    profile: Profile, dense: bool, sparse: bool, graph: bool, refine: str
) -> None:
    plan = make_plan(
        DOCS, profile=profile, top_k=10, hierarchical=None, settings=RetrievalSettings()
    )
    assert (plan.dense, plan.sparse, plan.graph, plan.refine) == (dense, sparse, graph, refine)


def test_default_profile_and_hierarchy_come_from_settings() -> None:
    settings = RetrievalSettings(default_profile="hybrid", hierarchical=True)
    plan = make_plan(DOCS, profile=None, top_k=5, hierarchical=None, settings=settings)
    assert plan.profile is Profile.HYBRID
    assert plan.hierarchical is True
    assert (
        make_plan(DOCS, profile=None, top_k=5, hierarchical=False, settings=settings).hierarchical
        is False
    )


def test_code_queries_weigh_the_lexical_list_down() -> None:
    docs = make_plan(DOCS, profile=None, top_k=10, hierarchical=None, settings=RetrievalSettings())
    code = make_plan(CODE, profile=None, top_k=10, hierarchical=None, settings=RetrievalSettings())
    assert code.weights["sparse"] < docs.weights["sparse"] <= docs.weights["dense"]


WEB_CODE = Classification(query_type=QueryType.CODE, scope=ContentScope.CODE, web_phrased=True)


def test_a_web_phrased_code_question_is_ranked_by_dense_search_alone() -> None:
    settings = RetrievalSettings()
    code = make_plan(CODE, profile=None, top_k=10, hierarchical=None, settings=settings)
    web = make_plan(WEB_CODE, profile=None, top_k=10, hierarchical=None, settings=settings)
    assert code.weights == dict(WEIGHTS[ContentScope.CODE])
    for name in ("sparse", "graph", "graph-expand"):
        assert web.weights[name] == 0.0 < code.weights[name]
    assert web.weights["dense"] == code.weights["dense"]
    assert (web.sparse, web.graph) == (True, True)  # they still run: what they find is evidence
    # Without dense search the lexical list is the ranking: it keeps its weight.
    alone = make_plan(
        WEB_CODE, profile=Profile.SPARSE, top_k=10, hierarchical=None, settings=settings
    )
    assert alone.weights["sparse"] == code.weights["sparse"] > 0
    # A configured weight still wins.
    tuned = RetrievalSettings(retriever_weights={"sparse": 0.5})
    plan = make_plan(WEB_CODE, profile=None, top_k=10, hierarchical=None, settings=tuned)
    assert plan.weights["sparse"] == 0.5


def _ranked(name: str, ids: list[str]) -> list[Hit]:
    return [Hit(id=i, doc_id=i, text=i, score=1.0, retrievers=(name,)) for i in ids]


@pytest.mark.parametrize(("question", "first"), [(WEB_CODE, "a"), (CODE, "c")])
def test_only_a_docstring_style_code_question_lets_the_lexical_list_reorder_dense(
    question: Classification, first: str
) -> None:
    plan = make_plan(
        question, profile=None, top_k=10, hierarchical=None, settings=RetrievalSettings()
    )
    dense = _ranked("dense", ["a", "b", "c", "d"])
    fused = fuse({"dense": dense, "sparse": _ranked("sparse", ["c", "e"])}, weights=plan.weights)
    assert fused[0].id == first
    # A hit only the lexical list found is still offered; muted, after all of dense's.
    ids = [h.id for h in fused]
    assert "e" in ids
    if question is WEB_CODE:
        assert ids == ["a", "b", "c", "d", "e"]


def test_candidates_never_fewer_than_top_k() -> None:
    plan = make_plan(
        DOCS, profile=None, top_k=80, hierarchical=None, settings=RetrievalSettings(candidates=50)
    )
    assert plan.candidates == 80


def test_error_questions_let_every_list_vote() -> None:
    # Anchoring guards the vector top hit against associative graph votes; an error question's
    # graph list follows SOLVES (the answer relation), so nothing is anchored there.
    settings = RetrievalSettings(anchor_top=2)
    error = Classification(query_type=QueryType.ERROR, scope=ContentScope.DOCS)
    assert (
        make_plan(DOCS, profile=None, top_k=10, hierarchical=None, settings=settings).anchor_top
        == 2
    )
    assert (
        make_plan(error, profile=None, top_k=10, hierarchical=None, settings=settings).anchor_top
        == 0
    )
