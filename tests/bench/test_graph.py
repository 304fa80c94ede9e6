"""The graph benchmark runs end to end on a tiny BEIR folder (figures are not asserted)."""

from __future__ import annotations

import io
import json
import socket
from pathlib import Path

import pytest
from rich.console import Console

from rayweave.bench.graph import load_corpus, run_graph_bench
from rayweave.bench.graph_projection import SyntheticGraph
from rayweave.bench.table import format_table
from rayweave.cluster.errors import SourceError
from rayweave.cluster.services.graph_server import GraphServer
from rayweave.cluster.settings import Settings

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _beir(folder: Path) -> None:
    docs = [
        (
            "A",
            "Arthur's Magazine",
            "Arthur's Magazine was a periodical merged into Godey's Lady's Book.",
        ),
        (
            "B",
            "Godey's Lady's Book",
            "Godey's Lady's Book was a magazine published in Philadelphia.",
        ),
        ("C", "Philadelphia", "Philadelphia is a city in Pennsylvania."),
    ]
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "\n".join(json.dumps({"_id": i, "title": t, "text": x}) for i, t, x in docs)
    )
    (folder / "queries.jsonl").write_text(
        json.dumps(
            {"_id": "q1", "text": "Where was the magazine Arthur's Magazine merged into published?"}
        )
    )
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tA\t1\nq1\tB\t1\n")


def test_bench_reports_rates_latencies_and_recall(tmp_path: Path) -> None:
    _beir(tmp_path / "data" / "tiny")
    ports = []
    for _ in range(2):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    settings = Settings(
        home=tmp_path / "home",
        graph={"embedded_port": ports[0], "embedded_http_port": ports[1], "embedded_heap_mb": 256},
    )
    try:
        log = io.StringIO()
        rows = run_graph_bench(
            settings,
            data_dir=tmp_path / "data",
            corpora=["tiny"],
            seeds=1,
            recall_k=2,
            synthetic=SyntheticGraph(passages=2000, entities=1000),
            console=Console(file=log, width=200),  # what `rayweave bench graph` passes
        )
    finally:
        GraphServer.from_settings(settings).stop()
    metrics = {r.metric: r for r in rows}
    assert metrics["records"].value == 3
    assert metrics["write edges (all)"].value > 0
    assert metrics["search multi_hop p50"].unit == "ms"
    # One seed (A) plus the bridge (Cypher) or the walk (projection) reaches B: both gold
    # documents in the top 2.
    assert metrics["tfidf+search all gold in top2"].value == 1.0
    assert metrics["tfidf+ppr all gold in top2"].value == 1.0
    assert metrics["projection edges"].value > 0
    assert "search multi_hop p99" in format_table(rows)
    synthetic = {r.metric: r.value for r in rows if r.corpus == "synthetic-2k"}
    assert synthetic["projection nodes"] == 3000
    assert 0 < synthetic["projection memory per edge"] < 200
    assert synthetic["graph stage (phase 1 + expansion) p50"] > 0
    # one query x six traversals, after build and two writes; then the table
    assert "bench graph tiny: 9/9 steps" in log.getvalue()
    assert "search multi_hop p99" in log.getvalue()


def test_missing_corpus_is_a_source_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r"corpus\.jsonl"):
        load_corpus(tmp_path)
