"""Sparse (lexical) encoders: SPLADE from any masked LM, and weight-free BM25 term weights.

BGE-M3's lexical weights live in `models.bge_m3` (they come out of the same forward as its dense
and multi-vector outputs).
"""

from __future__ import annotations

import logging
import re
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from rayweave.cluster.errors import ModelError
from rayweave.cluster.types import SparseVector
from rayweave.models.engine import EngineEncoder, TextEngine, check_texts
from rayweave.models.features import FeatureCore, example_features
from rayweave.models.postprocess import row_to_sparse
from rayweave.models.precision import RunOptions
from rayweave.models.protocols import TextKind
from rayweave.models.resolve import resolve_model
from rayweave.models.runtime import build_runner
from rayweave.models.tokens import model_max_length

log = logging.getLogger(__name__)

# A SPLADE forward holds `tokens x vocabulary` logits; this many floats (256 MB in fp32) bounds it,
# whatever the configured token budget for dense models.
_SPLADE_LOGIT_BUDGET = 64 * 1024 * 1024


class SpladeCore(FeatureCore):
    """Masked-LM logits to SPLADE weights: `max over tokens of log(1 + relu(logit))`, masked.

    `log1p` and `relu` are monotone, so the max is taken over the raw logits first (padding set to
    the dtype's minimum) and the activation applied to one `(B, V)` row per text: the same numbers
    as activating `(B, L, V)` first, without materialising two more tensors of that size.
    """

    def __init__(self, mlm: torch.nn.Module) -> None:
        super().__init__()
        self.mlm = mlm

    def head(self, features: dict[str, torch.Tensor]) -> torch.Tensor:
        logits = self.mlm(**features).logits
        logits = logits.masked_fill(
            features["attention_mask"].unsqueeze(-1) == 0, torch.finfo(logits.dtype).min
        )
        return torch.log1p(torch.relu(logits.amax(dim=1)))


class SpladeEncoder(EngineEncoder):
    """Texts to SPLADE vectors over the checkpoint's vocabulary (same encoder for queries and
    documents, as in SPLADE v2/++)."""

    def __init__(self, *, name: str, engine: TextEngine, vocab_size: int) -> None:
        super().__init__(name=name, engine=engine)
        self.vocab_size = vocab_size

    def encode(self, texts: Sequence[str], *, kind: TextKind = "document") -> list[SparseVector]:
        check_texts(texts, kind)
        out: list[SparseVector] = [SparseVector(indices=(), values=())] * len(texts)
        for batch in self.engine.run(list(texts)):
            rows = batch.outputs[0]
            for pos, row in zip(batch.indices.tolist(), rows, strict=True):
                out[pos] = row_to_sparse(row)
        return out


def load_splade(ref: str, options: RunOptions) -> SpladeEncoder:
    """Load a SPLADE checkpoint: any `AutoModelForMaskedLM` (BERT, DistilBERT, XLM-R ...)."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    resolved = resolve_model(ref)
    attn = {"attn_implementation": "eager"} if options.plan.backend == "onnx" else {}
    try:
        tokenizer = AutoTokenizer.from_pretrained(resolved.location)
        mlm = AutoModelForMaskedLM.from_pretrained(resolved.location, **attn)
    except Exception as exc:
        raise ModelError(f"cannot load SPLADE (masked-LM) model {ref!r}: {exc}") from exc
    vocab = int(mlm.config.vocab_size)
    max_length = model_max_length(tokenizer, mlm.config, cap=options.max_tokens)
    runner = build_runner(
        SpladeCore(mlm),
        options=options,
        example=example_features(tokenizer),
        output_names=["weights"],
        output_axes={"weights": {0: "batch"}},
        key_parts=("splade", resolved.location),
    )
    budget = max(max_length, min(options.batch_tokens, _SPLADE_LOGIT_BUDGET // vocab))
    engine = TextEngine.from_options(
        tokenizer, runner, max_length=max_length, options=options, batch_tokens=budget
    )
    log.info(
        "SPLADE encoder %s (%s, vocab %d, max %d tokens)",
        ref,
        options.plan.label,
        vocab,
        max_length,
    )
    return SpladeEncoder(name=ref, engine=engine, vocab_size=vocab)


_WORD = re.compile(r"\w+", re.UNICODE)
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def bm25_terms(text: str) -> list[str]:
    """Lower-cased `\\w+` words; an identifier (`get_user_name`, `parseHTTPResponse`) also yields
    its parts, so prose queries match code and code queries still match whole identifiers."""
    terms: list[str] = []
    for word in _WORD.findall(text):
        lower = word.lower()
        terms.append(lower)
        if "_" in word or (not word.islower() and not word.isupper()):
            parts = [p.lower() for piece in word.split("_") for p in _CAMEL.findall(piece)]
            if len(parts) > 1:
                terms.extend(parts)
    return terms


def term_id(term: str) -> int:
    """A stable unsigned 32-bit id for a term (Qdrant sparse indices are u32). CRC-32 is the same
    in every process and on every machine, unlike `hash()`."""
    return zlib.crc32(term.encode("utf-8"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Bm25Params:
    """Okapi BM25 saturation `k1`, length normalisation `b`, and the expected document length in
    terms (`avg_doc_len`; chunks of 200-400 model tokens hold roughly 150-300 words)."""

    k1: float = 1.2
    b: float = 0.75
    avg_doc_len: float = 200.0


class Bm25Encoder:
    """BM25 without a model: documents get saturated, length-normalised term frequencies, queries
    a weight of 1 per distinct term, and Qdrant's IDF modifier supplies the collection statistics,
    so `score = sum over shared terms of idf x tf-part`, which is BM25 exactly."""

    def __init__(self, params: Bm25Params | None = None) -> None:
        self.params = params or Bm25Params()
        if self.params.k1 < 0 or not 0 <= self.params.b <= 1 or self.params.avg_doc_len <= 0:
            raise ValueError(
                f"invalid BM25 parameters {self.params}: need k1 >= 0, 0 <= b <= 1, avg_doc_len > 0"
            )

    @property
    def name(self) -> str:
        return "bm25"

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [len(bm25_terms(t)) for t in texts]

    def encode(self, texts: Sequence[str], *, kind: TextKind = "document") -> list[SparseVector]:
        check_texts(texts, kind)
        return [self._encode_one(t, kind) for t in texts]

    def _encode_one(self, text: str, kind: TextKind) -> SparseVector:
        terms = bm25_terms(text)
        weights: dict[int, float] = {}
        if kind == "query":
            for term in terms:
                weights[term_id(term)] = 1.0
        else:
            k1, b = self.params.k1, self.params.b
            norm = k1 * (1.0 - b + b * len(terms) / self.params.avg_doc_len)
            for term, tf in Counter(terms).items():
                tid = term_id(term)
                # Two terms sharing a CRC-32 (rare in 2^32 ids) simply add their weights.
                weights[tid] = weights.get(tid, 0.0) + tf * (k1 + 1.0) / (tf + norm)
        ids = sorted(weights)
        return SparseVector(indices=tuple(ids), values=tuple(weights[i] for i in ids))
