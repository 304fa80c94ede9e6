"""Runners: one model forward over padded numpy batches, on torch or on ONNX Runtime.

Every transformer encoder here is a small `torch.nn.Module` ("core") from token ids and attention
mask to the arrays it needs (pooled embedding, term weights, token vectors), pooling included, so
that one graph does all the work and nothing of size `batch x tokens x vocabulary` leaves it. A
`Runner` executes that core either with torch (GPU fp16/bf16, CPU fp32/bf16/int8) or as an ONNX
graph that ONNX Runtime has fused and quantized (CPU int8). Exported graphs are cached on disk
under a fingerprint of the weights, precision and library versions, so an actor pays for the
export once per machine, not once per start.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch

from rayweave.cluster.errors import ModelError
from rayweave.models.precision import (
    RunOptions,
    configure_threads,
    int8_needs_reduce_range,
    quantize_dynamic_int8,
)

log = logging.getLogger(__name__)

# Bump when the export recipe changes so stale cached graphs are not reused.
_EXPORT_RECIPE = 4
# What int8 quantizes: the plain MatMuls (feed-forward and attention output projections, most of
# an encoder's FLOPs), with per-channel 8-bit weights. Left in fp32: the fused `Attention` node,
# whose quantized form (QAttention) always takes 7-bit weights for the QKV projection whatever
# the CPU, and embedding lookups (Gather, EmbedLayerNormalization), which do no arithmetic to
# save. Against quantizing every supported op, this kept all-MiniLM-L6-v2's vectors closer to
# fp32 on all three dev sets (cosqa-dev brute force MRR@10 0.537 against 0.525, fp32 0.534) for
# about 10% more encode time (docs/experiments/2026-11-29-int8-ops.md).
_INT8_OPS = ("MatMul",)
_OPSET = 17
_EXTERNAL_DATA_BYTES = 1_500_000_000


@runtime_checkable
class Runner(Protocol):
    """A forward function over named int64 arrays returning float32 arrays."""

    @property
    def input_names(self) -> tuple[str, ...]: ...

    def __call__(self, feeds: Mapping[str, np.ndarray]) -> tuple[np.ndarray, ...]: ...


class TorchRunner:
    """Runs a core module under `inference_mode` on its device; outputs come back as float32."""

    def __init__(self, module: torch.nn.Module, *, device: str, input_names: Sequence[str]) -> None:
        self.module = module.eval()
        self.device = torch.device(device)
        self._input_names = tuple(input_names)

    @property
    def input_names(self) -> tuple[str, ...]:
        return self._input_names

    def __call__(self, feeds: Mapping[str, np.ndarray]) -> tuple[np.ndarray, ...]:
        with torch.inference_mode():
            tensors = {
                name: torch.from_numpy(np.ascontiguousarray(feeds[name])).to(
                    self.device, non_blocking=True
                )
                for name in self._input_names
            }
            out = self.module(**tensors)
            outputs = out if isinstance(out, tuple) else (out,)
            return tuple(o.float().cpu().numpy() for o in outputs)


class OrtRunner:
    """An ONNX Runtime CPU session with as many intra-op threads as torch was given."""

    def __init__(self, path: Path, *, num_threads: int) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, num_threads)
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Idle intra-op threads spin-wait by default: with two sessions in one process (dense and
        # sparse) each one's spinning threads took the cores the other's run needed (a query's
        # dense + sparse encode: 11.5 ms wall, 20.9 ms CPU with spinning, against 3.9 + 2.9 ms
        # run alone). Threads that sleep between runs cost a wake-up and nothing else.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self.session = ort.InferenceSession(
                str(path), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:
            raise ModelError(f"ONNX Runtime cannot load {path}: {exc}") from exc
        self._input_names = tuple(i.name for i in self.session.get_inputs())
        self.path = path

    @property
    def input_names(self) -> tuple[str, ...]:
        return self._input_names

    def __call__(self, feeds: Mapping[str, np.ndarray]) -> tuple[np.ndarray, ...]:
        outputs = self.session.run(None, {name: feeds[name] for name in self._input_names})
        return tuple(np.asarray(o, dtype=np.float32) for o in outputs)


def fingerprint(module: torch.nn.Module, *parts: object) -> str:
    """A cheap content hash of a module: config, every tensor's name/shape/dtype and a sample of
    its values, plus `parts`. Two checkpoints that differ anywhere in practice differ here."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(repr(part).encode())
    config = getattr(module, "config", None)
    if config is not None and hasattr(config, "to_json_string"):
        digest.update(config.to_json_string().encode())
    for name, tensor in module.state_dict().items():
        flat = tensor.detach().reshape(-1)
        digest.update(f"{name}:{tuple(tensor.shape)}:{tensor.dtype}".encode())
        if flat.numel():
            sample = torch.cat([flat[:256], flat[-256:]]).to(torch.float32).cpu().numpy()
            digest.update(sample.tobytes())
    return digest.hexdigest()[:32]


def default_cache_dir() -> Path:
    return Path("~/.cache/rayweave/onnx").expanduser()


def _versions() -> str:
    import onnxruntime
    import transformers

    return f"torch={torch.__version__};ort={onnxruntime.__version__};tf={transformers.__version__}"


def export_onnx(
    module: torch.nn.Module,
    *,
    example: Mapping[str, torch.Tensor],
    output_names: Sequence[str],
    output_axes: Mapping[str, Mapping[int, str]],
    cache_dir: Path | None,
    int8: bool,
    key_parts: Sequence[object] = (),
) -> Path:
    """Export `module` to ONNX, fuse it with ONNX Runtime's transformer optimizer, optionally
    quantize its MatMuls (dynamic int8, per-channel weights; `_INT8_OPS` says why only those) and
    return the cached `model.onnx` path.

    The module should use eager attention: ONNX Runtime fuses that pattern into its `Attention`
    kernel, which the SDPA export does not match. Writes go to a temporary folder that is renamed
    into place, so concurrent actors on one machine never read half a graph.
    """
    reduce_range = int8 and int8_needs_reduce_range()
    key = fingerprint(
        module,
        _EXPORT_RECIPE,
        _OPSET,
        int8,
        reduce_range,
        _versions(),
        tuple(output_names),
        *key_parts,
    )
    root = (cache_dir or default_cache_dir()).expanduser()
    final = root / key
    target = final / "model.onnx"
    if target.is_file():
        return target
    try:
        root.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{key}-{uuid.uuid4().hex[:8]}-", dir=root))
    except OSError as exc:
        raise ModelError(f"ONNX cache folder {root} is not writable: {exc}") from exc
    try:
        _export_checked(
            work, module, example, output_names, output_axes, int8=int8, reduce_range=reduce_range
        )
        (work / "export.json").write_text(
            json.dumps({"int8": int8, "reduce_range": reduce_range, "versions": _versions()}),
            encoding="utf-8",
        )
        try:
            os.replace(work, final)
        except OSError as exc:
            if not target.is_file():  # not a lost race with another actor: a real failure
                raise ModelError(f"cannot store the exported ONNX graph in {final}: {exc}") from exc
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    log.info("exported %s ONNX graph to %s", "int8" if int8 else "fp32", target)
    return target


def _attention_shape(module: torch.nn.Module) -> tuple[int, int]:
    """Heads and hidden size of the first transformer config inside `module` (0, 0 = let ONNX
    Runtime's optimizer guess, which fails on some graphs and then skips attention fusion)."""
    for sub in module.modules():
        config = getattr(sub, "config", None)
        heads = getattr(config, "num_attention_heads", None)
        hidden = getattr(config, "hidden_size", None)
        if isinstance(heads, int) and isinstance(hidden, int):
            return heads, hidden
    return 0, 0


def _export_checked(work: Path, *args: Any, **kwargs: Any) -> None:
    try:
        _export_into(work, *args, **kwargs)
    except ModelError:
        raise
    except Exception as exc:
        raise ModelError(f"ONNX export failed ({type(exc).__name__}: {exc})") from exc


def _export_into(
    work: Path,
    module: torch.nn.Module,
    example: Mapping[str, torch.Tensor],
    output_names: Sequence[str],
    output_axes: Mapping[str, Mapping[int, str]],
    *,
    int8: bool,
    reduce_range: bool,
) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers import optimizer

    input_names = list(example)
    axes: dict[str, dict[int, str]] = {name: {0: "batch", 1: "sequence"} for name in input_names}
    axes.update({name: dict(a) for name, a in output_axes.items()})
    raw = work / "exported.onnx"
    weight_bytes = sum(p.numel() * p.element_size() for p in module.parameters())
    large = weight_bytes > _EXTERNAL_DATA_BYTES
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # tracer warnings about shape-dependent Python branches
        torch.onnx.export(
            module.eval(),
            tuple(example[name] for name in input_names),
            str(raw),
            input_names=input_names,
            output_names=list(output_names),
            dynamic_axes=axes,
            opset_version=_OPSET,
            do_constant_folding=True,
            dynamo=False,
        )
    fused = work / "fused.onnx"
    num_heads, hidden_size = _attention_shape(module)
    opt = optimizer.optimize_model(
        str(raw), model_type="bert", num_heads=num_heads, hidden_size=hidden_size, opt_level=1
    )
    opt.save_model_to_file(str(fused), use_external_data_format=large)
    log.debug("ONNX fusions: %s", opt.get_fused_operator_statistics())
    for leftover in work.glob("exported.onnx*"):
        leftover.unlink()
    if int8:
        quantize_dynamic(
            str(fused),
            str(work / "model.onnx"),
            per_channel=True,
            reduce_range=reduce_range,
            weight_type=QuantType.QInt8,
            op_types_to_quantize=list(_INT8_OPS),
            use_external_data_format=large,
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
        for leftover in work.glob("fused.onnx*"):
            leftover.unlink()
    else:
        fused.rename(work / "model.onnx")


def build_runner(
    core: torch.nn.Module,
    *,
    options: RunOptions,
    example: Mapping[str, torch.Tensor],
    output_names: Sequence[str],
    output_axes: Mapping[str, Mapping[int, str]],
    key_parts: Sequence[object] = (),
) -> Runner:
    """Put a fp32 core on the plan's runtime: ONNX Runtime (exported, fused, maybe int8), or torch
    with fp16/bf16 weights or dynamic int8. The core is consumed (cast/quantized in place)."""
    plan = options.plan
    threads = configure_threads(options.num_threads)
    core = core.eval()
    if plan.backend == "onnx":
        try:
            path = export_onnx(
                core,
                example=example,
                output_names=output_names,
                output_axes=output_axes,
                cache_dir=options.cache_dir,
                int8=plan.int8,
                key_parts=key_parts,
            )
            return OrtRunner(path, num_threads=threads)
        except ModelError as exc:
            # An architecture the exporter cannot trace still runs, on torch, rather than not at
            # all.
            log.warning("%s; running %s on torch instead", exc, "int8" if plan.int8 else "fp32")
    if plan.int8:
        core = quantize_dynamic_int8(core)
    elif plan.dtype != torch.float32:
        core = core.to(plan.dtype)
    return TorchRunner(core.to(plan.device), device=plan.device, input_names=tuple(example))
