"""The query's best-matching facts, for the graph walk's seeds (HippoRAG 2's recognition step).

The vector retriever already holds the query's dense vector, so it searches the facts collection
(`graph/facts.py`) beside the chunk lists. Most namespaces have no facts: whether this one does
is asked of the graph store (a chunk with an extraction) at most every `recheck_s`, so a
namespace without an extractor never opens a facts collection.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import numpy as np

from rayweave.cluster.errors import NotFoundError
from rayweave.cluster.settings import Settings
from rayweave.cluster.types import Hit, Level
from rayweave.cluster.vectors.store import ScoredPoint, VectorQuery, VectorStore

RECHECK_S = 30.0


def fact_hit(point: ScoredPoint) -> Hit:
    """A fact as a hit of the `facts` list: its text, and what the walk seeds from."""
    p = point.payload
    return Hit(
        id=point.id,
        doc_id="",
        text=str(p.get("text", "")),
        score=float(point.score),
        level=Level.PROPOSITION,
        retrievers=("facts",),
        metadata={
            "subject": str(p.get("subject", "")),
            "object": str(p.get("object", "")),
            "chunk_ids": list(p.get("chunk_ids") or ()),
        },
    )


class FactSearch:
    """Top-k facts by dense similarity, or none while the namespace has no facts."""

    def __init__(
        self,
        open_store: Callable[[], VectorStore],
        has_facts: Callable[[], bool],
        *,
        top_k: int,
        recheck_s: float = RECHECK_S,
    ) -> None:
        self._open_store = open_store
        self._has_facts = has_facts
        self.top_k = top_k
        self.recheck_s = recheck_s
        self._store: VectorStore | None = None
        self._present = False
        self._checked = -float("inf")
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings, collection: str) -> FactSearch | None:
        """None when fact seeds are off (`graph.fact_top_k` 0)."""
        if settings.graph.fact_top_k <= 0:
            return None
        from rayweave.cluster.vectors.service import vector_store_for
        from rayweave.graph.facts import facts_collection

        def has_facts() -> bool:
            from rayweave.graph.store import open_graph_store

            graph = open_graph_store(settings, namespace=collection)
            try:
                return graph.has_extractions()
            finally:
                graph.close()

        return cls(
            lambda: vector_store_for(settings, facts_collection(collection)),
            has_facts,
            top_k=settings.graph.fact_top_k,
        )

    def _store_if_present(self) -> VectorStore | None:
        with self._lock:
            now = time.monotonic()
            if now - self._checked >= self.recheck_s:
                self._checked = now
                self._present = self._has_facts()
                if self._present and self._store is None:
                    self._store = self._open_store()
            return self._store if self._present else None

    def search(self, vector: np.ndarray) -> list[Hit]:
        store = self._store_if_present()
        if store is None:
            return []
        try:
            points = store.query(VectorQuery(mode="dense", dense=vector, limit=self.top_k))
        except NotFoundError:  # extractions stored, facts not synced yet (mid-ingest)
            return []
        return [fact_hit(p) for p in points]

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
