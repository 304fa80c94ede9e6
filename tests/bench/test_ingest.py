from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests_support import BEIR_FIXTURES

from rayweave.bench.chunking import run_chunking_bench
from rayweave.bench.ingest import (
    IngestBenchRow,
    RssSampler,
    RunFigures,
    bare_baseline,
    render_ingest_table,
    run_ingest_bench,
)
from rayweave.bench.inputs import write_subset
from rayweave.bench.table import format_table
from rayweave.cluster.errors import InputError, SourceError
from rayweave.cluster.settings import Settings


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


# -- `rayweave bench ingest`: pipeline vs bare baseline ------------------------------------------

HOTPOT = BEIR_FIXTURES / "hotpotqa-dev"


def _corpus(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text(
        "".join(
            json.dumps({"_id": f"d{i}", "title": f"Doc {i}", "text": f"Body of document {i}. " * 5})
            + "\n"
            for i in range(n)
        )
        + "\n"
    )
    return path


class TestWriteSubset:
    def test_first_records_only(self, tmp_path: Path) -> None:
        out = tmp_path / "sub"
        assert write_subset(_corpus(tmp_path, 10), out, 4) == 4
        ids = [json.loads(line)["_id"] for line in (out / "corpus.jsonl").read_text().splitlines()]
        assert ids == ["d0", "d1", "d2", "d3"]
        assert write_subset(_corpus(tmp_path, 3), tmp_path / "all", None) == 3

    def test_bad_inputs(self, tmp_path: Path) -> None:
        with pytest.raises(SourceError, match="nope"):
            write_subset(tmp_path / "nope.jsonl", tmp_path / "o", 1)
        with pytest.raises(InputError, match="limit"):
            write_subset(_corpus(tmp_path, 2), tmp_path / "o", 0)


class TestRssSampler:
    def test_follows_processes_that_come_and_go(self) -> None:
        child = subprocess.Popen(
            [sys.executable, "-c", "b = bytearray(80 << 20); import time; time.sleep(30)"]
        )
        try:
            pids = [os.getpid()]
            with RssSampler(lambda: pids, interval_s=0.05) as rss:
                alone = rss.sample()
                pids.append(child.pid)
                import time

                deadline = time.monotonic() + 20
                while rss.sample() < alone + (60 << 20) and time.monotonic() < deadline:
                    time.sleep(0.1)
            assert rss.peak_bytes >= alone + (60 << 20)
            assert rss.samples >= 3
        finally:
            child.kill()
            child.wait()

    def test_dead_pids_are_skipped(self) -> None:
        with RssSampler(lambda: [2**22 + 12345], interval_s=0.05) as rss:
            pass
        assert rss.peak_bytes == 0


class TestRows:
    def test_ratios_and_table(self) -> None:
        row = IngestBenchRow(
            corpus="c",
            pipeline=RunFigures(documents=100, chunks=300, seconds=20.0, peak_rss_mb=3000.0),
            baseline=RunFigures(
                documents=100, chunks=300, seconds=10.0, peak_rss_mb=600.0, setup_s=2.0
            ),
            driver_peak_rss_mb=400.0,
            load_avg=1.0,
        )
        assert row.pipeline.docs_per_s == 5.0
        assert row.baseline.chunks_per_s == 30.0
        assert row.throughput_ratio == 0.5
        assert row.memory_ratio == 5.0
        assert json.loads(json.dumps(row.to_dict()))["throughput_ratio"] == 0.5
        assert render_ingest_table([row]).row_count == 3
        assert math.isnan(row.encoder_ratio)  # measured on CUDA only
        on_gpu = IngestBenchRow(
            corpus="c",
            pipeline=row.pipeline,
            baseline=RunFigures(
                documents=100, chunks=300, seconds=10.0, peak_rss_mb=600.0, encoder_s=2.0
            ),
            driver_peak_rss_mb=400.0,
            load_avg=1.0,
        )
        assert on_gpu.encoder_ratio == pytest.approx(0.1)
        assert render_ingest_table([on_gpu]).row_count == 4
        empty = RunFigures(documents=0, chunks=0, seconds=0.0, peak_rss_mb=0.0)
        assert math.isnan(
            IngestBenchRow(
                corpus="c", pipeline=empty, baseline=empty, driver_peak_rss_mb=0, load_avg=0
            ).throughput_ratio
        )


def test_bare_baseline_chunks_and_encodes(tmp_path: Path) -> None:
    figures = bare_baseline(_corpus(tmp_path, 6), Settings(home=tmp_path))
    assert figures.documents == 6
    assert figures.chunks >= 6  # at least one summary chunk per document
    assert figures.seconds > 0
    assert figures.setup_s > 0
    assert figures.encoder_s is None  # the encoder-alone ceiling is a CUDA figure


@pytest.mark.gpu
@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs an NVIDIA GPU")
def test_bare_baseline_on_cuda_times_the_encoder_alone(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, models={"device": "cuda", "precision": "fp16"})
    figures = bare_baseline(_corpus(tmp_path, 6), settings)
    assert figures.chunks >= 6
    assert figures.encoder_s is not None
    assert figures.encoder_s > 0


@pytest.mark.integration
def test_pipeline_vs_baseline_on_a_tiny_subset(
    ray_stack: Settings, graph_connection: object, tmp_path: Path
) -> None:
    out = tmp_path / "ingest.json"
    (row,) = run_ingest_bench(ray_stack, data_dir=HOTPOT.parent, limit=8, json_path=out)
    assert row.pipeline.documents == row.baseline.documents == 8
    assert row.pipeline.chunks == row.baseline.chunks
    assert row.pipeline.peak_rss_mb > row.driver_peak_rss_mb > 0
    assert 0 < row.pipeline.start_rss_mb <= row.pipeline.peak_rss_mb
    assert row.baseline.peak_rss_mb > 50
    assert row.throughput_ratio > 0
    assert 0 < row.pipeline.link_s < row.pipeline.seconds
    assert "Operator" in row.stage_stats  # Ray Data's per-stage figures of this run
    assert json.loads(out.read_text())[0]["corpus"] == "hotpotqa-dev"
