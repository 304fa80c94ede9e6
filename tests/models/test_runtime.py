"""Runners, ONNX export caching, the shared text engine and sparse post-processing."""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest
import torch

from rayweave.cluster.errors import ModelError
from rayweave.models.engine import TextEngine
from rayweave.models.features import example_features
from rayweave.models.postprocess import l2_normalize, row_to_sparse, token_weights_to_sparse
from rayweave.models.precision import RunOptions, plan_execution
from rayweave.models.runtime import (
    OrtRunner,
    Runner,
    TorchRunner,
    build_runner,
    export_onnx,
    fingerprint,
)


class MeanCore(torch.nn.Module):
    """Embedding + linear + masked mean: enough of a transformer shape to export and batch."""

    def __init__(self, vocab: int = 30522, dim: int = 8) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, dim)
        self.proj = torch.nn.Linear(dim, dim)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        h = self.proj(self.emb(input_ids)) * attention_mask.unsqueeze(-1)
        return h.sum(1) / attention_mask.sum(1, keepdim=True)


def example() -> dict[str, torch.Tensor]:
    return {
        "input_ids": torch.tensor([[101, 7, 102, 0], [101, 8, 9, 102]]),
        "attention_mask": torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]]),
    }


class TestExport:
    def test_cached_by_content(self, tmp_path: Path) -> None:
        torch.manual_seed(0)
        core = MeanCore()
        kw = {
            "example": example(),
            "output_names": ["out"],
            "output_axes": {"out": {0: "batch"}},
            "cache_dir": tmp_path,
            "int8": False,
        }
        first = export_onnx(core, **kw)
        assert first == export_onnx(core, **kw)  # cache hit
        with torch.no_grad():
            core.proj.weight.add_(1.0)
        assert export_onnx(core, **kw) != first  # new weights, new graph
        assert len(list(tmp_path.glob("*/model.onnx"))) == 2
        assert not list(tmp_path.glob(".*"))

    def test_fingerprint(self) -> None:
        torch.manual_seed(0)
        a, b = MeanCore(), MeanCore()
        assert fingerprint(a, "x") == fingerprint(a, "x")
        assert fingerprint(a, "x") != fingerprint(a, "y")
        assert fingerprint(a) != fingerprint(b)

    @pytest.mark.parametrize(
        ("precision", "backend"),
        [("fp32", "onnx"), ("int8", "onnx"), ("int8", "torch"), ("bf16", "torch")],
    )
    def test_runners_agree_with_torch(self, tmp_path: Path, precision: str, backend: str) -> None:
        torch.manual_seed(1)
        core = MeanCore()
        feeds = {k: v.numpy() for k, v in example().items()}
        with torch.no_grad():
            ref = core(**example()).numpy()
        plan = plan_execution(device="cpu", precision=precision, cpu_backend=backend)  # type: ignore[arg-type]
        runner = build_runner(
            core,
            options=RunOptions(plan=plan, cache_dir=tmp_path),
            example=example(),
            output_names=["out"],
            output_axes={"out": {0: "batch"}},
        )
        assert isinstance(runner, Runner)
        assert isinstance(runner, OrtRunner if backend == "onnx" else TorchRunner)
        (out,) = runner(feeds)
        assert out.dtype == np.float32
        np.testing.assert_allclose(out, ref, atol=1e-5 if precision == "fp32" else 0.05)
        # Other batch sizes and lengths than the traced example.
        wide = {
            "input_ids": np.full((3, 9), 5, dtype=np.int64),
            "attention_mask": np.ones((3, 9), dtype=np.int64),
        }
        assert runner(wide)[0].shape == (3, 8)


def test_int8_quantizes_matmuls_and_keeps_attention_fp32(tmp_path: Path, tiny_st_dir: Path) -> None:
    """QAttention would take the QKV projection to 7-bit weights; embeddings save no arithmetic."""
    import onnx

    from rayweave.models.dense import load_sentence_transformer

    plan = plan_execution(device="cpu", precision="int8", cpu_backend="onnx")
    load_sentence_transformer(str(tiny_st_dir), RunOptions(plan=plan, cache_dir=tmp_path))
    (path,) = tmp_path.glob("*/model.onnx")
    ops = {node.op_type for node in onnx.load(str(path)).graph.node}
    assert "Attention" in ops  # fused, and left in fp32
    assert ops & {"MatMulInteger", "DynamicQuantizeMatMul"}  # the feed-forward runs in int8
    assert not ops & {"QAttention", "QEmbedLayerNormalization", "QGather"}


class TestEngine:
    def test_round_trip_positions(self, bert_tokenizer_dir: Path) -> None:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(bert_tokenizer_dir)
        seen: list[tuple[int, int]] = []

        class Echo:
            input_names = ("input_ids", "attention_mask", "token_type_ids")

            def __call__(self, feeds: dict[str, np.ndarray]) -> tuple[np.ndarray, ...]:
                seen.append(feeds["input_ids"].shape)
                assert (feeds["token_type_ids"] == 0).all()
                return (feeds["attention_mask"].sum(1, keepdims=True).astype(np.float32),)

        engine = TextEngine(tok, Echo(), max_length=16, batch_tokens=32, max_batch_size=8)
        texts = ["a", "a b c d e f g h i j k l m n o p q r s", "a b", ""]
        lengths = np.zeros(len(texts))
        for batch in engine.run(texts):
            lengths[batch.indices] = batch.outputs[0][:, 0]
        assert lengths.tolist() == [3, 16, 4, 2]  # truncated to 16, [CLS]/[SEP] included
        assert all(rows * width <= 32 for rows, width in seen)
        assert engine.count_tokens(texts) == [1, 19, 2, 0]
        assert engine.max_content_tokens == 14

    def test_example_features(self, bert_tokenizer_dir: Path, xlmr_tokenizer_dir: Path) -> None:
        from transformers import AutoTokenizer

        assert list(example_features(AutoTokenizer.from_pretrained(bert_tokenizer_dir))) == [
            "input_ids",
            "attention_mask",
            "token_type_ids",
        ]
        assert list(example_features(AutoTokenizer.from_pretrained(xlmr_tokenizer_dir))) == [
            "input_ids",
            "attention_mask",
        ]


class TestPostprocess:
    def test_l2_normalize_keeps_zero_rows(self) -> None:
        out = l2_normalize(np.array([[3.0, 4.0], [0.0, 0.0]]))
        np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0]])

    def test_row_to_sparse(self) -> None:
        vec = row_to_sparse(np.array([0.0, 0.5, 0.0, 2.0], dtype=np.float32))
        assert vec.indices == (1, 3)
        assert vec.values == (0.5, 2.0)

    def test_token_weights_max_per_id_and_skips(self) -> None:
        ids = np.array([0, 7, 9, 7, 2, 1, 1])
        weights = np.array([5.0, 0.2, 0.0, 0.6, 3.0, 9.0, 9.0], dtype=np.float32)
        mask = np.array([1, 1, 1, 1, 1, 0, 0])
        vec = token_weights_to_sparse(ids, weights, mask, skip_ids=(0, 2, 1))
        assert vec.indices == (7,)
        assert vec.values == pytest.approx((0.6,))
        empty = token_weights_to_sparse(ids[:1], weights[:1], mask[:1], skip_ids=(0,))
        assert empty.indices == ()


def test_untraceable_core_falls_back_to_torch(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class Branchy(MeanCore):
        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            raise RuntimeError("cannot trace this")

    plan = plan_execution(device="cpu", precision="int8", cpu_backend="onnx")
    runner = build_runner(
        Branchy(),
        options=RunOptions(plan=plan, cache_dir=tmp_path),
        example=example(),
        output_names=["out"],
        output_axes={"out": {0: "batch"}},
    )
    assert isinstance(runner, TorchRunner)
    assert "ONNX export failed" in caplog.text
    assert not list(tmp_path.glob(".*"))  # the half-written export folder is gone


def test_unwritable_cache_falls_back_to_torch(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    plan = plan_execution(device="cpu", precision="fp32", cpu_backend="onnx")
    runner = build_runner(
        MeanCore(),
        options=RunOptions(plan=plan, cache_dir=blocker / "cache"),
        example=example(),
        output_names=["out"],
        output_axes={"out": {0: "batch"}},
    )
    assert isinstance(runner, TorchRunner)


# The CPU int8 path stands on two APIs torch has deprecated. When an upgrade removes either, these
# tests fail with the plan below instead of letting `build_runner` fall back quietly (export
# failure -> torch dynamic int8) or fail at model load (torch.ao gone).
MIGRATION_PLAN = """
The deprecated int8 path of rayweave broke with torch {version}. \
Migration plan (README, Benchmarks):
1. ONNX export: replace `torch.onnx.export(..., dynamo=False)` in models/runtime.py with the
   torch.export-based exporter (`dynamo=True`, `dynamic_shapes` instead of `dynamic_axes`); add
   `onnxscript` to the dependencies; check that ONNX Runtime's BERT optimizer still fuses
   Attention/LayerNorm on the new graphs (`get_fused_operator_statistics`) and that
   `rayweave bench models` keeps int8 ONNX texts/s and nDCG@10 at or above the README row.
2. torch fallback (no onnxruntime, untraceable cores, CLIP): replace `torch.ao.quantization.
   quantize_dynamic` in models/precision.py with torchao's `quantize_(model,
   Int8DynamicActivationInt8WeightConfig())` and add `torchao` to the dependencies.
Until then keep torch below this version in pyproject.toml.
"""


class TestDeprecatedInt8Path:
    def test_torchscript_onnx_exporter_is_still_there(self, tmp_path: Path) -> None:
        plan = MIGRATION_PLAN.format(version=torch.__version__)
        if "dynamo" not in inspect.signature(torch.onnx.export).parameters:
            pytest.fail(f"torch.onnx.export has no `dynamo` argument.{plan}")
        try:
            path = export_onnx(
                MeanCore(),
                example=example(),
                output_names=["out"],
                output_axes={"out": {0: "batch"}},
                cache_dir=tmp_path,
                int8=True,
            )
        except ModelError as exc:
            pytest.fail(f"the TorchScript ONNX export (dynamo=False) failed: {exc}{plan}")
        assert path.is_file()

    def test_torch_dynamic_quantization_is_still_there(self) -> None:
        try:
            from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic
        except ImportError as exc:
            pytest.fail(
                f"torch.ao.quantization.quantize_dynamic is gone ({exc})."
                + MIGRATION_PLAN.format(version=torch.__version__)
            )
        assert callable(quantize_dynamic)
        assert per_channel_dynamic_qconfig is not None
