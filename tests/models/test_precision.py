from __future__ import annotations

import pytest
import torch

from rayweave.cluster.errors import ConfigError
from rayweave.cluster.settings import ModelSettings
from rayweave.models.precision import (
    RunOptions,
    configure_threads,
    int8_needs_reduce_range,
    onnx_available,
    plan_execution,
    quantize_dynamic_int8,
    resolve_device,
)


class TestCpuPlans:
    @pytest.mark.parametrize(
        ("precision", "backend", "dtype", "int8", "runtime"),
        [
            ("fp32", "auto", torch.float32, False, "torch"),
            ("fp32", "onnx", torch.float32, False, "onnx"),
            ("fp16", "auto", torch.float32, False, "torch"),  # no fast half kernels on CPU
            ("bf16", "auto", torch.bfloat16, False, "torch"),
            ("int8", "auto", torch.float32, True, "onnx"),
            ("int8", "torch", torch.float32, True, "torch"),
        ],
    )
    def test_mapping(
        self, precision: str, backend: str, dtype: torch.dtype, int8: bool, runtime: str
    ) -> None:
        assert onnx_available()
        plan = plan_execution(device="cpu", precision=precision, cpu_backend=backend)  # type: ignore[arg-type]
        assert (plan.device, plan.dtype, plan.int8, plan.backend) == ("cpu", dtype, int8, runtime)
        assert plan.requested == precision
        assert not plan.is_cuda
        # Dynamic int8 quantizes activations per batch: each text must encode alone.
        assert plan.batch_invariant is (not int8)
        assert RunOptions(plan=plan, max_batch_size=64).rows_per_forward == (1 if int8 else 64)

    def test_labels(self) -> None:
        assert plan_execution(device="cpu", precision="int8").label == "cpu int8 onnx"
        assert plan_execution(device="cpu", precision="bf16").label == "cpu bf16 torch"

    def test_unknown_modes_name_valid_values(self) -> None:
        with pytest.raises(ConfigError, match="valid: fp32, fp16, bf16, int8"):
            plan_execution(device="cpu", precision="fp8")  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="valid: auto, cpu, cuda"):
            plan_execution(device="tpu", precision="fp32")  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="valid: auto, torch, onnx"):
            plan_execution(device="cpu", precision="fp32", cpu_backend="tvm")  # type: ignore[arg-type]

    @pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU behaviour")
    def test_cuda_without_gpu(self) -> None:
        assert resolve_device("auto") == "cpu"
        with pytest.raises(ConfigError, match="no CUDA GPU"):
            plan_execution(device="cuda", precision="fp16")

    def test_options_from_settings(self) -> None:
        opts = RunOptions.from_settings(
            ModelSettings(precision="fp32", device="cpu", max_tokens=128)
        )
        assert opts.plan.backend == "torch"
        assert opts.max_tokens == 128
        assert opts.pad_to_multiple_of == 1

    def test_int8_quantizes_linear_layers(self) -> None:
        model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
        q = quantize_dynamic_int8(model)
        assert type(q[0]).__module__.startswith("torch.ao.nn.quantized.dynamic")
        x = torch.randn(4, 8)
        assert torch.allclose(q(x), model(x), atol=0.1)

    def test_threads_and_cpu_probe(self) -> None:
        before = torch.get_num_threads()
        assert configure_threads(None) == before
        assert configure_threads(1) == 1
        configure_threads(before)
        with pytest.raises(ConfigError):
            configure_threads(0)
        assert isinstance(int8_needs_reduce_range(), bool)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")
class TestCudaPlans:
    def test_mapping(self) -> None:
        assert plan_execution(device="auto", precision="int8").dtype == torch.float16
        assert plan_execution(device="cuda", precision="fp16").dtype == torch.float16
        assert plan_execution(device="cuda", precision="fp32").dtype == torch.float32
        bf16 = plan_execution(device="cuda", precision="bf16").dtype
        assert bf16 == (torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16)
        plan = plan_execution(device="cuda", precision="int8")
        assert (plan.backend, plan.int8, plan.is_cuda) == ("torch", False, True)
        assert RunOptions(plan=plan).pad_to_multiple_of == 8
