from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests_support import BEIR_FIXTURES, graph_snapshot, with_collection

from rayweave.bench.inputs import write_subset
from rayweave.bench.update import run_update_bench
from rayweave.cluster.settings import Settings
from rayweave.graph.store import open_graph_store
from rayweave.ingest.pipeline import run_ingest


@pytest.mark.integration
def test_one_document_both_ways_leaves_the_namespace_as_it_was(
    ray_stack: Settings, graph_connection: object, tmp_path: Path
) -> None:
    settings = with_collection(ray_stack, "bench-update")
    subset = tmp_path / "hotpotqa-dev"
    write_subset(BEIR_FIXTURES / "hotpotqa-dev" / "corpus.jsonl", subset, 12)
    run_ingest(settings, [subset], beir=True, collection="bench-update")
    graph = open_graph_store(settings, namespace="bench-update")
    before = graph_snapshot(graph)
    out = tmp_path / "update.json"
    try:
        (row,) = run_update_bench(settings, ["bench-update"], json_path=out)
        assert graph_snapshot(graph) == before
    finally:
        graph.drop_namespace()
        graph.close()
    assert row.documents == 12
    assert row.probe_from == "bench-update"
    inc, local, full = row.incremental, row.in_process, row.full
    assert [(f.mode, f.host) for f in (inc, local, full)] == [
        ("incremental", "actor"),
        ("incremental", "process"),
        ("full", "process"),
    ]
    for figures in (inc, local, full):
        assert figures.ingest_s > figures.ingest_link_s > 0
    for figures in (inc, local, full):  # the upkeep's steps, within its own time
        assert {"read chunks", "compute", "write", "synonymy", "facts"} <= set(figures.link_steps)
        assert "counts" not in figures.link_steps  # totals: `rayweave graph stats`
        assert 0 < sum(figures.link_steps.values()) <= figures.ingest_link_s
    assert inc.refresh_keys > 0  # the change log named what the ingest touched
    assert full.refresh_keys == 0  # the full pass cannot: a whole load
    assert row.rebuild_s > 0
    assert row.rebuild_peak_rss_mb > 50
    assert row.full_rebuild_s > 0
    assert row.full_rebuild_peak_rss_mb > 50
    assert json.loads(out.read_text())[0]["collection"] == "bench-update"
