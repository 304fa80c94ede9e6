"""Dense encoders: the packaged all-MiniLM-L6-v2 for quality and agreement with plain
sentence-transformers, a tiny prompt-bearing checkpoint for the loader's edge cases."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rayweave.cluster.errors import ModelError
from rayweave.models.dense import TransformerDenseEncoder, load_sentence_transformer
from rayweave.models.precision import RunOptions, plan_execution
from rayweave.models.protocols import DenseEncoder, TokenCounter

from .conftest import MINILM, SENTENCES

PAIRS = [
    (
        "How do I deploy a model with Ray Serve?",
        "Ray Serve deploys Python models behind HTTP endpoints.",
    ),
    (
        "What stores vectors for hybrid search?",
        "Qdrant stores dense and sparse vectors for hybrid search.",
    ),
    ("Where did the cat sit?", "The cat sat on the mat while the dog slept."),
]


def options(precision: str, backend: str, cache: Path, **kw: int) -> RunOptions:
    plan = plan_execution(device="cpu", precision=precision, cpu_backend=backend)  # type: ignore[arg-type]
    return RunOptions(plan=plan, cache_dir=cache, **kw)


@pytest.fixture(scope="module")
def minilm_fp32(onnx_cache: Path) -> TransformerDenseEncoder:
    return load_sentence_transformer(MINILM, options("fp32", "torch", onnx_cache))


@pytest.fixture(scope="module")
def plain_minilm() -> object:
    from sentence_transformers import SentenceTransformer

    from rayweave.models.resolve import resolve_model_path

    return SentenceTransformer(resolve_model_path(MINILM), device="cpu")


class TestMiniLM:
    def test_protocol_and_shape(self, minilm_fp32: TransformerDenseEncoder) -> None:
        assert isinstance(minilm_fp32, DenseEncoder)
        assert isinstance(minilm_fp32, TokenCounter)
        vecs = minilm_fp32.encode(["hello", "world"])
        assert vecs.shape == (2, 384)
        assert vecs.dtype == np.float32
        assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
        assert minilm_fp32.encode([]).shape == (0, 384)

    def test_matches_sentence_transformers(
        self, minilm_fp32: TransformerDenseEncoder, plain_minilm: object
    ) -> None:
        texts = [*SENTENCES[:6], "x " * 400, ""]
        ours = minilm_fp32.encode(texts)
        theirs = plain_minilm.encode(texts, normalize_embeddings=True)  # type: ignore[attr-defined]
        np.testing.assert_allclose(ours, theirs, atol=2e-5)

    def test_similar_texts_score_higher(self, minilm_fp32: TransformerDenseEncoder) -> None:
        queries = minilm_fp32.encode([q for q, _ in PAIRS], kind="query")
        docs = minilm_fp32.encode([d for _, d in PAIRS])
        sims = queries @ docs.T
        assert (np.argmax(sims, axis=1) == np.arange(len(PAIRS))).all()
        assert sims.diagonal().min() > np.max(sims - np.eye(len(PAIRS)) * 10) + 0.1

    def test_token_counts_and_limits(self, minilm_fp32: TransformerDenseEncoder) -> None:
        assert minilm_fp32.count_tokens(["hello world", ""]) == [2, 0]
        assert minilm_fp32.count_tokens(["word " * 1000])[0] == 1000  # no truncation when counting
        assert minilm_fp32.max_tokens == 254  # max_seq_length 256 minus [CLS] and [SEP]

    def test_rejects_a_bare_string_and_unknown_kind(
        self, minilm_fp32: TransformerDenseEncoder
    ) -> None:
        with pytest.raises(TypeError, match="one string"):
            minilm_fp32.encode("hello")
        with pytest.raises(ValueError, match="unknown text kind"):
            minilm_fp32.encode(["hello"], kind="passage")  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        ("precision", "backend", "min_cos"),
        [
            ("fp32", "onnx", 0.99999),
            ("int8", "onnx", 0.95),
            ("int8", "torch", 0.9),
            ("bf16", "torch", 0.99),
        ],
    )
    def test_runtimes_agree_with_fp32(
        self,
        minilm_fp32: TransformerDenseEncoder,
        onnx_cache: Path,
        precision: str,
        backend: str,
        min_cos: float,
    ) -> None:
        enc = load_sentence_transformer(MINILM, options(precision, backend, onnx_cache))
        ref, got = minilm_fp32.encode(SENTENCES[:6]), enc.encode(SENTENCES[:6])
        assert (ref * got).sum(axis=1).min() > min_cos
        sims = enc.encode([q for q, _ in PAIRS], kind="query") @ enc.encode([d for _, d in PAIRS]).T
        assert (np.argmax(sims, axis=1) == np.arange(len(PAIRS))).all()

    @pytest.mark.parametrize("backend", ["onnx", "torch"])
    def test_int8_on_cpu_encodes_a_text_the_same_whatever_shares_its_batch(
        self, onnx_cache: Path, backend: str
    ) -> None:
        # Dynamic int8 quantizes activations with one range per forward: batched with other
        # (and padded) texts, a vector moved (cosine down to 0.984 on cosqa-dev).
        enc = load_sentence_transformer(MINILM, options("int8", backend, onnx_cache))
        texts = [s * (i % 4 + 1) for i, s in enumerate(SENTENCES[:8])]
        alone = np.concatenate([enc.encode([t]) for t in texts])
        np.testing.assert_array_equal(enc.encode(texts), alone)
        np.testing.assert_array_equal(enc.encode(texts[::-1])[::-1], alone)

    def test_onnx_export_is_cached(self, onnx_cache: Path) -> None:
        load_sentence_transformer(MINILM, options("int8", "onnx", onnx_cache))
        before = {p: p.stat().st_mtime_ns for p in onnx_cache.glob("*/model.onnx")}
        load_sentence_transformer(MINILM, options("int8", "onnx", onnx_cache))
        after = {p: p.stat().st_mtime_ns for p in onnx_cache.glob("*/model.onnx")}
        assert before == after
        assert not list(onnx_cache.glob(".*"))  # no temporary export folders left behind


class TestTinyCheckpoint:
    def test_prompts_and_normalisation(self, tiny_st_dir: Path, onnx_cache: Path) -> None:
        enc = load_sentence_transformer(str(tiny_st_dir), options("fp32", "torch", onnx_cache))
        assert enc.prompts == {"query": "query: ", "document": "passage: "}
        q = enc.encode(["ray serve"], kind="query")
        d = enc.encode(["ray serve"], kind="document")
        assert not np.allclose(q, d)  # different prompts, different vectors
        assert np.allclose(
            np.linalg.norm(q, axis=1), 1.0, atol=1e-5
        )  # no Normalize module: we normalise
        # 64-token max_seq_length, 2 special tokens, 3 prompt tokens ("passage", ":", " ").
        assert enc.max_tokens == 64 - 2 - enc.count_tokens(["passage: "])[0]

    def test_batching_does_not_change_results(self, tiny_st_dir: Path, onnx_cache: Path) -> None:
        texts = [s * (i % 4 + 1) for i, s in enumerate(SENTENCES[:12])]
        small = load_sentence_transformer(
            str(tiny_st_dir),
            options("fp32", "torch", onnx_cache, batch_tokens=64, max_batch_size=2),
        )
        big = load_sentence_transformer(str(tiny_st_dir), options("fp32", "torch", onnx_cache))
        np.testing.assert_allclose(small.encode(texts), big.encode(texts), atol=1e-5)

    def test_missing_model_is_a_model_error(self, tmp_path: Path, onnx_cache: Path) -> None:
        with pytest.raises(ModelError, match="cannot load sentence-transformers model"):
            load_sentence_transformer(str(tmp_path), options("fp32", "torch", onnx_cache))
        with pytest.raises(ModelError):
            load_sentence_transformer(
                "no-such-org/no-such-model", options("fp32", "torch", onnx_cache)
            )


def test_concurrent_threads_share_one_encoder(tiny_st_dir: Path, onnx_cache: Path) -> None:
    """Serve replicas encode from a thread pool; the shared Rust tokenizer must not be raced."""
    from concurrent.futures import ThreadPoolExecutor

    enc = load_sentence_transformer(str(tiny_st_dir), options("fp32", "onnx", onnx_cache))
    texts = [s * (1 + i % 5) for i, s in enumerate(SENTENCES[:40])]
    expected = enc.encode(texts)

    def work(i: int) -> np.ndarray:
        enc.count_tokens(texts[i:])
        return enc.encode(texts)

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(work, range(24)))
    for got in results:
        np.testing.assert_allclose(got, expected, atol=1e-5)
