"""Vector retrieval against the ingested sample corpus (real store actor, packaged encoders)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from rayweave.cluster.settings import Settings
from rayweave.cluster.vectors.store import ScoredPoint
from rayweave.serve.classifier import classify_query
from rayweave.serve.planning import make_plan
from rayweave.serve.schemas import Profile
from rayweave.serve.search import RetrievalQuery
from rayweave.serve.vector_retriever import VectorSearch, hit_from_point
from rayweave.serve.views import OUTLINE

QUESTION = "How do I fix E1004 TaskNotRegisteredError?"


def _query(settings: Settings, *, level: str | None = None) -> RetrievalQuery:
    plan = make_plan(
        classify_query(QUESTION),
        profile=Profile.HYBRID,
        top_k=10,
        hierarchical=False,
        settings=settings.serve.retrieval,
    )
    return RetrievalQuery(text=QUESTION, plan=plan, level=level)


@pytest.fixture(scope="module")
def search(sample_ingested: Settings) -> Iterator[VectorSearch]:
    found = VectorSearch.from_settings(sample_ingested, shared=True, collection="sample")
    yield found
    found.close()


def test_hybrid_lists_rank_the_error_first(search: VectorSearch, sample_ingested: Settings) -> None:
    query = _query(sample_ingested)
    lists = asyncio.run(search.retrieve(query))

    assert set(lists) == {"dense", "sparse"}
    for name, hits in lists.items():
        assert 0 < len(hits) <= query.plan.candidates, name
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True), name
        assert all(h.retrievers == (name,) and h.doc_id and h.source for h in hits), name
        # Ranking lists pass ids on: text is read once, for the page (hydration).
        assert all(h.text == "" and h.level for h in hits), name
        top = asyncio.run(search.hydrate([h.id for h in hits[:5]]))
        assert any("E1004" in top[h.id].text for h in hits[:5]), name

    ids = [h.id for h in lists["sparse"][:5]]
    hydrated = asyncio.run(search.hydrate([*ids, "no-such-chunk"]))
    assert set(hydrated) == set(ids)
    assert [hydrated[i].doc_id for i in ids] == [h.doc_id for h in lists["sparse"][:5]]
    assert all(hydrated[i].text for i in ids)


def test_level_filter_and_source_diversity(search: VectorSearch, sample_ingested: Settings) -> None:
    sections = asyncio.run(search.retrieve(_query(sample_ingested, level="section")))
    assert all(h.level == "section" for hits in sections.values() for h in hits)

    retrieval = sample_ingested.serve.retrieval.model_copy(update={"diversity_factor": 4})
    diverse = VectorSearch(
        store=search.store, dense=search.dense, sparse=search.sparse, settings=retrieval
    )
    lists = asyncio.run(diverse.retrieve(_query(sample_ingested)))
    for name, hits in lists.items():
        head = [h.doc_id for h in hits[:10]]
        # One hit per document first: the sample corpus has 34 documents, so ten differ.
        assert len(set(head)) == len(head), name


@pytest.mark.parametrize(
    ("children", "stored", "flagged"),
    [
        (["c1"], {"outline": True}, True),  # an undocumented function's signatures
        (["c1"], {"outline": False}, False),
        (["c1"], {}, True),  # stored before the flag existed: ranked as it was ('max')
        (["c1", "c2"], {"outline": True}, False),  # a summary of several sections: its own unit
    ],
)
def test_a_ranked_summary_carries_its_outline_flag(
    children: list[str], stored: dict[str, bool], flagged: bool
) -> None:
    payload = {"doc_id": "d", "level": "document", "children_ids": children, **stored}
    point = ScoredPoint(id="s", score=0.5, payload=payload)
    assert (OUTLINE in hit_from_point(point, "dense", ranked=True).metadata) is flagged
    assert OUTLINE not in hit_from_point(point, "").metadata  # a page's hit: no ranking flags
