"""`IngestSummary`: counting outcomes, totals, rates, the JSON report and the rendered text."""

from __future__ import annotations

import json

from rayweave.ingest.report import DocStatus, DocumentError, DocumentOutcome, IngestSummary


def _outcome(
    status: DocStatus,
    chunks: int = 0,
    vectors: int = 0,
    source: str = "a.md",
    error: str | None = None,
) -> DocumentOutcome:
    return DocumentOutcome(
        doc_id="d", source=source, status=status, chunks=chunks, vectors=vectors, error=error
    )


class TestCounting:
    def test_each_status_counts_once_and_chunks_add_up(self) -> None:
        s = IngestSummary(collection="c")
        s.add(_outcome("inserted", chunks=3, vectors=6))
        s.add(_outcome("updated", chunks=2, vectors=4))
        s.add(_outcome("skipped"))
        s.add(_outcome("failed", source="bad.md", error="bad.md: not UTF-8"))
        assert (s.documents_inserted, s.documents_updated) == (1, 1)
        assert (s.documents_skipped, s.documents_failed) == (1, 1)
        assert (s.chunks, s.vectors) == (5, 10)
        assert s.documents_total == 3  # failures are not documents in the store
        assert s.errors == [DocumentError(path="bad.md", reason="not UTF-8")]

    def test_failure_without_a_reason(self) -> None:
        s = IngestSummary(collection="c")
        s.add(_outcome("failed", source="x.md"))
        assert s.errors[0].reason == "unknown error"

    def test_add_error_strips_only_its_own_path_prefix(self) -> None:
        s = IngestSummary(collection="c")
        s.add_error("a.md", "a.md: too big")
        s.add_error("a.md", "b.md: too big")
        s.add_error("a.md", "too big: a.md: x")
        assert [e.reason for e in s.errors] == ["too big", "b.md: too big", "too big: a.md: x"]
        assert s.documents_failed == 3

    def test_files_seen_counts_every_input_once(self) -> None:
        s = IngestSummary(collection="c")
        s.add(_outcome("inserted"))
        s.add(_outcome("skipped"))
        s.add_error("x", "y")
        s.skip_type(".png", 2)
        s.skip_type(".png")
        s.skip_type("no extension")
        assert s.skipped_types == {".png": 3, "no extension": 1}
        assert s.files_not_ingested == 4
        assert s.files_seen == 2 + 1 + 4


class TestRates:
    def test_zero_seconds_gives_zero_rates(self) -> None:
        s = IngestSummary(collection="c", chunks=10)
        assert s.rate(10) == 0.0
        assert s.to_dict()["chunks_per_s"] == 0.0

    def test_rates_count_written_documents_only(self) -> None:
        s = IngestSummary(collection="c", seconds=2.0)
        for status in ("inserted", "inserted", "inserted", "updated"):
            s.add(_outcome(status, chunks=10))
        for _ in range(100):
            s.add(_outcome("skipped"))
        d = s.to_dict()
        assert d["documents_per_s"] == 2.0
        assert d["chunks_per_s"] == 20.0


class TestReport:
    def test_to_dict_has_derived_totals_and_is_json(self) -> None:
        s = IngestSummary(collection="c", documents_inserted=1, seconds=1.0)
        s.add_error("p", "r")
        s.skip_type(".gif")
        d = s.to_dict()
        assert d["collection"] == "c"
        assert d["documents_total"] == 1
        assert d["files_seen"] == 3
        assert d["files_not_ingested"] == 1
        assert d["errors"] == [{"path": "p", "reason": "r"}]
        assert json.loads(json.dumps(d)) == d

    def test_render_states_the_counts(self) -> None:
        s = IngestSummary(
            collection="docs",
            documents_inserted=2,
            documents_updated=1,
            documents_skipped=4,
            chunks=30,
            vectors=60,
            graph_entities=7,
            graph_edges_written=9,
            graph_edges_deleted=2,
            seconds=3.0,
        )
        lines = s.render().splitlines()
        assert lines[0] == ("collection docs: 7 seen: 2 inserted, 1 updated, 4 unchanged, 0 failed")
        assert lines[1] == (
            "chunks 30, vectors 60; entity layer: 7 entities written, edges 9 written, 2 deleted"
        )
        assert lines[2] == "3.0s (linking 0.0s): 1.0 documents/s, 10.0 chunks/s"
        assert len(lines) == 3

    def test_render_lists_skipped_types_sorted(self) -> None:
        s = IngestSummary(collection="c")
        s.skip_type(".png", 2)
        s.skip_type(".bin")
        first = s.render().splitlines()[0]
        assert first.endswith(", 3 not ingested by type (1 .bin, 2 .png)")

    def test_render_shows_five_ignored_paths(self) -> None:
        s = IngestSummary(collection="c", ignored=[f"p{i}" for i in range(7)])
        text = s.render()
        assert "ignored 7 paths" in text
        assert "p0, p1, p2, p3, p4, ..." in text
        assert "p5" not in text
        exact = IngestSummary(collection="c", ignored=[f"p{i}" for i in range(5)]).render()
        assert exact.endswith("p0, p1, p2, p3, p4")

    def test_render_notes_and_caps_errors_at_fifty(self) -> None:
        s = IngestSummary(collection="c", notes=["no image model"])
        for i in range(53):
            s.add_error(f"f{i}", "broken")
        lines = s.render().splitlines()
        assert "  note: no image model" in lines
        errors = [line for line in lines if line.startswith("  error: ")]
        assert len(errors) == 50
        assert errors[0] == "  error: f0: broken"
        assert lines[-1] == "  ... and 3 more errors (see --report)"

    def test_exactly_fifty_errors_has_no_overflow_line(self) -> None:
        s = IngestSummary(collection="c")
        for i in range(50):
            s.add_error(f"f{i}", "broken")
        assert "more errors" not in s.render()
