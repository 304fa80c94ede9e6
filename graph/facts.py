"""Fact points: each distinct extracted statement as text with a dense vector, searchable by
similarity (HippoRAG 2's recognition step: a question's best-matching facts name the entities
its answer chain runs through).

Facts live in their own Qdrant collection beside the chunks' (`<collection>-facts`, dense only),
so nothing that reads chunks ever meets one. The corpus pass syncs it with the extractions kept
on chunks: only new facts are encoded, facts no chunk states any more are deleted, so the
collection always equals a fresh build from the documents that remain.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rayweave.cluster.errors import NotFoundError
from rayweave.cluster.types import stable_id
from rayweave.cluster.vectors.store import CollectionSpec, VectorPoint, VectorStore
from rayweave.graph.extraction import Extraction, Statement
from rayweave.graph.names import normalize_name

FACTS_SUFFIX = "-facts"
_PAGE = 1024
_ENCODE_BATCH = 256


def facts_collection(collection: str) -> str:
    """The collection holding `collection`'s facts."""
    return f"{collection}{FACTS_SUFFIX}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Fact:
    """One statement as the walk uses it: its text, the names it links, the chunks stating it,
    and the topic a model put it under (None when none did)."""

    id: str
    text: str
    subject: str
    object: str
    chunk_ids: tuple[str, ...]
    topic: str | None = None

    def payload(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "subject": self.subject,
            "object": self.object,
            "chunk_ids": list(self.chunk_ids),
            "topic": self.topic,
        }


def collect_facts(extractions: Mapping[str, Extraction]) -> list[Fact]:
    """Distinct facts over every chunk's extraction, merged by their normalised text (the
    wording and topic of the first chunk, by id, that states it); a fact whose subject or object
    normalises to nothing is no link and is left out."""
    merged: dict[str, tuple[Statement, set[str]]] = {}
    for chunk_id, extraction in sorted(extractions.items()):
        for st in extraction.statements:
            subject, obj = normalize_name(st.subject), normalize_name(st.object)
            if not subject or not obj:
                continue
            key = " ".join((subject, normalize_name(st.predicate), obj))
            merged.setdefault(key, (st, set()))[1].add(chunk_id)
    return [
        Fact(
            id=stable_id("fact", key),
            text=" ".join(st.text.split()),
            subject=st.subject.strip(),
            object=st.object.strip(),
            chunk_ids=tuple(sorted(chunks)),
            topic=st.topic,
        )
        for key, (st, chunks) in sorted(merged.items())
    ]


@dataclass(frozen=True, slots=True, kw_only=True)
class FactSync:
    facts: int
    added: int
    removed: int


def sync_facts(
    store: VectorStore,
    facts: Sequence[Fact],
    encode: Callable[[list[str]], np.ndarray],
    *,
    name: str,
    dense_dim: int,
) -> FactSync:
    """Make `store` (the facts collection `name`) hold exactly `facts`: encode and upsert the
    new ones, update the chunks and topic of those that moved, delete the rest. No facts drops
    it."""
    stored = _stored(store)
    if not facts:
        if stored is not None:
            store.drop()
        return FactSync(facts=0, added=0, removed=len(stored or {}))
    store.ensure_collection(
        CollectionSpec(
            name=name,
            dense_dim=dense_dim,
            sparse=False,
            keyword_fields=("chunk_id",),
            bool_fields=(),
        )
    )
    stored = stored or {}
    new = [f for f in facts if f.id not in stored]
    for start in range(0, len(new), _ENCODE_BATCH):
        part = new[start : start + _ENCODE_BATCH]
        vectors = encode([f.text for f in part])
        store.upsert(
            [
                VectorPoint(id=f.id, payload=f.payload(), dense=v)
                for f, v in zip(part, vectors, strict=True)
            ]
        )
    for f in facts:
        if f.id in stored and stored[f.id] != (f.chunk_ids, f.topic):
            store.set_payload(
                {"chunk_id": f.id}, {"chunk_ids": list(f.chunk_ids), "topic": f.topic}
            )
    gone = sorted(set(stored) - {f.id for f in facts})
    if gone:
        store.delete({"chunk_id": gone})
    return FactSync(facts=len(facts), added=len(new), removed=len(gone))


def _stored(store: VectorStore) -> dict[str, tuple[tuple[str, ...], str | None]] | None:
    """Fact id -> its chunk ids and topic, for every stored fact; None when the collection is
    absent."""
    try:
        store.spec()
    except NotFoundError:
        return None
    out: dict[str, tuple[tuple[str, ...], str | None]] = {}
    offset: str | None = None
    while True:
        points, offset = store.scroll(limit=_PAGE, offset=offset)
        out.update(
            {
                p.id: (tuple(p.payload.get("chunk_ids") or ()), p.payload.get("topic"))
                for p in points
            }
        )
        if offset is None:
            return out
