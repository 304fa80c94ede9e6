"""Plans: what becomes a chunk (spans of the document text), before ids and metadata."""

from __future__ import annotations

from dataclasses import dataclass, field

from rayweave.cluster.types import ContentType
from rayweave.ingest.code import CodeUnit

__all__ = ["Plan", "SectionPlan", "Span"]


@dataclass(slots=True)
class Span:
    start: int
    end: int
    tokens: int
    path: tuple[str, ...]
    content_type: ContentType
    language: str | None = None
    unit: CodeUnit | None = None


@dataclass(slots=True)
class SectionPlan(Span):
    propositions: list[Span] = field(default_factory=list)


@dataclass(slots=True)
class Plan:
    text: str
    sections: list[SectionPlan]
    summary_parts: list[tuple[str, int]]  # (text, tokens): title, lead, then the outline
    summary_primary: int = 2  # leading parts that are lines of their own (title, lead)
    outline_separator: str = "; "
    keywords: tuple[str, ...] = ()
    warnings: list[str] = field(default_factory=list)
    # Code whose summary parts are names and signatures alone: no docstring (`Chunk.outline`).
    outline_only: bool = False
