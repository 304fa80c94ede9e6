"""BGE-M3 on a tiny random XLM-R with heads in the authors' layout, against a one-text-at-a-time
reference written from FlagEmbedding's `BGEM3ForInference` + `BGEM3FlagModel.encode` rules."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.nn import functional

from rayweave.cluster.errors import ModelError
from rayweave.models.bge_m3 import BgeM3Encoder, build_bge_m3_core, colbert_score, load_bge_m3
from rayweave.models.precision import RunOptions, plan_execution
from rayweave.models.protocols import DenseEncoder, MultiVectorEncoder, SparseEncoder

TEXTS = [
    "Ray Serve deploys Python models.",
    "Qdrant stores dense and sparse vectors for hybrid search and more.",
    "cat",
    "Tokenizers split text into subword units before the encoder runs; the cat sat on the mat.",
]


def options(precision: str, backend: str, cache: Path, **kw: int) -> RunOptions:
    plan = plan_execution(device="cpu", precision=precision, cpu_backend=backend)  # type: ignore[arg-type]
    return RunOptions(plan=plan, cache_dir=cache, **kw)


def reference(folder: Path, text: str) -> tuple[np.ndarray, dict[int, float], np.ndarray]:
    core, tokenizer = build_bge_m3_core(folder)
    enc = tokenizer([text], return_tensors="pt")
    with torch.no_grad():
        hidden = core.encoder(**enc).last_hidden_state
        dense = functional.normalize(hidden[:, 0], dim=-1)[0].numpy()
        weights = torch.relu(core.sparse_linear(hidden)).squeeze(-1)[0].numpy()
        colbert = functional.normalize(core.colbert_linear(hidden[:, 1:]), dim=-1)[0].numpy()
    unused = {
        tokenizer.cls_token_id,
        tokenizer.eos_token_id,
        tokenizer.pad_token_id,
        tokenizer.unk_token_id,
    }
    lexical: dict[int, float] = {}
    for w, idx in zip(weights, enc["input_ids"][0].tolist(), strict=True):
        if idx not in unused and w > 0 and w > lexical.get(idx, 0):
            lexical[idx] = float(w)
    return dense, lexical, colbert


@pytest.fixture(scope="module")
def fp32(bge_m3_dir: Path, onnx_cache: Path) -> BgeM3Encoder:
    # A small token budget forces several padded batches of mixed lengths.
    return load_bge_m3(
        str(bge_m3_dir), options("fp32", "torch", onnx_cache, batch_tokens=40, max_batch_size=2)
    )


class TestBgeM3:
    def test_protocols(self, fp32: BgeM3Encoder) -> None:
        assert isinstance(fp32, DenseEncoder)
        assert isinstance(fp32, MultiVectorEncoder)
        assert isinstance(fp32.sparse, SparseEncoder)
        assert fp32.dim == 32

    def test_matches_reference_batched_and_padded(
        self, fp32: BgeM3Encoder, bge_m3_dir: Path
    ) -> None:
        out = fp32.encode_all(TEXTS)
        for i, text in enumerate(TEXTS):
            dense, lexical, colbert = reference(bge_m3_dir, text)
            np.testing.assert_allclose(out.dense[i], dense, atol=1e-5)
            got = dict(zip(out.sparse[i].indices, out.sparse[i].values, strict=True))
            assert got.keys() == lexical.keys()
            np.testing.assert_allclose([got[k] for k in lexical], list(lexical.values()), atol=1e-5)
            # n_tokens - 1 rows: everything after CLS, EOS included.
            assert out.colbert[i].shape == colbert.shape
            np.testing.assert_allclose(out.colbert[i], colbert, atol=1e-5)
        assert len(out.sparse[0].indices) > 0
        assert list(out.sparse[0].indices) == sorted(out.sparse[0].indices)

    def test_views_share_one_forward(self, fp32: BgeM3Encoder) -> None:
        out = fp32.encode_all(TEXTS)
        np.testing.assert_allclose(fp32.encode(TEXTS), out.dense, atol=1e-6)
        assert fp32.sparse.encode(TEXTS) == out.sparse
        for a, b in zip(fp32.encode_multi(TEXTS), out.colbert, strict=True):
            np.testing.assert_allclose(a, b, atol=1e-6)
        assert np.allclose(np.linalg.norm(out.dense, axis=1), 1.0, atol=1e-5)

    def test_special_tokens_never_get_weights(self, fp32: BgeM3Encoder) -> None:
        for vec in fp32.sparse.encode(TEXTS):
            assert not set(vec.indices) & set(fp32.skip_ids)
            assert all(v > 0 for v in vec.values)

    def test_maxsim(self, fp32: BgeM3Encoder) -> None:
        scores = fp32.maxsim(TEXTS[0], [TEXTS[0], TEXTS[1]])
        assert scores[0] == pytest.approx(1.0, abs=1e-5)
        assert scores[1] < scores[0]
        q = fp32.encode_multi([TEXTS[0]])[0]
        assert colbert_score(q, q) == pytest.approx(1.0, abs=1e-5)
        assert colbert_score(q, np.zeros((0, 32), np.float32)) == 0.0

    def test_empty_input(self, fp32: BgeM3Encoder) -> None:
        out = fp32.encode_all([])
        assert out.dense.shape == (0, 32)
        assert out.sparse == []
        assert out.colbert == []

    @pytest.mark.parametrize(
        ("precision", "backend", "min_cos"),
        [
            ("fp32", "onnx", 0.9999),
            ("int8", "onnx", 0.98),
            ("int8", "torch", 0.98),
            ("bf16", "torch", 0.99),
        ],
    )
    def test_other_runtimes_agree(
        self,
        fp32: BgeM3Encoder,
        bge_m3_dir: Path,
        onnx_cache: Path,
        precision: str,
        backend: str,
        min_cos: float,
    ) -> None:
        enc = load_bge_m3(str(bge_m3_dir), options(precision, backend, onnx_cache))
        ref, got = fp32.encode_all(TEXTS), enc.encode_all(TEXTS)
        assert (ref.dense * got.dense).sum(axis=1).min() > min_cos
        for a, b in zip(ref.colbert, got.colbert, strict=True):
            assert a.shape == b.shape
        for a, b in zip(ref.sparse, got.sparse, strict=True):
            overlap = len(set(a.indices) & set(b.indices)) / max(len(a.indices), 1)
            assert overlap > 0.8

    def test_missing_head_is_named(
        self, bge_m3_dir: Path, tmp_path: Path, onnx_cache: Path
    ) -> None:
        broken = tmp_path / "bge"
        shutil.copytree(bge_m3_dir, broken)
        (broken / "colbert_linear.pt").unlink()
        with pytest.raises(ModelError, match=r"colbert_linear\.pt"):
            load_bge_m3(str(broken), options("fp32", "torch", onnx_cache))

    def test_wrong_head_shape_is_named(
        self, bge_m3_dir: Path, tmp_path: Path, onnx_cache: Path
    ) -> None:
        broken = tmp_path / "bge"
        shutil.copytree(bge_m3_dir, broken)
        torch.save(torch.nn.Linear(7, 1).state_dict(), broken / "sparse_linear.pt")
        with pytest.raises(ModelError, match=r"sparse_linear\.pt takes 7 inputs"):
            load_bge_m3(str(broken), options("fp32", "torch", onnx_cache))

    def test_truncates_to_max_tokens(self, bge_m3_dir: Path, onnx_cache: Path) -> None:
        enc = load_bge_m3(
            str(bge_m3_dir), dataclasses.replace(options("fp32", "torch", onnx_cache), max_tokens=8)
        )
        long = " ".join(TEXTS * 3)
        assert enc.count_tokens([long])[0] > 8
        assert enc.encode_multi([long])[0].shape[0] == 7  # 8 tokens minus CLS
        assert enc.max_tokens == 6


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")
def test_cuda_fp16_matches_fp32(fp32: BgeM3Encoder, bge_m3_dir: Path, onnx_cache: Path) -> None:
    plan = plan_execution(device="cuda", precision="fp16")
    enc = load_bge_m3(str(bge_m3_dir), RunOptions(plan=plan, cache_dir=onnx_cache))
    assert enc.engine.pad_to_multiple_of == 8
    ref, got = fp32.encode_all(TEXTS), enc.encode_all(TEXTS)
    assert (ref.dense * got.dense).sum(axis=1).min() > 0.999
    for a, b in zip(ref.colbert, got.colbert, strict=True):
        assert a.shape == b.shape
        assert np.isfinite(b).all()
