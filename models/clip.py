"""Images and texts in one space with open_clip.

`models.clip` is `<model>[:<pretrained>]`: an open_clip model name (or `hf-hub:org/repo`, or a path
to a model-config JSON) and a pretrained tag (`laion2b_s34b_b79k`) or checkpoint file. Without a
pretrained part the weights are random, which only tests want (a warning says so).
"""

from __future__ import annotations

import io
import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rayweave.cluster.errors import ConfigError, MissingExtraError, ModelError
from rayweave.models.postprocess import l2_normalize
from rayweave.models.precision import ExecutionPlan, quantize_dynamic_int8

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class ClipSpec:
    """A parsed `models.clip` value."""

    model_name: str
    pretrained: str | None
    config_file: Path | None = None


def parse_clip_ref(ref: str) -> ClipSpec:
    text = ref.strip()
    if not text:
        raise ConfigError(
            "models.clip is empty; use '<open_clip model>[:<pretrained tag or checkpoint>]'"
        )
    if text.startswith("hf-hub:"):
        return ClipSpec(model_name=text, pretrained=None)
    model, _, pretrained = text.partition(":")
    config_file = None
    if model.endswith(".json"):
        config_file = Path(model).expanduser()
        if not config_file.is_file():
            raise ConfigError(f"open_clip model config {config_file} does not exist")
        model = config_file.stem
    if pretrained and (
        pretrained.startswith(("/", "~", "."))
        or Path(pretrained).suffix in (".pt", ".bin", ".safetensors")
    ):
        checkpoint = Path(pretrained).expanduser()
        if not checkpoint.is_file():
            raise ConfigError(f"open_clip checkpoint {checkpoint} does not exist")
        pretrained = str(checkpoint)
    return ClipSpec(model_name=model, pretrained=pretrained or None, config_file=config_file)


def _to_pil(image: object) -> Any:
    from PIL import Image

    if isinstance(image, Image.Image):
        return image.convert("RGB")
    if isinstance(image, str | Path):
        with Image.open(image) as img:
            return img.convert("RGB")
    if isinstance(image, bytes | bytearray):
        with Image.open(io.BytesIO(image)) as img:
            return img.convert("RGB")
    if isinstance(image, np.ndarray):
        array = image if image.dtype == np.uint8 else np.clip(image, 0, 255).astype(np.uint8)
        return Image.fromarray(array).convert("RGB")
    raise TypeError(
        f"cannot read an image from {type(image).__name__}; "
        "pass PIL images, paths, bytes or HWC arrays"
    )


def _input_dtype(model: Any) -> torch.dtype:
    """The dtype the image tower's first layer computes in. open_clip's fp16/bf16 keep some
    parameters (`logit_scale`, class and position embeddings) in fp32, so the model's first
    parameter does not tell: that mistake fed fp32 pixels to fp16 convolutions on CUDA."""
    tower = getattr(model, "visual", model)
    for module in tower.modules():
        if isinstance(module, torch.nn.Conv2d | torch.nn.Linear):
            dtype: torch.dtype = module.weight.dtype
            return dtype
    return torch.float32


class OpenClipEncoder:
    """L2-normalised image and text embeddings from one CLIP model, in batches."""

    def __init__(
        self,
        model: torch.nn.Module,
        preprocess: Any,
        tokenizer: Any,
        *,
        name: str,
        device: str = "cpu",
        batch_size: int = 64,
    ) -> None:
        self.model: Any = model.eval()
        self.preprocess = preprocess
        self.tokenizer = tokenizer
        self.name = name
        self.device = torch.device(device)
        self.batch_size = batch_size
        self._dtype = _input_dtype(self.model)
        # Decoding-side preprocessing (resize, crop, normalise) runs on the actor's CPUs in
        # parallel: on a GPU the image tower is ~50x faster than one thread preparing its input.
        self._workers = max(1, torch.get_num_threads())
        self._pool: ThreadPoolExecutor | None = None
        self._dim = int(self.encode_texts(["a"]).shape[1])

    @property
    def dim(self) -> int:
        return self._dim

    def encode_images(self, images: Sequence[object]) -> np.ndarray:
        if not images:
            return np.zeros((0, self._dim), dtype=np.float32)
        out = []
        with torch.inference_mode():
            for i in range(0, len(images), self.batch_size):
                pixels = torch.stack(self._prepared(images[i : i + self.batch_size]))
                feats = self.model.encode_image(pixels.to(self.device, self._dtype))
                out.append(feats.float().cpu().numpy())
        vectors: np.ndarray = l2_normalize(np.concatenate(out))
        return vectors

    def _prepared(self, images: Sequence[object]) -> list[torch.Tensor]:
        def prepare(image: object) -> torch.Tensor:
            tensor: torch.Tensor = self.preprocess(_to_pil(image))
            return tensor

        if self._workers == 1 or len(images) == 1:
            return [prepare(img) for img in images]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="clip-preprocess")
        return list(self._pool.map(prepare, images))

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("expected a sequence of texts, got one string; wrap it in a list")
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        out = []
        with torch.inference_mode():
            for i in range(0, len(texts), self.batch_size):
                tokens = self.tokenizer(list(texts[i : i + self.batch_size])).to(self.device)
                out.append(self.model.encode_text(tokens).float().cpu().numpy())
        vectors: np.ndarray = l2_normalize(np.concatenate(out))
        return vectors


def load_open_clip(ref: str, plan: ExecutionPlan, *, batch_size: int = 64) -> OpenClipEncoder:
    """Build the encoder `models.clip` names, at the plan's device and precision."""
    try:
        import open_clip
    except ImportError as exc:
        raise MissingExtraError(
            "open-clip-torch", extra="clip", purpose="image embeddings"
        ) from exc
    spec = parse_clip_ref(ref)
    if spec.config_file is not None:
        open_clip.add_model_config(spec.config_file)
    if spec.pretrained is None and not spec.model_name.startswith("hf-hub:"):
        log.warning(
            "CLIP model %s has no pretrained weights: embeddings are random", spec.model_name
        )
    precision = {torch.float16: "fp16", torch.bfloat16: "bf16"}.get(plan.dtype, "fp32")
    model: Any
    try:
        model, _, preprocess = open_clip.create_model_and_transforms(
            spec.model_name, pretrained=spec.pretrained, precision=precision, device=plan.device
        )
        tokenizer = open_clip.get_tokenizer(spec.model_name)
    except Exception as exc:
        raise ModelError(f"cannot load open_clip model {ref!r}: {exc}") from exc
    if plan.int8 and not plan.is_cuda:
        model = quantize_dynamic_int8(model)
        # open_clip reads the compute dtype off an MLP weight; quantized layers name it here
        # instead.
        for module in model.modules():
            if isinstance(module, torch.ao.nn.quantized.dynamic.Linear):
                setattr(module, "int8_original_dtype", torch.float32)  # noqa: B010
    log.info("CLIP encoder %s (%s)", ref, plan.label)
    return OpenClipEncoder(
        model, preprocess, tokenizer, name=ref, device=plan.device, batch_size=batch_size
    )
