"""Token counting with the dense model's tokenizer, without loading the model's weights.

Chunk sizes are in the dense model's tokens, and the chunker runs in its own Ray actors: it needs
the tokenizer and the truncation length the encoder will apply, not 2 GB of BGE-M3 weights.
`load_token_counter` reads both from the checkpoint's files the way the encoder loaders do
(`sentence_bert_config.json`'s `max_seq_length`, the position table, the document prompt).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rayweave.cluster.errors import ModelError
from rayweave.cluster.settings import ModelSettings
from rayweave.models.resolve import resolve_model


class TokenizerCounter:
    """`count_tokens` (no special tokens, no truncation) and the content length the encoder reads.

    Calls into the tokenizer hold `lock`: a Rust-backed tokenizer stores truncation settings on
    itself, and two threads reconfiguring it at once fail with "Already borrowed" (Serve replicas
    encode from a thread pool). Whoever else calls this tokenizer takes the same lock.
    """

    def __init__(self, tokenizer: Any, *, max_length: int, reserved: int = 0) -> None:
        self.tokenizer = tokenizer
        self.lock = threading.Lock()
        self.max_length = max_length
        self.special_tokens = int(tokenizer.num_special_tokens_to_add(pair=False))
        self.reserved = reserved

    @property
    def max_tokens(self) -> int:
        """Tokens of text one input may hold before the encoder truncates it."""
        return self.max_length - self.special_tokens - self.reserved

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        if isinstance(texts, str):
            raise TypeError("expected a sequence of texts, got one string; wrap it in a list")
        if not texts:
            return []
        with self.lock:
            encoded = self.tokenizer(
                list(texts),
                add_special_tokens=False,
                truncation=False,
                return_attention_mask=False,
                return_token_type_ids=False,
                verbose=False,
            )
        return [len(ids) for ids in encoded["input_ids"]]


def model_max_length(tokenizer: Any, config: Any, *, cap: int) -> int:
    """The smaller of `cap` and what the tokenizer and the position table allow."""
    limits = [cap]
    tok_max = getattr(tokenizer, "model_max_length", None)
    if isinstance(tok_max, int) and 0 < tok_max < 1_000_000:
        limits.append(tok_max)
    positions = getattr(config, "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0:
        # RoBERTa-family models number positions from `pad_token_id + 1`.
        roberta = "roberta" in str(getattr(config, "model_type", ""))
        offset = (getattr(config, "pad_token_id", 0) or 0) + 1 if roberta else 0
        limits.append(positions - offset)
    return min(limits)


def _read_json(folder: Path, name: str) -> dict[str, Any]:
    path = folder / name
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelError(f"{path} is not readable JSON: {exc}") from exc
    return data if isinstance(data, dict) else {}


def _st_transformer_subfolder(folder: Path) -> str:
    """Where a sentence-transformers checkpoint keeps its transformer (usually the root)."""
    path = folder / "modules.json"
    if path.is_file():
        for module in json.loads(path.read_text(encoding="utf-8")):
            if str(module.get("type", "")).endswith("Transformer"):
                return str(module.get("path", ""))
    return ""


def load_token_counter(settings: ModelSettings) -> TokenizerCounter:
    """The counter for `settings.dense`, agreeing with the dense encoder built from the same settings."""
    from transformers import AutoConfig, AutoTokenizer

    resolved = resolve_model(settings.dense)
    location = resolved.location
    folder = resolved.path
    sub = (
        _st_transformer_subfolder(folder)
        if folder is not None and settings.dense_kind == "sentence-transformers"
        else ""
    )
    kwargs = {"subfolder": sub} if sub else {}
    try:
        tokenizer = AutoTokenizer.from_pretrained(location, **kwargs)
        config = AutoConfig.from_pretrained(location, **kwargs)
    except Exception as exc:
        raise ModelError(f"cannot load the tokenizer of {settings.dense!r}: {exc}") from exc
    cap = settings.max_tokens
    reserved = 0
    if settings.dense_kind == "sentence-transformers" and folder is not None:
        st_config = _read_json(folder / sub if sub else folder, "sentence_bert_config.json")
        if isinstance(st_config.get("max_seq_length"), int):
            cap = min(cap, st_config["max_seq_length"])
        prompts = _read_json(folder, "config_sentence_transformers.json").get("prompts") or {}
        prompt = prompts.get("document") or prompts.get("passage") or ""
        if prompt:
            reserved = len(tokenizer(prompt, add_special_tokens=False)["input_ids"])
    return TokenizerCounter(
        tokenizer, max_length=model_max_length(tokenizer, config, cap=cap), reserved=reserved
    )
