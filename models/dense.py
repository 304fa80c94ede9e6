"""Dense text encoders: any sentence-transformers checkpoint, run through the shared engine.

The checkpoint's own module stack (transformer, pooling, dense layers, normalisation) is wrapped as
one core, so pooling and any projection run inside the same forward (and the same ONNX graph)
exactly as `SentenceTransformer.encode` would run them; what changes is the batching (token
budget, length buckets) and the runtime (ONNX Runtime int8 on CPU, fp16/bf16 on GPU).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import numpy as np
import torch

from rayweave.cluster.errors import ModelError
from rayweave.models.engine import EngineEncoder, TextEngine, check_texts
from rayweave.models.features import FeatureCore, example_features
from rayweave.models.postprocess import l2_normalize
from rayweave.models.precision import RunOptions
from rayweave.models.protocols import TextKind
from rayweave.models.resolve import resolve_model
from rayweave.models.runtime import build_runner
from rayweave.models.tokens import model_max_length

log = logging.getLogger(__name__)


class SentenceTransformerCore(FeatureCore):
    """A SentenceTransformer's module stack as one `forward(ids, mask[, types]) -> embeddings`."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def head(self, features: dict[str, torch.Tensor]) -> torch.Tensor:
        embeddings: torch.Tensor = self.model(features)["sentence_embedding"]
        return embeddings


class TransformerDenseEncoder(EngineEncoder):
    """Texts to L2-normalised float32 vectors through a `TextEngine` whose core pools to `(B, dim)`.

    Query and document prompts (e5-style "query: ") come from the checkpoint's configuration.
    """

    def __init__(
        self, *, name: str, engine: TextEngine, dim: int, prompts: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(name=name, engine=engine)
        self._dim = dim
        self.prompts = {k: v for k, v in (prompts or {}).items() if v}
        doc_prompt = self.prompts.get("document")
        self._prompt_tokens = engine.count_tokens([doc_prompt])[0] if doc_prompt else 0

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def max_tokens(self) -> int:
        """Document tokens read before truncation (after special tokens and the document
        prompt)."""
        limit: int = self.engine.max_content_tokens - self._prompt_tokens
        return limit

    def encode(self, texts: Sequence[str], *, kind: TextKind = "document") -> np.ndarray:
        check_texts(texts, kind)
        prompt = self.prompts.get(kind, "")
        inputs = [prompt + t for t in texts] if prompt else list(texts)
        out = np.zeros((len(inputs), self._dim), dtype=np.float32)
        for batch in self.engine.run(inputs):
            out[batch.indices] = batch.outputs[0]
        vectors: np.ndarray = l2_normalize(out)
        return vectors


def load_sentence_transformer(ref: str, options: RunOptions) -> TransformerDenseEncoder:
    """Load a sentence-transformers checkpoint (hub id, path or `package:` reference)."""
    from sentence_transformers import SentenceTransformer

    resolved = resolve_model(ref)
    model_kwargs = {"attn_implementation": "eager"} if options.plan.backend == "onnx" else {}
    try:
        st = SentenceTransformer(resolved.location, device="cpu", model_kwargs=model_kwargs)
    except Exception as exc:
        raise ModelError(f"cannot load sentence-transformers model {ref!r}: {exc}") from exc
    tokenizer = st.tokenizer
    if tokenizer is None:
        raise ModelError(f"sentence-transformers model {ref!r} has no text tokenizer")
    first = st[0]
    config = getattr(
        getattr(first, "auto_model", None) or getattr(first, "model", None), "config", None
    )
    cap = min(options.max_tokens, st.max_seq_length or options.max_tokens)
    max_length = model_max_length(tokenizer, config, cap=cap)
    get_dim = getattr(st, "get_embedding_dimension", None) or st.get_sentence_embedding_dimension
    dim = get_dim()
    if not dim:
        raise ModelError(f"sentence-transformers model {ref!r} does not declare its embedding size")
    prompts: dict[str, str] = {k: v for k, v in (st.prompts or {}).items() if v}
    prompts.setdefault("document", prompts.get("passage", ""))
    core = SentenceTransformerCore(st)
    runner = build_runner(
        core,
        options=options,
        example=example_features(tokenizer),
        output_names=["embedding"],
        output_axes={"embedding": {0: "batch"}},
        key_parts=("sentence-transformers", resolved.location),
    )
    engine = TextEngine.from_options(tokenizer, runner, max_length=max_length, options=options)
    log.info(
        "dense encoder %s (%s, dim %d, max %d tokens)", ref, options.plan.label, dim, max_length
    )
    return TransformerDenseEncoder(name=ref, engine=engine, dim=int(dim), prompts=prompts)
