"""BGE-M3 as its authors ship it: one XLM-RoBERTa forward, three outputs.

The checkpoint folder holds the encoder (`config.json` + weights, loaded with `AutoModel`) and two
heads saved as plain `nn.Linear` state dicts next to it: `sparse_linear.pt` (hidden -> 1) and
`colbert_linear.pt` (hidden -> colbert dim). From the last hidden state `h` (FlagEmbedding's
`BGEM3ForInference`):

- dense: `h[:, 0]` (CLS pooling), L2-normalised;
- lexical weights: `relu(sparse_linear(h))` per position; per text, each token id keeps its largest
  weight, and the CLS/EOS/PAD/UNK ids and zero weights are dropped;
- multi-vector: `colbert_linear(h[:, 1:])` masked and L2-normalised per token; a text keeps its
  first `n_tokens - 1` rows (everything after CLS, EOS included).

One load serves all three: `BgeM3Encoder` is a dense and a multi-vector encoder, and `.sparse` is
a sparse-encoder view over the same model, so ingestion pays for one forward per text.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn import functional

from rayweave.cluster.errors import ModelError
from rayweave.cluster.types import SparseVector
from rayweave.models.engine import EngineEncoder, TextEngine, check_texts
from rayweave.models.postprocess import token_weights_to_sparse
from rayweave.models.precision import RunOptions
from rayweave.models.protocols import TextKind
from rayweave.models.resolve import resolve_model
from rayweave.models.runtime import build_runner
from rayweave.models.tokens import model_max_length

log = logging.getLogger(__name__)

SPARSE_HEAD_FILE = "sparse_linear.pt"
COLBERT_HEAD_FILE = "colbert_linear.pt"


class BgeM3Core(torch.nn.Module):
    """Encoder plus both heads: `(input_ids, attention_mask) -> (dense, token_weights, colbert)`."""

    def __init__(
        self,
        encoder: torch.nn.Module,
        sparse_linear: torch.nn.Linear,
        colbert_linear: torch.nn.Linear,
    ) -> None:
        super().__init__()
        self.encoder = encoder
        self.sparse_linear = sparse_linear
        self.colbert_linear = colbert_linear

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        # Normalise in fp32: fp16's eps underflows and zero (padding) rows would become NaN.
        dense = functional.normalize(hidden[:, 0].float(), dim=-1)
        weights = torch.relu(self.sparse_linear(hidden)).squeeze(-1)
        colbert = self.colbert_linear(hidden[:, 1:]) * attention_mask[:, 1:].unsqueeze(-1).to(
            hidden.dtype
        )
        return dense, weights, functional.normalize(colbert.float(), dim=-1)


@dataclass(frozen=True, slots=True, kw_only=True)
class BgeM3Output:
    """All three representations of a list of texts, in input order."""

    dense: np.ndarray
    sparse: list[SparseVector]
    colbert: list[np.ndarray]


def colbert_score(query: np.ndarray, doc: np.ndarray) -> float:
    """Late-interaction score: mean over query tokens of the best cosine with any document token."""
    if query.size == 0 or doc.size == 0:
        return 0.0
    return float((query @ doc.T).max(axis=1).mean())


class BgeM3Encoder(EngineEncoder):
    """Dense (`encode`), multi-vector (`encode_multi`), all at once (`encode_all`), and the lexical
    view `sparse`, over one loaded BGE-M3."""

    def __init__(self, *, name: str, engine: TextEngine, dim: int, skip_ids: Sequence[int]) -> None:
        super().__init__(name=name, engine=engine)
        self._dim = dim
        self.skip_ids = tuple(skip_ids)
        self.sparse = BgeM3SparseEncoder(self)

    @property
    def dim(self) -> int:
        return self._dim

    def encode_all(
        self,
        texts: Sequence[str],
        *,
        kind: TextKind = "document",
        dense: bool = True,
        sparse: bool = True,
        colbert: bool = True,
    ) -> BgeM3Output:
        """One forward per batch; only the requested outputs are post-processed and kept."""
        check_texts(texts, kind)
        n = len(texts)
        dense_out = np.zeros((n, self._dim), dtype=np.float32)
        sparse_out = [SparseVector(indices=(), values=())] * n if sparse else []
        colbert_out: list[np.ndarray] = [np.zeros((0, 0), dtype=np.float32)] * n if colbert else []
        for batch in self.engine.run(list(texts)):
            d, weights, multi = batch.outputs
            if dense:
                dense_out[batch.indices] = d
            for row, pos in enumerate(batch.indices.tolist()):
                if sparse:
                    sparse_out[pos] = token_weights_to_sparse(
                        batch.input_ids[row],
                        weights[row],
                        batch.attention_mask[row],
                        skip_ids=self.skip_ids,
                    )
                if colbert:
                    n_tokens = int(batch.attention_mask[row].sum())
                    colbert_out[pos] = np.ascontiguousarray(multi[row, : max(n_tokens - 1, 0)])
        return BgeM3Output(dense=dense_out, sparse=sparse_out, colbert=colbert_out)

    def encode(self, texts: Sequence[str], *, kind: TextKind = "document") -> np.ndarray:
        return self.encode_all(texts, kind=kind, sparse=False, colbert=False).dense

    def encode_multi(
        self, texts: Sequence[str], *, kind: TextKind = "document"
    ) -> list[np.ndarray]:
        return self.encode_all(texts, kind=kind, dense=False, sparse=False).colbert

    def maxsim(self, query: str, texts: Sequence[str]) -> list[float]:
        """ColBERT late-interaction scores of `texts` for `query` (for reranking a short list)."""
        q = self.encode_multi([query], kind="query")[0]
        return [colbert_score(q, d) for d in self.encode_multi(texts)]


class BgeM3SparseEncoder:
    """BGE-M3's lexical weights as a `SparseEncoder`, sharing the dense encoder's model."""

    def __init__(self, model: BgeM3Encoder) -> None:
        self.model = model

    @property
    def name(self) -> str:
        return f"{self.model.name}#sparse"

    def encode(self, texts: Sequence[str], *, kind: TextKind = "document") -> list[SparseVector]:
        return self.model.encode_all(texts, kind=kind, dense=False, colbert=False).sparse


def _checkpoint_folder(ref: str) -> Path:
    resolved = resolve_model(ref)
    local: Path | None = resolved.path
    if local is not None:
        return local
    from huggingface_hub import snapshot_download

    try:
        return Path(
            snapshot_download(
                repo_id=str(resolved.hub_id),
                ignore_patterns=["onnx/*", "imgs/*", "*.msgpack", "*.h5", "*.ot"],
            )
        )
    except Exception as exc:
        raise ModelError(f"cannot fetch BGE-M3 checkpoint {ref!r} from the hub: {exc}") from exc


def _load_linear(path: Path, in_features: int) -> torch.nn.Linear:
    if not path.is_file():
        raise ModelError(f"BGE-M3 head {path} is missing (expected next to the encoder weights)")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
        weight = state["weight"]
    except Exception as exc:
        raise ModelError(f"BGE-M3 head {path} is not an nn.Linear state dict: {exc}") from exc
    if weight.ndim != 2 or int(weight.shape[1]) != in_features:
        raise ModelError(
            f"BGE-M3 head {path} takes {weight.shape[-1]} inputs, the encoder gives {in_features}"
        )
    layer = torch.nn.Linear(in_features, int(weight.shape[0]), bias="bias" in state)
    layer.load_state_dict(state)
    return layer


def build_bge_m3_core(folder: Path, *, eager_attention: bool = False) -> tuple[BgeM3Core, object]:
    """Encoder, heads and tokenizer from a BGE-M3-layout folder (fp32, on CPU)."""
    from transformers import AutoModel, AutoTokenizer

    attn = {"attn_implementation": "eager"} if eager_attention else {}
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(folder))
        encoder = AutoModel.from_pretrained(str(folder), add_pooling_layer=False, **attn)
    except Exception as exc:
        raise ModelError(f"cannot load the BGE-M3 encoder in {folder}: {exc}") from exc
    hidden = int(encoder.config.hidden_size)
    core = BgeM3Core(
        encoder,
        _load_linear(folder / SPARSE_HEAD_FILE, hidden),
        _load_linear(folder / COLBERT_HEAD_FILE, hidden),
    )
    return core, tokenizer


def load_bge_m3(ref: str, options: RunOptions) -> BgeM3Encoder:
    """Load BGE-M3 (`BAAI/bge-m3`, a local copy, or any checkpoint in its layout)."""
    folder = _checkpoint_folder(ref)
    core, tokenizer = build_bge_m3_core(folder, eager_attention=options.plan.backend == "onnx")
    return bge_m3_from_core(core, tokenizer, name=ref, options=options)


def bge_m3_from_core(
    core: BgeM3Core, tokenizer: object, *, name: str, options: RunOptions
) -> BgeM3Encoder:
    """Wrap an already-built core (the bench builds a random one of BGE-M3's size)."""
    config: Any = core.encoder.config
    max_length = model_max_length(tokenizer, config, cap=options.max_tokens)
    example = tokenizer(
        ["an example query", "an example passage with more words"],
        padding=True,
        return_tensors="pt",
    )  # type: ignore[operator]
    runner = build_runner(
        core,
        options=options,
        example={"input_ids": example["input_ids"], "attention_mask": example["attention_mask"]},
        output_names=["dense", "token_weights", "colbert"],
        output_axes={
            "dense": {0: "batch"},
            "token_weights": {0: "batch", 1: "sequence"},
            "colbert": {0: "batch", 1: "tokens"},
        },
        key_parts=("bge-m3", name),
    )
    engine = TextEngine.from_options(tokenizer, runner, max_length=max_length, options=options)
    special = [getattr(tokenizer, f"{t}_token_id", None) for t in ("cls", "eos", "pad", "unk")]
    log.info("BGE-M3 encoder %s (%s, max %d tokens)", name, options.plan.label, max_length)
    return BgeM3Encoder(
        name=name,
        engine=engine,
        dim=int(config.hidden_size),
        skip_ids=[int(t) for t in special if t is not None],
    )
