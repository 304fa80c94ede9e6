"""The optional extraction hook of the graph build: entities and facts an extractor reads off text.

Nothing requires it: the rule-made graph stands on its own. An extractor's output (a language
model's, a file's, or the spaCy rules') is kept on each section chunk and cached by content hash;
the corpus pass turns its entities into the entity layer, its statements into RELATED_TO edges
(subject -predicate-> object) and fact points whose vectors seed the walk (HippoRAG 2).
"""

from __future__ import annotations

import hashlib
import json
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
    topic: str | None = None

    @property
    def text(self) -> str:
        """The fact as one sentence-like string: what fact vectors embed and paths show."""
        return f"{self.subject} {self.predicate} {self.object}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Extraction:
    """What an extractor read off one text; `error` set (and nothing else) when it failed.

    A failed extraction is a value, not an exception, so one bad answer is counted and reported
    for its chunk and never stops an ingest.
    """

    entities: tuple[Entity, ...] = ()
    statements: tuple[Statement, ...] = ()
    error: str | None = None


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


def encode_extraction(extraction: Extraction) -> str:
    """JSON for a graph property or a cache row (a Cypher property holds scalars and lists of
    scalars only). Failed extractions are never encoded: a failure is not cached."""
    return json.dumps(
        {
            "entities": [[e.name, e.kind] for e in extraction.entities],
            "statements": [
                [s.subject, s.predicate, s.object, s.confidence, s.topic]
                for s in extraction.statements
            ],
        },
        ensure_ascii=False,
    )


def decode_extraction(text: object) -> Extraction:
    """The inverse of `encode_extraction`; entity ids are re-derived from the names."""
    data = json.loads(str(text))
    entities = tuple(_entity(str(name), str(kind)) for name, kind in data.get("entities", ()))
    statements = tuple(
        Statement(
            subject=str(s),
            predicate=str(p),
            object=str(o),
            confidence=float(conf),
            topic=None if topic is None else str(topic),
        )
        for s, p, o, conf, topic in data.get("statements", ())
    )
    return Extraction(entities=entities, statements=statements)


def _entity(name: str, kind: str) -> Entity:
    from rayweave.graph.names import entity_id, normalize_name

    return Entity(id=entity_id(normalize_name(name)), name=name, kind=kind or "concept")


def extraction_key(extractor: str, text: str) -> str:
    """The cache key of one text under one extractor (its spec and prompt version): a content
    hash, so an unchanged chunk is never sent to the model twice, in any namespace."""
    digest = hashlib.sha256(f"{extractor}\0{text}".encode()).hexdigest()
    return f"extraction:{digest}"
