"""The search pipeline: its pure parts, and what a whole search returns for copied files."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from tests_support import SAMPLE_CORPUS, with_collection

from rayweave.cluster.settings import Settings
from rayweave.cluster.types import Hit
from rayweave.serve.search import RetrievalQuery, SearchPipeline, matches_filters


def hit(source: str, content_type: str = "markdown", language: str | None = None) -> Hit:
    meta: dict[str, object] = {"content_type": content_type}
    if language:
        meta["language"] = language
    return Hit(id=source, doc_id=f"d-{source}", text="t", score=1.0, source=source, metadata=meta)


def test_filters_apply_to_every_field_and_empty_ones_are_ignored() -> None:
    md, py = hit("a.md"), hit("b.py", "code", "python")
    assert matches_filters(md, {"source": ["a.md"]})
    assert not matches_filters(py, {"source": ["a.md"]})
    assert matches_filters(py, {"content_type": ["code"], "language": ["python"]})
    assert not matches_filters(md, {"content_type": ["code"]})
    assert matches_filters(md, {"doc_id": ["d-a.md"], "language": None})
    assert matches_filters(md, {"unknown": ["x"], "source": []})


class ListedHits:
    """Vector retriever and hydrator over an in-memory list: ranking hits carry no text, and
    every hydrate call is recorded."""

    def __init__(self, stored: list[Hit]) -> None:
        self.stored = {h.id: h for h in stored}
        self.order = [h.id for h in stored]
        self.reads: list[list[str]] = []

    async def retrieve(self, query: RetrievalQuery) -> dict[str, list[Hit]]:
        hits = [self.stored[i] for i in self.order]
        return {"dense": [Hit(id=h.id, doc_id=h.doc_id, text="", score=h.score) for h in hits]}

    async def hydrate(self, ids: list[str]) -> dict[str, Hit]:
        self.reads.append(list(ids))
        return {i: self.stored[i] for i in ids if i in self.stored}


def run_pipeline(stored: list[Hit], top_k: int) -> tuple[list[Hit], list[list[str]]]:
    from rayweave.serve.classifier import RuleClassifier
    from rayweave.serve.fusion import FusionRanker
    from rayweave.serve.planning import planner
    from rayweave.serve.schemas import Profile

    settings = Settings().serve.retrieval
    listed = ListedHits(stored)
    pipeline = SearchPipeline(
        classifier=RuleClassifier(),
        planner=planner(settings),
        vector=listed,
        hydrator=listed,
        fuser=FusionRanker(settings),
    )
    outcome = asyncio.run(pipeline.search("leases", top_k=top_k, profile=Profile.DENSE))
    return outcome.hits, listed.reads


def test_text_is_read_once_for_the_page_and_more_only_when_the_page_falls_short() -> None:
    distinct = [
        Hit(id=f"c{i}", doc_id=f"d{i}", text=f"passage {i}", score=1 - i / 100) for i in range(30)
    ]
    hits, reads = run_pipeline(distinct, top_k=3)
    assert [h.id for h in hits] == ["c0", "c1", "c2"]
    assert [h.text for h in hits] == ["passage 0", "passage 1", "passage 2"]
    assert reads == [[f"c{i}" for i in range(6)]]  # one read of 2 x top_k

    # Six copies of one passage, then one document's many chunks: folding and the per-document
    # cap (2) leave the first read short, so the next candidates are read; the page is the one
    # that reading every candidate gives.
    crowded = [
        *(Hit(id=f"x{i}", doc_id=f"x{i}", text="the same", score=1 - i / 100) for i in range(6)),
        *(Hit(id=f"a{i}", doc_id="a", text=f"a part {i}", score=0.9 - i / 100) for i in range(6)),
        *distinct[10:],
    ]
    hits, reads = run_pipeline(crowded, top_k=3)
    assert [len(r) for r in reads] == [6, 6]  # the copies fold into x0; a0, a1 fill the page
    assert [h.id for h in hits] == ["x0", "a0", "a1"]
    assert hits[0].duplicates == tuple(f"x{i}" for i in range(1, 6))
    hits, reads = run_pipeline(crowded, top_k=4)  # a's third chunk is capped: read on
    assert [len(r) for r in reads] == [8, 8]
    assert [h.id for h in hits] == ["x0", "a0", "a1", "c10"]


class StuckOnce(ListedHits):
    """A hydrator whose first read never returns, as a replica on a node that just died."""

    def __init__(self, stored: list[Hit], *, stuck: int = 1) -> None:
        super().__init__(stored)
        self.stuck = stuck

    async def hydrate(self, ids: list[str]) -> dict[str, Hit]:
        if self.stuck:
            self.stuck -= 1
            self.reads.append(list(ids))
            await asyncio.Event().wait()
        return await super().hydrate(ids)


def pipeline_over(listed: ListedHits) -> SearchPipeline:
    from rayweave.serve.classifier import RuleClassifier
    from rayweave.serve.fusion import FusionRanker
    from rayweave.serve.planning import planner

    settings = Settings().serve.retrieval
    return SearchPipeline(
        classifier=RuleClassifier(),
        planner=planner(settings),
        vector=listed,
        hydrator=listed,
        fuser=FusionRanker(settings),
        deadline_s=0.05,
        read_floor_s=0.05,
    )


def test_a_stuck_page_read_is_cut_at_the_deadline_and_tried_again() -> None:
    from rayweave.serve.schemas import Profile

    stored = [
        Hit(id=f"c{i}", doc_id=f"d{i}", text=f"passage {i}", score=1 - i / 10) for i in range(5)
    ]
    listed = StuckOnce(stored)
    outcome = asyncio.run(pipeline_over(listed).search("leases", top_k=2, profile=Profile.DENSE))
    assert [h.text for h in outcome.hits] == ["passage 0", "passage 1"]
    assert listed.reads == [["c0", "c1", "c2", "c3"]] * 2  # the stuck try, then the answer


def test_a_page_read_that_never_answers_is_a_store_error() -> None:
    from rayweave.cluster.errors import VectorStoreError
    from rayweave.serve.errors import status_for
    from rayweave.serve.schemas import Profile
    from rayweave.serve.search import READ_TRIES

    stored = [Hit(id="c0", doc_id="d0", text="passage 0", score=1.0)]
    listed = StuckOnce(stored, stuck=READ_TRIES)
    with pytest.raises(VectorStoreError, match="page's 1 chunks failed 2 times") as err:
        asyncio.run(pipeline_over(listed).search("leases", top_k=1, profile=Profile.DENSE))
    assert status_for(err.value) == 503
    assert len(listed.reads) == READ_TRIES


class CancelledUnder(ListedHits):
    """A vector retriever whose call comes back cancelled without the request being cancelled."""

    async def retrieve(self, query: RetrievalQuery) -> dict[str, list[Hit]]:
        raise asyncio.CancelledError


def test_a_retriever_cancelled_under_the_request_degrades_it() -> None:
    from rayweave.serve.schemas import Profile

    listed = CancelledUnder([Hit(id="c0", doc_id="d0", text="passage 0", score=1.0)])
    outcome = asyncio.run(pipeline_over(listed).search("leases", top_k=1, profile=Profile.DENSE))
    assert outcome.hits == []
    assert outcome.degraded == ["vector"]


class ReadCancelledOnce(ListedHits):
    """A hydrator whose first read comes back cancelled (its replica torn down mid-call)."""

    async def hydrate(self, ids: list[str]) -> dict[str, Hit]:
        self.reads.append(list(ids))
        if len(self.reads) == 1:
            raise asyncio.CancelledError
        return {i: self.stored[i] for i in ids if i in self.stored}


def test_a_page_read_cancelled_under_the_request_is_tried_again() -> None:
    from rayweave.serve.schemas import Profile

    listed = ReadCancelledOnce([Hit(id="c0", doc_id="d0", text="passage 0", score=1.0)])
    outcome = asyncio.run(pipeline_over(listed).search("leases", top_k=1, profile=Profile.DENSE))
    assert [h.text for h in outcome.hits] == ["passage 0"]
    assert len(listed.reads) == 2


@pytest.mark.integration
def test_a_second_copy_of_a_file_folds_into_the_first_hit(
    ray_stack: Settings, graph_connection: object, tmp_path: Path
) -> None:
    """The same file ingested from two checkouts answers once, naming the other copy."""
    from rayweave.ingest.pipeline import run_ingest
    from rayweave.serve.local import LocalSearch
    from rayweave.serve.schemas import SearchRequest

    settings = with_collection(ray_stack, "copies")
    original = SAMPLE_CORPUS / "docs" / "concepts" / "leases.md"
    copies = [tmp_path / name / original.name for name in ("one", "two")]
    for copy in copies:
        copy.parent.mkdir()
        shutil.copy(original, copy)
    run_ingest(settings, [c.parent for c in copies], collection="copies")

    request = SearchRequest(query="What is a lease?", top_k=10)
    retrieval = settings.serve.retrieval.model_copy(update={"collapse_duplicates": False})
    unfolded = settings.model_copy(
        update={"serve": settings.serve.model_copy(update={"retrieval": retrieval})}
    )
    results = {}
    for name, variant in (("folded", settings), ("unfolded", unfolded)):
        search = LocalSearch(variant, collection="copies")
        try:
            results[name] = asyncio.run(search.service.search(request)).results
        finally:
            search.close()

    sources = {str(c) for c in copies}
    folded = results["folded"]
    passages = [" ".join(r.text.split()) for r in folded]
    assert folded
    assert len(passages) == len(set(passages))
    for r in folded:
        assert r.source in sources, r
        assert r.duplicates == sorted(sources - {r.source}), r
    # Without folding, the copies take result slots of their own.
    plain = [" ".join(r.text.split()) for r in results["unfolded"]]
    assert len(plain) > len(set(plain))
