"""The models bench end to end on a tiny BEIR set with tiny models (rows, ratios, table), and its
scoring helpers against hand-checkable cases."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console

from rayweave.bench.evaluation.beir import BeirDataset, load_beir
from rayweave.bench.model_gpu import bge_m3_config, bge_m3_throughput_rows, write_random_bge_m3
from rayweave.bench.model_measure import ModelRow, add_ratios, speed_sample
from rayweave.bench.model_quality import dense_ndcg, sparse_ndcg, subset
from rayweave.bench.models import run_models_bench
from rayweave.cluster.beir import BeirDocument
from rayweave.cluster.settings import Settings
from rayweave.cluster.types import SparseVector

DOCS = {
    "d1": ("Ray", "Ray Serve deploys Python models behind HTTP endpoints."),
    "d2": ("Qdrant", "Qdrant stores dense and sparse vectors for hybrid search."),
    "d3": ("Cats", "The cat sat on the mat while the dog slept."),
    "d4": ("Kubernetes", "Kubernetes schedules containers across a cluster of machines."),
}
QUERIES = {
    "q1": "deploy models over http",
    "q2": "vector database hybrid search",
    "q3": "where did the cat sit",
}
QRELS = {"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d3": 1}}


def dataset() -> BeirDataset:
    return BeirDataset(
        name="tiny",
        corpus={k: BeirDocument(id=k, title=t, text=x) for k, (t, x) in DOCS.items()},
        queries=dict(QUERIES),
        qrels={q: dict(r) for q, r in QRELS.items()},
    )


@pytest.fixture
def beir_dir(tmp_path: Path) -> Path:
    root = tmp_path / "tiny-dev"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": k, "title": t, "text": x}) + "\n" for k, (t, x) in DOCS.items())
    )
    (root / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in QUERIES.items())
    )
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n"
        + "".join(f"{q}\t{d}\t1\n" for q, r in QRELS.items() for d in r)
    )
    return root


class TestScoring:
    def test_dense_and_sparse_ndcg(self) -> None:
        ds = dataset()
        eye = np.eye(4, dtype=np.float32)
        assert dense_ndcg(ds, eye, eye[:3]) == pytest.approx(1.0)
        assert dense_ndcg(ds, eye, eye[[3, 3, 3]], k=1) == pytest.approx(0.0)
        assert 0 < dense_ndcg(ds, eye, eye[[3, 3, 3]]) < 1
        docs = [SparseVector(indices=(i,), values=(1.0,)) for i in range(4)]
        queries = [SparseVector(indices=(i, 99), values=(1.0, 5.0)) for i in range(3)]
        assert sparse_ndcg(ds, docs, queries) == pytest.approx(1.0)
        assert sparse_ndcg(ds, docs, queries, idf=True) == pytest.approx(1.0)

    def test_idf_rewards_rare_terms(self) -> None:
        ds = dataset()
        # Term 7 is in every document (idf ~ 0), term 1 only in d1; q1 weighs them equally.
        docs = [
            SparseVector(indices=(1, 7), values=(1.0, 1.0)),
            SparseVector(indices=(7,), values=(3.0,)),
            SparseVector(indices=(7,), values=(3.0,)),
            SparseVector(indices=(7,), values=(3.0,)),
        ]
        queries = [SparseVector(indices=(1, 7), values=(1.0, 1.0))] * 3
        plain = sparse_ndcg(dataset(), docs, queries)
        weighted = sparse_ndcg(ds, docs, queries, idf=True)
        assert weighted > plain

    def test_subset_keeps_whole_queries(self, beir_dir: Path) -> None:
        ds = load_beir(beir_dir)
        small = subset(ds, 3)
        assert len(small.corpus) <= 3
        for qid, rel in small.qrels.items():
            assert set(rel) <= set(small.corpus)
            assert qid in small.queries
        assert subset(ds, None) is ds

    def test_speed_sample_is_fixed(self) -> None:
        texts = [str(i) for i in range(100)]
        assert speed_sample(texts, 10) == speed_sample(texts, 10)
        assert len(speed_sample(texts, 10)) == 10
        assert speed_sample(texts[:5], 10) == texts[:5]

    def test_ratios(self) -> None:
        def row(section: str, variant: str, seconds: float, **kw: Any) -> ModelRow:
            return ModelRow(
                section=section,
                dataset="d",
                model="m",
                variant=variant,
                texts=10,
                tokens=100,
                seconds=seconds,
                **kw,
            )

        rows = [
            row("s", "a", 2.0, ndcg10=0.5, baseline=True),
            row("s", "b", 1.0, ndcg10=0.49),
            row("t", "c", 1.0),
        ]
        out = add_ratios(rows)
        assert out[0].speedup == pytest.approx(1.0)
        assert out[1].speedup == pytest.approx(2.0)
        assert out[1].ndcg_change == pytest.approx(-0.02)
        assert out[2].speedup is None


def test_run_models_bench_end_to_end(
    beir_dir: Path, tiny_st_dir: Path, bert_mlm_dir: Path, onnx_cache: Path
) -> None:
    settings = Settings(
        models={"dense": str(tiny_st_dir), "sparse": str(bert_mlm_dir), "cache_dir": onnx_cache}
    )
    buf = io.StringIO()
    rows = run_models_bench(
        settings,
        data_dir=beir_dir.parent,
        datasets=[beir_dir.name],
        console=Console(file=buf, width=200),
        rounds=1,
        sample_size=4,
    )
    text = buf.getvalue()
    dense = [r for r in rows if r.section == "dense"]
    sparse = [r for r in rows if r.section == "sparse"]
    assert len(dense) == 6  # plain baseline + five CPU variants
    assert len(sparse) == 6
    assert [r.section for r in rows].count("bm25") == 1
    for block in (dense, sparse):
        base = [r for r in block if r.baseline]
        assert len(base) == 1
        assert base[0].speedup == pytest.approx(1.0)
        assert base[0].ndcg_change == pytest.approx(0.0)
        assert all(r.speedup is not None and r.speedup > 0 for r in block)
        assert all(r.ndcg10 is not None and 0.0 <= r.ndcg10 <= 1.0 for r in block)
        # fp32 variants reproduce the baseline's ranking exactly.
        fp32 = next(r for r in block if r.variant == "rayweave cpu fp32 torch")
        assert fp32.ndcg10 == pytest.approx(base[0].ndcg10)
    assert "rayweave bench models" in text
    # each measured block shows its passes: bm25 = quality + warm-up + one timed round
    assert f"bench models bm25 {beir_dir.name}: 3/3 passes" in text
    assert "SentenceTransformer.encode fp32 (base)" in text
    import torch

    if not torch.cuda.is_available():
        assert "no CUDA GPU" in text


def small_throughput_rows(
    tokenizer_dir: Path, settings: Settings, *, device: str, copies: int, say: Callable[[str], None]
) -> list[ModelRow]:
    """The gpu block's rows for the tiny BGE-M3 stand-in over `copies` of the test documents."""
    from transformers import AutoTokenizer

    return bge_m3_throughput_rows(
        [t for _, t in DOCS.values()] * copies,
        AutoTokenizer.from_pretrained(tokenizer_dir),
        device=device,
        dataset="tiny",
        config=bge_m3_config(small=True),
        settings=settings,
        rounds=1,
        say=say,
    )


def test_bge_m3_throughput_rows_on_cpu(bert_tokenizer_dir: Path, onnx_cache: Path) -> None:
    settings = Settings(models={"cache_dir": onnx_cache, "device": "cpu"})
    lines: list[str] = []
    rows = small_throughput_rows(
        bert_tokenizer_dir, settings, device="cpu", copies=3, say=lines.append
    )
    assert [r.variant for r in rows] == [
        "plain torch fp32",
        "plain torch fp32",
        "rayweave fp32 dense",
        "rayweave fp32 dense+sparse+colbert",
    ]
    assert rows[0].baseline
    assert all(r.tokens > 0 and r.seconds > 0 for r in rows)
    assert len(lines) == 4
    big = bge_m3_config()
    assert (big.hidden_size, big.num_hidden_layers, big.vocab_size) == (1024, 24, 250002)


def test_random_bge_m3_loads_as_the_dense_model(
    bert_tokenizer_dir: Path, onnx_cache: Path, tmp_path: Path
) -> None:
    from rayweave.models.factory import build_dense_encoder

    folder = write_random_bge_m3(tmp_path / "bge", bert_tokenizer_dir, small=True)
    models = Settings(
        models={
            "dense": str(folder),
            "dense_kind": "bge-m3",
            "precision": "fp32",
            "device": "cpu",
            "cache_dir": onnx_cache,
        }
    ).models
    vectors = build_dense_encoder(models).encode(["a passage", "another passage"])
    assert vectors.shape == (2, bge_m3_config(small=True).hidden_size)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)


def test_fastembed_runs_the_same_int8_graph(
    onnx_cache: Path, tmp_path: Path, tiny_st_dir: Path
) -> None:
    from rayweave.bench.model_encoders import fastembed_variant
    from rayweave.models.dense import load_sentence_transformer
    from rayweave.models.precision import RunOptions
    from tests.models.conftest import MINILM, SENTENCES

    settings = Settings(models={"cache_dir": onnx_cache})
    variant = fastembed_variant(settings, max_length=256, workdir=tmp_path)
    assert variant is not None
    ours = load_sentence_transformer(MINILM, RunOptions.from_settings(settings.models))
    texts = [*SENTENCES[:5], "a " * 400]
    # One text per call: ours encodes int8 one text per forward, and fastembed's batch would
    # take one activation range over every row and its padding.
    theirs = np.concatenate([variant.docs([t]) for t in texts])
    cos = (theirs * ours.encode(texts)).sum(axis=1)
    assert cos.min() > 0.9999  # same graph, same truncation (256, not the stale 128)
    prompted = Settings(models={"dense": str(tiny_st_dir), "cache_dir": onnx_cache})
    assert fastembed_variant(prompted, max_length=64, workdir=tmp_path) is None


def test_vector_quantization_rows() -> None:
    from rayweave.bench.model_quality import vector_quantization_rows

    eye = np.eye(4, dtype=np.float32) - 0.2  # distinct sign patterns per document
    eye /= np.linalg.norm(eye, axis=1, keepdims=True)
    rows = vector_quantization_rows(dataset(), eye, eye[:3], model="m", say=lambda _: None)
    assert rows[0].variant == "float32 vectors"
    assert rows[0].baseline
    assert all(r.ndcg10 == pytest.approx(1.0) for r in rows)
    out = add_ratios(rows)
    assert all(r.speedup is None for r in out)
    assert all(r.ndcg_change == pytest.approx(0.0) for r in out)


@pytest.mark.gpu
@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs an NVIDIA GPU")
def test_bge_m3_throughput_rows_on_cuda(bert_tokenizer_dir: Path, onnx_cache: Path) -> None:
    settings = Settings(models={"cache_dir": onnx_cache})
    rows = small_throughput_rows(
        bert_tokenizer_dir, settings, device="cuda", copies=8, say=lambda _: None
    )
    assert [r.variant for r in rows] == [
        "plain torch fp32",
        "plain torch fp16",
        "rayweave fp16 dense",
        "rayweave fp16 dense+sparse+colbert",
    ]
    assert all(r.tokens_per_s > 0 for r in rows)
