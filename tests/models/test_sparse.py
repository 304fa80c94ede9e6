"""SPLADE (the packaged SPLADE-tiny, tiny BERT and XLM-R masked LMs) and BM25 term weights."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from rayweave.cluster.types import SparseVector
from rayweave.models.precision import RunOptions, plan_execution
from rayweave.models.protocols import SparseEncoder
from rayweave.models.sparse import (
    Bm25Encoder,
    Bm25Params,
    SpladeEncoder,
    bm25_terms,
    load_splade,
    term_id,
)

from .conftest import SENTENCES, SPLADE


def options(precision: str, backend: str, cache: Path, **kw: int) -> RunOptions:
    plan = plan_execution(device="cpu", precision=precision, cpu_backend=backend)  # type: ignore[arg-type]
    return RunOptions(plan=plan, cache_dir=cache, **kw)


def dot(a: SparseVector, b: SparseVector) -> float:
    bw = dict(zip(b.indices, b.values, strict=True))
    return sum(w * bw.get(i, 0.0) for i, w in zip(a.indices, a.values, strict=True))


def naive_splade(folder: Path, texts: list[str]) -> np.ndarray:
    """The textbook formula over every position of a padded batch: log1p(relu(logits)) * mask,
    max."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForMaskedLM.from_pretrained(folder).eval()
    enc = tok(texts, padding=True, truncation=True, max_length=512, return_tensors="pt")
    with torch.no_grad():
        act = torch.log1p(torch.relu(model(**enc).logits)) * enc["attention_mask"].unsqueeze(-1)
    return act.amax(dim=1).numpy()


@pytest.fixture(scope="module")
def splade(onnx_cache: Path) -> SpladeEncoder:
    return load_splade(SPLADE, options("fp32", "torch", onnx_cache))


class TestSpladeTiny:
    def test_protocol_and_matches_naive_formula(self, splade: SpladeEncoder) -> None:
        from rayweave.models.resolve import resolve_model

        assert isinstance(splade, SparseEncoder)
        texts = SENTENCES[:6]
        ref = naive_splade(resolve_model(SPLADE).path, texts)  # type: ignore[arg-type]
        for vec, row in zip(splade.encode(texts), ref, strict=True):
            dense = np.zeros(splade.vocab_size, dtype=np.float32)
            dense[list(vec.indices)] = vec.values
            np.testing.assert_allclose(dense, row, atol=1e-5)

    def test_expands_terms(self, splade: SpladeEncoder) -> None:
        text = "the cat sat on the mat"
        vec = splade.encode([text])[0]
        input_ids = set(splade.engine.tokenize([text])[0])
        expansions = set(vec.indices) - input_ids
        assert len(expansions) >= 5  # SPLADE adds related vocabulary terms
        assert all(v > 0 for v in vec.values)

    def test_similar_texts_score_higher(self, splade: SpladeEncoder) -> None:
        q = splade.encode(["where does ray serve deploy models"], kind="query")[0]
        docs = splade.encode(
            ["Ray Serve deploys Python models behind HTTP endpoints.", "The cat sat on the mat."]
        )
        assert dot(q, docs[0]) > dot(q, docs[1]) * 2

    @pytest.mark.parametrize(
        ("precision", "backend"), [("fp32", "onnx"), ("int8", "onnx"), ("int8", "torch")]
    )
    def test_runtimes_keep_the_ranking(
        self, splade: SpladeEncoder, onnx_cache: Path, precision: str, backend: str
    ) -> None:
        enc = load_splade(SPLADE, options(precision, backend, onnx_cache))
        ref, got = splade.encode(SENTENCES[:6]), enc.encode(SENTENCES[:6])
        for a, b in zip(ref, got, strict=True):
            top_a = {i for _, i in sorted(zip(a.values, a.indices, strict=True), reverse=True)[:10]}
            top_b = {i for _, i in sorted(zip(b.values, b.indices, strict=True), reverse=True)[:10]}
            assert len(top_a & top_b) >= 7
            cos = dot(a, b) / math.sqrt(dot(a, a) * dot(b, b))
            assert cos > (0.9999 if precision == "fp32" else 0.97)

    def test_logit_budget_bounds_batches(self, splade: SpladeEncoder) -> None:
        # 30522-word vocabulary: a batch holds at most 64M logits, whatever the dense budget.
        assert (
            splade.engine.batch_tokens * splade.vocab_size
            <= 64 * 1024 * 1024 + 512 * splade.vocab_size
        )


@pytest.mark.parametrize("fixture", ["bert_mlm_dir", "xlmr_mlm_dir"])
def test_tiny_masked_lms_match_naive_formula(
    fixture: str, request: pytest.FixtureRequest, onnx_cache: Path
) -> None:
    folder: Path = request.getfixturevalue(fixture)
    texts = [SENTENCES[0], "short", SENTENCES[4] * 2]
    enc = load_splade(
        str(folder), options("fp32", "torch", onnx_cache, batch_tokens=32, max_batch_size=2)
    )
    ref = naive_splade(folder, texts)
    for vec, row in zip(enc.encode(texts), ref, strict=True):
        dense = np.zeros(enc.vocab_size, dtype=np.float32)
        dense[list(vec.indices)] = vec.values
        np.testing.assert_allclose(dense, row, atol=1e-5)
    onnx = load_splade(str(folder), options("int8", "onnx", onnx_cache))
    assert len(onnx.encode(texts)) == 3


class TestBm25:
    def test_terms_split_identifiers(self) -> None:
        assert bm25_terms("Call get_user_name() or parseHTTPResponse") == [
            "call",
            "get_user_name",
            "get",
            "user",
            "name",
            "or",
            "parsehttpresponse",
            "parse",
            "http",
            "response",
        ]

    def test_term_ids_are_stable_u32(self) -> None:
        assert term_id("ray") == term_id("ray")
        assert term_id("ray") != term_id("serve")
        assert 0 <= term_id("ray") < 2**32

    def test_document_weights_follow_bm25(self) -> None:
        enc = Bm25Encoder(Bm25Params(k1=1.2, b=0.75, avg_doc_len=4))
        vec = enc.encode(["ray ray serve models"])[0]
        weights = dict(zip(vec.indices, vec.values, strict=True))
        norm = 1.2 * (1 - 0.75 + 0.75 * 4 / 4)
        assert weights[term_id("ray")] == pytest.approx(2 * 2.2 / (2 + norm))
        assert weights[term_id("serve")] == pytest.approx(1 * 2.2 / (1 + norm))
        assert list(vec.indices) == sorted(vec.indices)

    def test_queries_weigh_each_distinct_term_once(self) -> None:
        vec = Bm25Encoder().encode(["ray ray serve"], kind="query")[0]
        assert sorted(vec.values) == [1.0, 1.0]
        assert isinstance(Bm25Encoder(), SparseEncoder)

    def test_longer_documents_weigh_a_term_less(self) -> None:
        enc = Bm25Encoder()
        short = enc.encode(["ray serve"])[0]
        long = enc.encode(["ray serve " + "filler " * 300])[0]
        rid = term_id("ray")
        assert (
            dict(zip(short.indices, short.values, strict=True))[rid]
            > dict(zip(long.indices, long.values, strict=True))[rid]
        )

    def test_bad_params(self) -> None:
        with pytest.raises(ValueError, match="invalid BM25"):
            Bm25Encoder(Bm25Params(b=2.0))
