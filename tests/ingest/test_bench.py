from __future__ import annotations

from rayweave.ingest.bench import format_table, run_chunking_bench


def test_bench_runs_on_the_sample_corpus() -> None:
    rows = run_chunking_bench(encode=False)
    (row,) = rows
    assert row.corpus == "sample_corpus"
    assert row.documents > 30
    assert row.chunks == row.documents + row.sections + row.propositions  # one summary per document
    assert row.ratio is None
    table = format_table(rows)
    assert "sample_corpus" in table
    assert "chunks/s" in table
