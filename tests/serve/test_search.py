"""Pure parts of the search pipeline."""

from __future__ import annotations

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
