"""The query's best-matching facts, for the graph walk's seeds (HippoRAG 2's recognition step).

The vector retriever already holds the query's dense vector, so it searches the facts collection
(`graph/facts.py`) beside the chunk lists. Most namespaces have no facts: whether this one does
is asked of the graph store (a chunk with an extraction) at start-up and then every `recheck_s`
in the background, so a namespace without an extractor never opens a facts collection and no
query waits for the graph store.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from rayweave.cluster.errors import NotFoundError
from rayweave.cluster.settings import Settings
from rayweave.cluster.types import Hit, Level
from rayweave.cluster.vectors.store import ScoredPoint, VectorQuery, VectorStore
from rayweave.serve.fusion import SPARSE_FACTS

if TYPE_CHECKING:
    from rayweave.graph.store import GraphStore

log = logging.getLogger(__name__)

RECHECK_S = 30.0


def fact_hit(point: ScoredPoint, *, sparse: bool = False) -> Hit:
    """A fact as a hit of the `facts` list: its text, what the walk seeds from, and whether the
    namespace's facts are too sparse to rank by (`SPARSE_FACTS`)."""
    p = point.payload
    marks: dict[str, object] = {SPARSE_FACTS: True} if sparse else {}
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
            "topic": p.get("topic"),
            **marks,
        },
    )


class FactSearch:
    """Top-k facts by dense similarity, or none while the namespace has no facts. With `sections`
    (the namespace's section count) and `min_per_section`, each check also decides whether the
    facts are sparse: fewer distinct facts than `min_per_section` per section marks every hit."""

    def __init__(
        self,
        open_store: Callable[[], VectorStore],
        has_facts: Callable[[], bool],
        *,
        top_k: int,
        recheck_s: float = RECHECK_S,
        sections: Callable[[], int] | None = None,
        min_per_section: float = 0.0,
    ) -> None:
        self._open_store = open_store
        self._has_facts = has_facts
        self._sections = sections
        self.min_per_section = min_per_section
        self.top_k = top_k
        self.recheck_s = recheck_s
        self._store: VectorStore | None = None
        self._present = False
        self._sparse = False
        self._checked = -float("inf")
        self._refreshing = False
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings, collection: str) -> FactSearch | None:
        """None when fact seeds are off (`graph.fact_top_k` 0)."""
        if settings.graph.fact_top_k <= 0:
            return None
        from rayweave.cluster.vectors.service import vector_store_for
        from rayweave.graph.facts import facts_collection

        check = _ExtractionCheck(settings, collection)
        search = cls(
            lambda: vector_store_for(settings, facts_collection(collection)),
            check,
            top_k=settings.graph.fact_top_k,
            sections=check.sections,
            min_per_section=settings.serve.retrieval.fact_walk_min_facts,
        )
        search.refresh()  # at start-up, so the first query already has fact seeds
        return search

    def refresh(self) -> None:
        """Ask the graph store whether the namespace has facts, and open the facts store when it
        does. When the question fails (a stopped graph server), the last answer stands: fact
        seeds are an extra for the walk, and vector search must never fail or wait for them."""
        try:
            present = self._has_facts()
            if present and self._store is None:
                self._store = self._open_store()
            if present and self._store is not None:
                self._sparse = self._too_sparse(self._store)
            self._present = present
        except Exception as exc:  # noqa: BLE001 - the last known state stands, logged
            state = "on" if self._present else "off"
            log.warning("fact search: could not check for facts (%s); kept %s", exc, state)
        finally:
            self._checked = time.monotonic()
            self._refreshing = False

    def _too_sparse(self, store: VectorStore) -> bool:
        if self._sections is None or self.min_per_section <= 0:
            return False
        try:
            facts = store.count()
        except NotFoundError:  # extractions stored, facts not synced yet (mid-ingest)
            return self._sparse
        return facts < self.min_per_section * self._sections()

    def _store_if_present(self) -> VectorStore | None:
        """The facts store per the last check; a due check runs in the background."""
        with self._lock:
            due = time.monotonic() - self._checked >= self.recheck_s
            if due and not self._refreshing:
                self._refreshing = True
                threading.Thread(target=self.refresh, name="fact-check", daemon=True).start()
        return self._store if self._present else None

    def search(self, vector: np.ndarray) -> list[Hit]:
        store = self._store_if_present()
        if store is None:
            return []
        try:
            points = store.query(VectorQuery(mode="dense", dense=vector, limit=self.top_k))
        except NotFoundError:  # extractions stored, facts not synced yet (mid-ingest)
            return []
        except Exception as exc:  # noqa: BLE001 - the walk runs without fact seeds, logged
            log.warning("fact search failed (%s): the walk runs without fact seeds", exc)
            return []
        return [fact_hit(p, sparse=self._sparse) for p in points]

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
        close = getattr(self._has_facts, "close", None)
        if callable(close):
            close()


class _ExtractionCheck:
    """Whether the namespace's chunks keep extractions, over one graph client opened on the
    first check and reused."""

    def __init__(self, settings: Settings, collection: str) -> None:
        self.settings, self.collection = settings, collection
        self._graph: GraphStore | None = None

    def __call__(self) -> bool:
        from rayweave.graph.store import open_graph_store

        if self._graph is None:
            self._graph = open_graph_store(self.settings, namespace=self.collection)
        return self._graph.has_extractions()

    def sections(self) -> int:
        """The namespace's section chunks (asked after `__call__`, on the same client)."""
        return 0 if self._graph is None else self._graph.section_count()

    def close(self) -> None:
        if self._graph is not None:
            self._graph.close()
