"""Where a model runs and in which number format.

One configured `precision` maps to what each device does well:

- fp32: fp32 weights on CUDA; fp32 on CPU (torch, or ONNX Runtime when `cpu_backend='onnx'`).
- fp16: fp16 weights on CUDA; fp32 on CPU: CPU half kernels are slow or missing.
- bf16: bf16 on CUDA (fp16 without bf16 support); bf16 weights on CPU (torch; AVX512-BF16/AMX
  run it natively).
- int8: fp16 on CUDA, where dynamic W8A8 int8 ran at 0.45x fp16's speed (H200, README); dynamic
  int8 on CPU.

On CPU, int8 runs through ONNX Runtime (int8 MatMuls with per-channel weights, the fused attention
and the embeddings left in fp32: `runtime._INT8_OPS`) when `onnx` and `onnxruntime` import, else
through torch's dynamic quantization. The bench (`rayweave bench models`) measures both; on the
development machines ONNX Runtime int8 was both faster and closer to fp32 (per-channel weights,
8-bit activations on VNNI CPUs), hence the default.
"""

from __future__ import annotations

import importlib.util
import logging
import platform
import warnings
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

import torch

from rayweave.cluster.errors import ConfigError
from rayweave.cluster.settings import Device, ModelSettings, Precision

log = logging.getLogger(__name__)

Backend = Literal["torch", "onnx"]
CpuBackend = Literal["auto", "torch", "onnx"]
_DEVICES = ("auto", "cpu", "cuda")
_PRECISIONS = ("fp32", "fp16", "bf16", "int8")
_CPU_BACKENDS = ("auto", "torch", "onnx")


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionPlan:
    """How one model runs: device, torch weight dtype, int8 or not, and the runtime."""

    device: str
    requested: Precision
    dtype: torch.dtype
    int8: bool
    backend: Backend

    @property
    def is_cuda(self) -> bool:
        return self.device.startswith("cuda")

    @property
    def batch_invariant(self) -> bool:
        """Whether a text encodes the same whatever shares its batch. Dynamic int8 (CPU: ONNX
        Runtime or torch) quantizes activations with one range per batch tensor, so padding and
        the other rows move a vector: all-MiniLM-L6-v2 query vectors encoded in batches of 8
        against alone measured cosine down to 0.989 (fp32: 0.9999999); such plans run one row
        per forward (`RunOptions.rows_per_forward`)."""
        return not (self.int8 and not self.is_cuda)

    @property
    def label(self) -> str:
        """Short human form, e.g. `cpu int8 onnx` or `cuda fp16 torch`."""
        fmt = (
            "int8"
            if self.int8
            else {torch.float16: "fp16", torch.bfloat16: "bf16"}.get(self.dtype, "fp32")
        )
        return f"{self.device} {fmt} {self.backend}"


def cuda_available() -> bool:
    return torch.cuda.is_available()


@cache
def onnx_available() -> bool:
    """ONNX export and quantization need both `onnx` and `onnxruntime` (found, not imported)."""
    return all(importlib.util.find_spec(m) is not None for m in ("onnx", "onnxruntime"))


def resolve_device(device: Device) -> str:
    if device not in _DEVICES:
        raise ConfigError(f"unknown device {device!r}; valid: {', '.join(_DEVICES)}")
    if device == "auto":
        return "cuda" if cuda_available() else "cpu"
    if device == "cuda" and not cuda_available():
        raise ConfigError("device 'cuda' was requested but torch sees no CUDA GPU")
    resolved: str = device
    return resolved


def plan_execution(
    *, device: Device, precision: Precision, cpu_backend: CpuBackend = "auto"
) -> ExecutionPlan:
    """Map the configured device and precision to a concrete plan (see the module docstring)."""
    if precision not in _PRECISIONS:
        raise ConfigError(f"unknown precision {precision!r}; valid: {', '.join(_PRECISIONS)}")
    if cpu_backend not in _CPU_BACKENDS:
        raise ConfigError(f"unknown cpu_backend {cpu_backend!r}; valid: {', '.join(_CPU_BACKENDS)}")
    where = resolve_device(device)
    if where.startswith("cuda"):
        if precision == "fp32":
            dtype = torch.float32
        elif precision == "bf16" and torch.cuda.is_bf16_supported():
            dtype = torch.bfloat16
        else:
            dtype = torch.float16
        return ExecutionPlan(
            device=where, requested=precision, dtype=dtype, int8=False, backend="torch"
        )
    if cpu_backend == "onnx" and not onnx_available():
        raise ConfigError(
            "cpu_backend 'onnx' needs the onnx and onnxruntime packages: "
            "pip install onnx onnxruntime"
        )
    if precision == "int8":
        backend: Backend = "torch" if cpu_backend == "torch" or not onnx_available() else "onnx"
        return ExecutionPlan(
            device="cpu", requested=precision, dtype=torch.float32, int8=True, backend=backend
        )
    if precision == "bf16":
        return ExecutionPlan(
            device="cpu", requested=precision, dtype=torch.bfloat16, int8=False, backend="torch"
        )
    if precision == "fp16":
        log.info("precision fp16 runs as fp32 on CPU (half-precision CPU kernels are slow)")
    backend = "onnx" if cpu_backend == "onnx" else "torch"
    return ExecutionPlan(
        device="cpu", requested=precision, dtype=torch.float32, int8=False, backend=backend
    )


def quantize_dynamic_int8(module: torch.nn.Module) -> torch.nn.Module:
    """Dynamic int8 for every `nn.Linear`: int8 per-channel weights, activations quantized per
    batch.

    Per-channel weight scales keep MiniLM-class models within a fraction of a point of fp32 where
    per-tensor scales lose several. torch marks this eager API deprecated in favour of torchao,
    which is not a dependency here; the warning is silenced because nothing replaces it yet.
    """
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantized: torch.nn.Module = quantize_dynamic(  # type: ignore[no-untyped-call]
            module, {torch.nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8
        )
    return quantized


def configure_threads(num_threads: int | None) -> int:
    """Set torch's intra-op threads when configured, else keep what Ray/OMP set; return the count.

    Ray gives an actor `OMP_NUM_THREADS` equal to its CPU share (at least 1), which torch reads at
    start-up; overriding it would oversubscribe a node running several fractional-CPU actors.
    """
    if num_threads is not None:
        if num_threads < 1:
            raise ConfigError(f"num_threads must be >= 1, got {num_threads}")
        if torch.get_num_threads() != num_threads:
            torch.set_num_threads(num_threads)
    return torch.get_num_threads()


@cache
def int8_needs_reduce_range() -> bool:
    """Whether int8 weights must use 7 bits: on x86 CPUs without VNNI dot products.

    ONNX Runtime's u8s8 kernels can saturate on pre-VNNI x86 unless weights are reduced to 7 bits
    (`reduce_range`), which costs accuracy; VNNI CPUs and ARM do not need it.
    """
    if platform.machine().lower() not in ("x86_64", "amd64", "i686", "x86"):
        return False
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return True
    for line in text.splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            return not (flags & {"avx512_vnni", "avx_vnni", "amx_int8"})
    return True


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOptions:
    """Everything a loader needs besides the model reference, built once from `ModelSettings`."""

    plan: ExecutionPlan
    max_tokens: int = 512
    batch_tokens: int = 16384
    max_batch_size: int = 128
    cache_dir: Path | None = None
    num_threads: int | None = None

    @property
    def rows_per_forward(self) -> int:
        """Texts (or images) one forward takes: `max_batch_size`, or one where the plan is not
        batch-invariant, so that a vector never depends on what shares its batch. A document
        (or an entity name) then embeds the same in a bulk ingest as in a one-file update.
        On cosqa-dev and musique-dev retrieval then read as fp32 within 0.005, where batched
        int8 read R@5 0.016-0.018 below fp32 on one and 0.010 above on the other, by the luck
        of its batches; and with no padding encoded, the vector stage of an ingest on 2 cores
        took 0.60-0.72x the time (docs/experiments/2026-12-07-int8-against-fp32.md)."""
        return self.max_batch_size if self.plan.batch_invariant else 1

    @property
    def pad_to_multiple_of(self) -> int:
        """GPUs run tensor-core kernels on widths that are multiples of 8; CPUs gain nothing."""
        return 8 if self.plan.is_cuda else 1

    @classmethod
    def from_settings(cls, settings: ModelSettings) -> RunOptions:
        return cls(
            plan=plan_execution(
                device=settings.device,
                precision=settings.precision,
                cpu_backend=settings.cpu_backend,
            ),
            max_tokens=settings.max_tokens,
            batch_tokens=settings.batch_tokens,
            max_batch_size=settings.max_batch_size,
            cache_dir=settings.cache_dir,
            num_threads=settings.num_threads,
        )
