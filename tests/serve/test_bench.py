"""`rayweave bench serve`: percentiles and rows without Ray, the load driver against a real local
HTTP server, and one tiny run against the deployed app."""

from __future__ import annotations

import io
import json
import math
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from tests_support import SAMPLE_CORPUS, with_collection

from rayweave.cluster.errors import InputError, ServiceError, SourceError
from rayweave.cluster.settings import Settings
from rayweave.serve.bench import (
    CellResult,
    drive,
    load_bench_queries,
    percentile,
    render_table,
    run_serve_bench,
    summarize,
)


class TestPercentile:
    @pytest.mark.parametrize("q", [0, 25, 50, 90, 95, 99, 100])
    def test_matches_numpy_linear(self, q: float) -> None:
        values = [5.0, 1.0, 9.0, 3.0, 7.0, 2.0, 8.0]
        assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))

    def test_edges(self) -> None:
        assert math.isnan(percentile([], 50))
        assert percentile([4.0], 99) == 4.0
        with pytest.raises(ValueError, match="percentile"):
            percentile([1.0], 101)


class TestSummarize:
    def test_row_from_cell(self) -> None:
        cell = CellResult(
            latencies_s=tuple(i / 1000 for i in range(1, 101)), errors=2, degraded=3, wall_s=2.0
        )
        row = summarize("dense", 8, cell)
        assert (row.profile, row.concurrency, row.requests, row.errors, row.degraded) == (
            "dense",
            8,
            102,
            2,
            3,
        )
        assert row.p50_ms == pytest.approx(50.5)
        assert row.p99_ms == pytest.approx(99.01)
        assert row.p50_ms <= row.p95_ms <= row.p99_ms
        assert row.qps == pytest.approx(50.0)  # successful requests over wall time

    def test_all_failed_is_json_safe(self) -> None:
        row = summarize("hybrid", 1, CellResult(latencies_s=(), errors=4, degraded=0, wall_s=1.0))
        assert row.qps == 0.0
        data = json.loads(json.dumps(row.to_dict()))
        assert data["p50_ms"] is None
        assert data["errors"] == 4


class TestQueries:
    def test_sample_queries_by_default(self) -> None:
        texts = load_bench_queries()
        assert len(texts) >= 20
        assert "What is a lease in Ferry?" in texts

    def test_beir_folder_by_name_under_data_dir(self, tmp_path: Path) -> None:
        folder = tmp_path / "mini"
        folder.mkdir()
        (folder / "queries.jsonl").write_text(
            '{"_id": "q1", "text": "first"}\n{"_id": "q2", "text": "second"}\n'
        )
        assert load_bench_queries("mini", data_dir=tmp_path) == ["first", "second"]

    def test_missing_source_is_named(self, tmp_path: Path) -> None:
        with pytest.raises(SourceError, match="nope"):
            load_bench_queries(tmp_path / "nope")


class _Handler(BaseHTTPRequestHandler):
    """Answers like the ingress: 200 with `degraded` for odd queries, 500 for 'boom'."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        status = 500 if body["query"] == "boom" else 200
        payload = json.dumps(
            {"results": [], "degraded": ["graph"] if body["query"] == "odd" else []}
        ).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/healthz" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def local_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


class TestDrive:
    def test_every_request_sent_once_and_failures_counted(self, local_server: str) -> None:
        bodies = [{"query": q} for q in ["ok", "odd", "boom", "ok", "odd", "ok", "ok"]]
        answered: list[int] = []
        cell = drive(
            f"{local_server}/v1/search",
            bodies,
            3,
            timeout_s=10,
            on_answer=lambda: answered.append(1),
        )
        assert len(answered) == 7  # the progress tick: every request, failed ones included
        assert len(cell.latencies_s) == 6
        assert cell.errors == 1
        assert cell.degraded == 2
        assert cell.first_error is not None
        assert "500" in cell.first_error
        assert all(t > 0 for t in cell.latencies_s)

    def test_unreachable_server_counts_errors(self) -> None:
        cell = drive("http://127.0.0.1:9/v1/search", [{"query": "x"}] * 2, 2, timeout_s=2)
        assert (cell.errors, len(cell.latencies_s)) == (2, 0)

    def test_bad_concurrency(self) -> None:
        with pytest.raises(InputError, match="concurrency"):
            drive("http://127.0.0.1:9", [], 0)


class TestRunArguments:
    def test_nothing_answers_at_an_explicit_url(self, tmp_path: Path) -> None:
        with pytest.raises(ServiceError, match="nothing answers"):
            run_serve_bench(Settings(home=tmp_path), url="http://127.0.0.1:9", requests=1)

    def test_unknown_profile_names_valid_ones(self, tmp_path: Path) -> None:
        with pytest.raises(InputError, match="hybrid\\+graph"):
            run_serve_bench(Settings(home=tmp_path), profiles=["magic"])

    def test_runs_against_any_ingress_shaped_server(
        self, local_server: str, tmp_path: Path
    ) -> None:
        out = tmp_path / "bench.json"
        log = io.StringIO()
        rows = run_serve_bench(
            Settings(home=tmp_path),
            url=local_server,
            requests=4,
            concurrency=(2, 1),
            profiles=["dense"],
            warmup=1,
            json_path=out,
            console=Console(file=log, width=200),
        )
        assert "bench serve: 9/9 requests" in log.getvalue()  # warm-up 1 + 2 cells x 4
        assert [(r.profile, r.concurrency, r.requests, r.errors) for r in rows] == [
            ("dense", 1, 4, 0),
            ("dense", 2, 4, 0),
        ]
        assert json.loads(out.read_text())["rows"][1]["concurrency"] == 2
        assert render_table(rows).row_count == 2


@pytest.mark.integration
def test_deploys_benches_and_removes_the_app(ray_stack: Settings, graph_connection: object) -> None:
    """Nothing deployed: the bench deploys the app over the ingested sample corpus, loads it,
    and removes it again."""
    from ray import serve

    from rayweave.ingest.pipeline import run_ingest
    from rayweave.serve.app import shutdown

    settings = with_collection(ray_stack, "sample")
    run_ingest(settings, [SAMPLE_CORPUS], collection="sample")
    shutdown(settings)  # another module may have left it deployed
    rows = run_serve_bench(
        settings, requests=3, concurrency=(1, 2), profiles=["dense", "hybrid+graph"], warmup=1
    )
    assert [(r.profile, r.concurrency) for r in rows] == [
        ("dense", 1),
        ("dense", 2),
        ("hybrid+graph", 1),
        ("hybrid+graph", 2),
    ]
    assert all(r.errors == 0 and r.requests == 3 and r.qps > 0 for r in rows)
    assert all(r.p50_ms <= r.p95_ms <= r.p99_ms for r in rows)
    assert settings.serve.app_name not in serve.status().applications
