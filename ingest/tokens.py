"""Token counters for chunk sizing without loading an encoder.

Chunk sizes are in the embedding model's tokens. A `DenseEncoder` is itself a `TokenCounter`,
but the chunking step needs only the tokenizer: `TokenizerCounter` loads a Hugging Face
`tokenizer.json` (fast, Rust, batched; truncation and padding switched off, special tokens not
counted) so Ray read/chunk tasks stay light. `WordPieceEstimate` is a dependency-free estimate
for tests and dry runs.
"""

from __future__ import annotations

import importlib.util
import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rayweave.cluster.errors import ModelError

__all__ = ["TokenizerCounter", "WordPieceEstimate", "model_folder"]


def model_folder(ref: str) -> Path:
    """Resolve a model reference to a folder: a path, or `package:<module>[/<subdir>]`.

    The package is located with `importlib.util.find_spec`, never imported.
    """
    if ref.startswith("package:"):
        module, _, sub = ref.removeprefix("package:").partition("/")
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.submodule_search_locations:
            raise ModelError(f"model package {module!r} is not installed (from {ref!r})")
        folder = Path(next(iter(spec.submodule_search_locations)))
        return folder / sub if sub else folder
    return Path(ref).expanduser()


def _bert_punctuation() -> str:
    """BERT's punctuation: ASCII non-alphanumeric symbols plus every Unicode P* character (BMP)."""
    chars = {chr(c) for c in range(33, 127) if not chr(c).isalnum()}
    chars.update(
        chr(c) for c in range(128, 0x10000) if unicodedata.category(chr(c)).startswith("P")
    )
    return "".join(re.escape(c) for c in sorted(chars))


_PUNCT = _bert_punctuation()
# Words as BERT's pre-tokenizer cuts them: runs of non-space, non-punctuation, or one punctuation mark.
_BERT_WORDS = re.compile(f"[^\\s{_PUNCT}]+|[{_PUNCT}]")
_CACHE_LIMIT = 200_000
_SMALL_BATCH = 32


class TokenizerCounter:
    """Counts tokens with a Hugging Face fast tokenizer, without special tokens.

    For BERT-style tokenizers (BertNormalizer + BertPreTokenizer + WordPiece, e.g. MiniLM) a
    text's count is the sum of its words' counts, because the pre-tokenizer splits on whitespace
    and punctuation before WordPiece runs; words repeat heavily in technical text, so counts are
    served from a per-word cache and only new words reach the tokenizer (several times faster
    than encoding every text). Other tokenizers (BPE, SentencePiece) are encoded whole, batched.
    """

    def __init__(self, tokenizer: Any, *, word_cache: bool | None = None) -> None:
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self._tok = tokenizer
        bert_like = type(tokenizer.pre_tokenizer).__name__ == "BertPreTokenizer" and type(
            tokenizer.normalizer
        ).__name__ in ("BertNormalizer", "NoneType")
        self._lower = bool(bert_like and "lowercase=True" in repr(tokenizer.normalizer))
        self._cache: dict[str, int] | None = (
            {} if (bert_like if word_cache is None else word_cache) else None
        )

    @classmethod
    def from_model(cls, ref: str | Path, *, word_cache: bool | None = None) -> TokenizerCounter:
        """From a model folder (or `package:` reference) holding `tokenizer.json`."""
        from tokenizers import Tokenizer

        folder = model_folder(str(ref))
        path = folder / "tokenizer.json" if folder.is_dir() else folder
        if not path.is_file():
            raise ModelError(f"no tokenizer.json in {folder}")
        return cls(Tokenizer.from_file(str(path)), word_cache=word_cache)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        cache = self._cache
        if cache is None:
            encodings = self._tok.encode_batch_fast(list(texts), add_special_tokens=False)
            return [len(e.ids) for e in encodings]
        words_per_text = [_BERT_WORDS.findall(t.lower() if self._lower else t) for t in texts]
        missing = list({w for words in words_per_text for w in words if w not in cache})
        if missing:
            if len(cache) + len(missing) > _CACHE_LIMIT:
                cache.clear()
            if len(missing) < _SMALL_BATCH:  # a thread-pool round trip costs more than it saves
                encode = self._tok.encode
                cache.update((w, len(encode(w, add_special_tokens=False).ids)) for w in missing)
            else:
                encodings = self._tok.encode_batch_fast(missing, add_special_tokens=False)
                cache.update(zip(missing, (len(e.ids) for e in encodings), strict=True))
        get = cache.__getitem__
        return [sum(map(get, words)) for words in words_per_text]

    def __getstate__(self) -> dict[str, Any]:  # Ray ships counters to tasks
        return {"json": self._tok.to_str(), "word_cache": self._cache is not None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        from tokenizers import Tokenizer

        self.__init__(Tokenizer.from_str(state["json"]), word_cache=state["word_cache"])  # type: ignore[misc]


_PIECES = re.compile(r"[A-Za-z]+|\d|[^\sA-Za-z\d]")


class WordPieceEstimate:
    """A tokenizer-free estimate: letters runs count one token per 6 letters, digits and symbols one each."""

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        out = []
        for text in texts:
            n = 0
            for piece in _PIECES.findall(text):
                n += (len(piece) + 5) // 6 if piece[0].isalpha() else 1
            out.append(n)
        return out
