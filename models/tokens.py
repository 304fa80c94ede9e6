"""Token counting with the dense model's tokenizer, without loading the model's weights.

Chunk sizes are in the dense model's tokens, and the chunker runs in its own Ray actors: it needs
the tokenizer and the truncation length the encoder will apply, not 2 GB of BGE-M3 weights.
`load_token_counter` reads both from the checkpoint's files the way the encoder loaders do
(`sentence_bert_config.json`'s `max_seq_length`, the position table, the document prompt).
`TokenizerCounter.from_model` opens a folder's `tokenizer.json` alone (benchmarks, tests), and
`WordPieceEstimate` is a dependency-free estimate for tests and dry runs.
"""

from __future__ import annotations

import json
import re
import threading
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rayweave.cluster.errors import ModelError
from rayweave.cluster.settings import ModelSettings
from rayweave.models.resolve import resolve_model

__all__ = [
    "TokenizerCounter",
    "WordPieceEstimate",
    "load_token_counter",
    "model_max_length",
]


def _bert_punctuation() -> str:
    """BERT's punctuation: ASCII non-alphanumeric symbols plus every Unicode P* character (BMP)."""
    chars = {chr(c) for c in range(33, 127) if not chr(c).isalnum()}
    chars.update(
        chr(c) for c in range(128, 0x10000) if unicodedata.category(chr(c)).startswith("P")
    )
    return "".join(re.escape(c) for c in sorted(chars))


_PUNCT = _bert_punctuation()
# Words as BERT's pre-tokenizer cuts them: runs of non-space, non-punctuation, or one punctuation
# mark.
_BERT_WORDS = re.compile(f"[^\\s{_PUNCT}]+|[{_PUNCT}]")
_CACHE_LIMIT = 200_000
_SMALL_BATCH = 32
_UNBOUNDED = 1_000_000  # `model_max_length` cap when only the tokenizer is known


def _bert_like(backend: Any) -> bool:
    """BertNormalizer (or none) + BertPreTokenizer: a text's count is the sum of its words'."""
    return type(backend.pre_tokenizer).__name__ == "BertPreTokenizer" and type(
        backend.normalizer
    ).__name__ in ("BertNormalizer", "NoneType")


class TokenizerCounter:
    """`count_tokens` (no special tokens, no truncation) and the content length the encoder reads.

    Calls into the tokenizer hold `lock`: a Rust-backed tokenizer stores truncation settings on
    itself, and two threads reconfiguring it at once fail with "Already borrowed" (Serve replicas
    encode from a thread pool). Whoever else calls this tokenizer takes the same lock.

    With `word_cache`, which only BERT-style fast tokenizers take up (BertNormalizer +
    BertPreTokenizer + WordPiece, e.g. MiniLM; others ignore it), a text's count is the sum of
    its words' counts, because the pre-tokenizer splits on whitespace and punctuation before
    WordPiece runs; words repeat heavily in technical text, so counts come from a per-word cache
    and only new words reach the tokenizer (several times faster than encoding every text).
    """

    def __init__(
        self, tokenizer: Any, *, max_length: int, reserved: int = 0, word_cache: bool = False
    ) -> None:
        self.tokenizer = tokenizer
        self.lock = threading.Lock()
        self.max_length = max_length
        self.special_tokens = int(tokenizer.num_special_tokens_to_add(pair=False))
        self.reserved = reserved
        backend = getattr(tokenizer, "backend_tokenizer", None) if word_cache else None
        self._backend = backend if backend is not None and _bert_like(backend) else None
        self._lower = self._backend is not None and "lowercase=True" in repr(
            self._backend.normalizer
        )
        self._cache: dict[str, int] | None = {} if self._backend is not None else None

    @classmethod
    def from_model(cls, ref: str | Path, *, word_cache: bool = True) -> TokenizerCounter:
        """From a local model folder (a path or `package:` reference) holding `tokenizer.json`.

        Only the tokenizer is read, so `max_length` is the tokenizer's own limit, not the
        encoder's truncation (`load_token_counter` reads that).
        """
        from transformers import PreTrainedTokenizerFast

        folder = resolve_model(str(ref)).path
        path = folder / "tokenizer.json" if folder is not None and folder.is_dir() else folder
        if path is None or not path.is_file():
            raise ModelError(f"no tokenizer.json in {folder if folder is not None else ref}")
        tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(path))  # type: ignore[no-untyped-call]
        return cls(
            tokenizer,
            max_length=model_max_length(tokenizer, None, cap=_UNBOUNDED),
            word_cache=word_cache,
        )

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
            if self._cache is not None:
                return self._count_by_words(texts, self._cache)
            encoded = self.tokenizer(
                list(texts),
                add_special_tokens=False,
                truncation=False,
                return_attention_mask=False,
                return_token_type_ids=False,
                verbose=False,
            )
        return [len(ids) for ids in encoded["input_ids"]]

    def _count_by_words(self, texts: Sequence[str], cache: dict[str, int]) -> list[int]:
        words_per_text = [_BERT_WORDS.findall(t.lower() if self._lower else t) for t in texts]
        missing = list({w for words in words_per_text for w in words if w not in cache})
        if missing:
            if len(cache) + len(missing) > _CACHE_LIMIT:
                cache.clear()
            cache.update(zip(missing, self._encode_words(missing), strict=True))
        get = cache.__getitem__
        return [sum(map(get, words)) for words in words_per_text]

    def _encode_words(self, words: list[str]) -> list[int]:
        """Counts of single words straight from the Rust tokenizer, truncation and padding off.

        The caller holds `lock`: the transformers wrapper leaves its last call's truncation on
        the backend, and this turns it off.
        """
        backend = self._backend
        assert backend is not None
        if backend.truncation is not None:
            backend.no_truncation()
        if backend.padding is not None:
            backend.no_padding()
        if len(words) < _SMALL_BATCH:  # a thread-pool round trip costs more than it saves
            return [len(backend.encode(w, add_special_tokens=False).ids) for w in words]
        encodings = backend.encode_batch_fast(words, add_special_tokens=False)
        return [len(e.ids) for e in encodings]

    def __getstate__(self) -> dict[str, Any]:  # Ray ships counters to tasks; a lock cannot travel
        return {
            "tokenizer": self.tokenizer,
            "max_length": self.max_length,
            "reserved": self.reserved,
            "word_cache": self._cache is not None,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(  # type: ignore[misc]
            state["tokenizer"],
            max_length=state["max_length"],
            reserved=state["reserved"],
            word_cache=state["word_cache"],
        )


_PIECES = re.compile(r"[A-Za-z]+|\d|[^\sA-Za-z\d]")


class WordPieceEstimate:
    """A tokenizer-free estimate: letter runs count one token per 6 letters, digits and symbols
    one each. `max_tokens` is what the packaged encoder takes, so that it is a `TokenCounter`."""

    def __init__(self, max_tokens: int = 512) -> None:
        self._max_tokens = max_tokens

    @property
    def max_tokens(self) -> int:
        return self._max_tokens

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        out = []
        for text in texts:
            n = 0
            for piece in _PIECES.findall(text):
                n += (len(piece) + 5) // 6 if piece[0].isalpha() else 1
            out.append(n)
        return out


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


def load_token_counter(settings: ModelSettings, *, word_cache: bool = False) -> TokenizerCounter:
    """The counter for `settings.dense`, agreeing with the dense encoder built from the same
    settings (`word_cache`: see `TokenizerCounter`)."""
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
        tokenizer,
        max_length=model_max_length(tokenizer, config, cap=cap),
        reserved=reserved,
        word_cache=word_cache,
    )
