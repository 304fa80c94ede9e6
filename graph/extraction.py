"""The optional LLM hook of the graph build: entities and statements an extractor reads off text.

Nothing requires it: the rule-made graph stands on its own, and an extractor's output only adds
names and RELATED_TO statements to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from rayweave.cluster.types import Chunk, Entity


@dataclass(frozen=True, slots=True, kw_only=True)
class Statement:
    """A standalone assertion an LLM extracted from a chunk: `subject -predicate-> object`."""

    subject: str
    predicate: str
    object: str
    confidence: float = 0.7


@dataclass(frozen=True, slots=True, kw_only=True)
class Extraction:
    entities: tuple[Entity, ...] = ()
    statements: tuple[Statement, ...] = ()


@runtime_checkable
class GraphExtractor(Protocol):
    """An optional (LLM) extractor: one `Extraction` per text. Never required by the builders."""

    def extract(self, texts: Sequence[str]) -> list[Extraction]: ...


def run_extractor(extractor: GraphExtractor, chunks: Sequence[Chunk]) -> dict[str, Extraction]:
    """Extractions keyed by chunk id, ready for `build_graph(extractions=...)`."""
    results = extractor.extract([c.text for c in chunks])
    if len(results) != len(chunks):
        raise ValueError(f"extractor returned {len(results)} results for {len(chunks)} texts")
    return {c.id: r for c, r in zip(chunks, results, strict=True)}
