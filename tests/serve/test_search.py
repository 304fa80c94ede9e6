"""The search pipeline: its pure parts, and what a whole search returns for copied files."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from tests_support import SAMPLE_CORPUS, with_collection

from rayweave.cluster.settings import Settings
from rayweave.cluster.types import Hit
from rayweave.serve.search import matches_filters


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
