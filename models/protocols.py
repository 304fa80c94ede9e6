"""What every encoder offers, so ingestion and serving never depend on a concrete model class."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from rayweave.cluster.types import Entity, SparseVector

TextKind = Literal["query", "document"]


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens the way the embedding model's tokenizer does (chunk sizes are in tokens).

    `count_tokens` counts text tokens only (no special tokens) and never truncates; `max_tokens` is
    how many such tokens one input may hold before the encoder truncates it.
    """

    @property
    def max_tokens(self) -> int: ...

    def count_tokens(self, texts: Sequence[str]) -> list[int]: ...


@runtime_checkable
class DenseEncoder(TokenCounter, Protocol):
    """Texts to L2-normalised float32 vectors of `dim` columns."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def encode(self, texts: Sequence[str], *, kind: TextKind = "document") -> np.ndarray: ...


@runtime_checkable
class SparseEncoder(Protocol):
    """Texts to sparse lexical vectors (token id -> weight)."""

    @property
    def name(self) -> str: ...

    def encode(
        self, texts: Sequence[str], *, kind: TextKind = "document"
    ) -> list[SparseVector]: ...


@runtime_checkable
class MultiVectorEncoder(Protocol):
    """Texts to one vector per token (ColBERT-style late interaction)."""

    def encode_multi(
        self, texts: Sequence[str], *, kind: TextKind = "document"
    ) -> list[np.ndarray]: ...


@runtime_checkable
class ImageEncoder(Protocol):
    """Images and texts into one space (CLIP)."""

    @property
    def dim(self) -> int: ...

    def encode_images(self, images: Sequence[object]) -> np.ndarray: ...

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray: ...


@runtime_checkable
class EntityExtractor(Protocol):
    """Entities (named entities, noun phrases, code symbols) mentioned in each text."""

    def extract(
        self, texts: Sequence[str], *, language: str | None = None
    ) -> list[list[Entity]]: ...


@runtime_checkable
class ChatModel(Protocol):
    """A chat LLM: OpenAI-compatible endpoint or a local causal LM."""

    def complete(
        self, messages: Sequence[dict[str, str]], *, max_tokens: int = 256, temperature: float = 0.0
    ) -> str: ...
