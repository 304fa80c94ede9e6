"""What chunking hands back: one document's chunks with their embed texts, or a batch of them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy.typing as npt

from rayweave.cluster.types import Chunk, Document, Level
from rayweave.ingest.readers import ReadError

__all__ = ["ChunkBatch", "ChunkedDocument", "Embed", "Summarize"]

Embed = Callable[[list[str]], npt.NDArray[Any]]
Summarize = Callable[[Document], str]


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkedDocument:
    """All chunks of one document: the summary, then sections, then propositions.

    `embed_texts[i]` is what the encoders should see for `chunks[i]` (context header, links
    reduced to their text, code rendered in words); `chunks[i].text` is what is stored and shown.
    """

    doc_id: str
    source: str
    text: str
    chunks: tuple[Chunk, ...]
    embed_texts: tuple[str, ...]
    warnings: tuple[str, ...] = ()

    @property
    def summary(self) -> Chunk:
        return self.chunks[0]

    @property
    def sections(self) -> tuple[Chunk, ...]:
        return tuple(c for c in self.chunks if c.level == Level.SECTION)

    @property
    def propositions(self) -> tuple[Chunk, ...]:
        return tuple(c for c in self.chunks if c.level == Level.PROPOSITION)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkBatch:
    chunked: list[ChunkedDocument] = field(default_factory=list)
    errors: list[ReadError] = field(default_factory=list)
