"""Tokenise, bucket by length and run a core over texts: the loop every transformer encoder shares.

Texts are tokenised once without padding, planned into length-sorted batches under a token budget
(`models.batching`), padded per batch to that batch's longest row, run, and handed back with the
positions they came from, so encoders only write the per-model post-processing.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, get_args

import numpy as np

from rayweave.models.batching import pad_batch, plan_batches, round_up
from rayweave.models.precision import RunOptions
from rayweave.models.protocols import TextKind
from rayweave.models.runtime import Runner
from rayweave.models.tokens import TokenizerCounter

# Tokenising a 5 MB text to keep its first 512 tokens wastes seconds. Texts are cut at this many
# characters per allowed token first; real tokens are far shorter, so the truncated ids are the
# same unless a text is mostly whitespace.
_CHARS_PER_TOKEN_BOUND = 64


TEXT_KINDS: tuple[str, ...] = get_args(TextKind)


def check_texts(texts: Sequence[str], kind: str) -> None:
    """Reject the two mistakes that otherwise fail deep inside a tokenizer."""
    if isinstance(texts, str):
        raise TypeError("expected a sequence of texts, got one string; wrap it in a list")
    if kind not in TEXT_KINDS:
        raise ValueError(f"unknown text kind {kind!r}; valid: {', '.join(TEXT_KINDS)}")


@dataclass(frozen=True, slots=True)
class EncodedBatch:
    """One batch after the forward: input positions, the padded inputs, and the core's outputs."""

    indices: np.ndarray
    input_ids: np.ndarray
    attention_mask: np.ndarray
    outputs: tuple[np.ndarray, ...]


class TextEngine:
    """A tokenizer and a runner, plus the batching limits that bound one forward's memory."""

    def __init__(
        self,
        tokenizer: Any,
        runner: Runner,
        *,
        max_length: int,
        batch_tokens: int,
        max_batch_size: int,
        pad_to_multiple_of: int = 1,
    ) -> None:
        if max_length < 2:
            raise ValueError(f"max_length must be >= 2, got {max_length}")
        self.tokenizer = tokenizer
        self.runner = runner
        self.max_length = max_length
        self.batch_tokens = max(batch_tokens, round_up(max_length, pad_to_multiple_of))
        self.max_batch_size = max_batch_size
        self.pad_to_multiple_of = pad_to_multiple_of
        pad = tokenizer.pad_token_id
        self.pad_id = int(pad) if pad is not None else 0
        self.counter = TokenizerCounter(tokenizer, max_length=max_length)

    @classmethod
    def from_options(
        cls,
        tokenizer: Any,
        runner: Runner,
        *,
        max_length: int,
        options: RunOptions,
        batch_tokens: int | None = None,
    ) -> TextEngine:
        """An engine with the configured batching limits; `batch_tokens` overrides the budget."""
        return cls(
            tokenizer,
            runner,
            max_length=max_length,
            batch_tokens=options.batch_tokens if batch_tokens is None else batch_tokens,
            max_batch_size=options.rows_per_forward,
            pad_to_multiple_of=options.pad_to_multiple_of,
        )

    @property
    def max_content_tokens(self) -> int:
        """Tokens of text a single input may hold before truncation (specials excluded)."""
        limit: int = self.counter.max_tokens
        return limit

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids with special tokens, truncated to `max_length`."""
        if not texts:
            return []
        limit = self.max_length * _CHARS_PER_TOKEN_BOUND
        cut = [t if len(t) <= limit else t[:limit] for t in texts]
        with self.counter.lock:
            encoded = self.tokenizer(
                cut,
                add_special_tokens=True,
                truncation=True,
                max_length=self.max_length,
                return_attention_mask=False,
                return_token_type_ids=False,
            )
        return [list(ids) for ids in encoded["input_ids"]]

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens per text as the model's tokenizer splits it: no special tokens, no truncation."""
        counts: list[int] = self.counter.count_tokens(texts)
        return counts

    def run(self, texts: Sequence[str]) -> Iterator[EncodedBatch]:
        yield from self.run_ids(self.tokenize(texts))

    def run_ids(self, rows: Sequence[Sequence[int]]) -> Iterator[EncodedBatch]:
        lengths = [len(r) for r in rows]
        plan = plan_batches(
            lengths,
            batch_tokens=self.batch_tokens,
            max_batch_size=self.max_batch_size,
            pad_to_multiple_of=self.pad_to_multiple_of,
            max_width=self.max_length,
        )
        names = self.runner.input_names
        for batch in plan:
            ids, mask = pad_batch(
                [rows[i] for i in batch.indices], width=batch.width, pad_id=self.pad_id
            )
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in names:
                feeds["token_type_ids"] = np.zeros_like(ids)
            outputs = self.runner(feeds)
            yield EncodedBatch(
                indices=np.asarray(batch.indices, dtype=np.int64),
                input_ids=ids,
                attention_mask=mask,
                outputs=outputs,
            )


class EngineEncoder:
    """What every encoder over a `TextEngine` shares: its name and the engine's token limits."""

    def __init__(self, *, name: str, engine: TextEngine) -> None:
        self._name = name
        self.engine = engine

    @property
    def name(self) -> str:
        return self._name

    @property
    def max_tokens(self) -> int:
        return self.engine.max_content_tokens

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self.engine.count_tokens(texts)
