"""Vector retrieval over the one collection that holds every chunk level.

Flat mode searches dense and sparse vectors separately (so that fusion can weight them per
profile). Hierarchical mode follows seed 002: documents (their summaries) narrow the sections
searched, and sections narrow the propositions; a chunk's score adds a decayed share of its
ancestors' scores, so a precise proposition inside a relevant section of a relevant document wins.

Only `visible` points are ever returned: the ingest writer flips that flag once a whole
document is in both stores.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Literal

import numpy as np

from rayweave.cluster.settings import RetrievalSettings, Settings
from rayweave.cluster.types import Hit, Level, SparseVector, view_of
from rayweave.cluster.vectors.store import ScoredPoint, VectorQuery, VectorStore
from rayweave.models.protocols import DenseEncoder, SparseEncoder
from rayweave.serve.batching import MicroBatcher
from rayweave.serve.fact_search import FactSearch
from rayweave.serve.fusion import cap_per_document
from rayweave.serve.lexical_query import without_language_words
from rayweave.serve.schemas import ContentScope
from rayweave.serve.search import FACTS, RankedLists, RetrievalQuery
from rayweave.serve.tracing import stage
from rayweave.serve.views import OUTLINE, VIEW_ID

HIERARCHY_DECAY = 0.5
# What a search hit carries before hydration: enough to fuse, cap per document and seed the
# graph; text, title and section are read once, for the page (`SearchPipeline`).
METADATA_FIELDS = ("parent_id", "position", "content_type", "language", "prev_id", "next_id")
RANKING_FIELDS = ("doc_id", "level", "source", "children_ids", "outline", *METADATA_FIELDS)
# A query's dense vector, and its sparse one when the plan fuses a sparse list.
Encoded = tuple[np.ndarray, SparseVector | None]


def hit_from_point(point: ScoredPoint, retriever: str, *, ranked: bool = False) -> Hit:
    """A hit from a stored point; `ranked` (a search list's hit) adds the unit it resolves to
    before fusion (`serve/views.py`)."""
    p = point.payload
    metadata = {k: p.get(k) for k in METADATA_FIELDS if p.get(k) is not None}
    level = Level(str(p.get("level", Level.PROPOSITION.value)))
    if ranked:
        view = view_of(
            level,
            point.id,
            parent_id=p.get("parent_id"),
            children=p.get("children_ids") or (),
            sole=p.get("prev_id") is None and p.get("next_id") is None,
        )
        if view != (point.id, point.id, False):
            metadata[VIEW_ID] = view
            # A namespace ingested before `Chunk.outline` existed keeps its summaries' votes.
            if view[2] and level is Level.DOCUMENT and p.get("outline", True):
                metadata[OUTLINE] = True
    return Hit(
        id=point.id,
        doc_id=str(p.get("doc_id", "")),
        text=str(p.get("text", "")),
        score=float(point.score),
        level=level,
        source=str(p.get("source", "")),
        title=str(p.get("title", "")),
        section_path=tuple(p.get("section_path") or ()),
        retrievers=(retriever,) if retriever else (),
        metadata=metadata,
    )


def _filter(query: RetrievalQuery, **extra: object) -> dict[str, Any]:
    flt: dict[str, Any] = {"visible": True}
    flt.update({k: v for k, v in query.filters.items() if v})
    if query.level and query.level != "any":
        flt["level"] = query.level
    flt.update(extra)
    return flt


class VectorSearch:
    def __init__(
        self,
        *,
        store: VectorStore,
        dense: DenseEncoder,
        sparse: SparseEncoder | None,
        settings: RetrievalSettings,
        batch_max: int = 1,
        batch_wait_s: float = 0.0,
        facts: FactSearch | None = None,
    ) -> None:
        self.store = store
        self.dense = dense
        self.sparse = sparse
        self.settings = settings
        # (dense text, sparse text or None when the plan fuses no sparse list)
        self.encoder: MicroBatcher[tuple[str, str | None], Encoded] = MicroBatcher(
            self._encode_batch, max_batch=batch_max, wait_s=batch_wait_s
        )
        # The sparse pass runs beside the dense one: ONNX Runtime releases the GIL, so a lone
        # query's two encodes take the longer one's time on two cores, not their sum.
        self._sparse_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sparse-encode")
        self.facts = facts

    @classmethod
    def from_settings(
        cls, settings: Settings, *, shared: bool, collection: str | None = None
    ) -> VectorSearch:
        from rayweave.cluster.vectors.replica_copy import replica_vector_store
        from rayweave.cluster.vectors.service import vector_store_for
        from rayweave.models.factory import build_dense_encoder, build_sparse_encoder, run_options

        store = (
            replica_vector_store(settings, collection)
            if shared
            else vector_store_for(settings, collection, shared=False)
        )
        # A query's vector must not depend on which other queries arrived with it.
        invariant = run_options(settings.models).plan.batch_invariant
        return cls(
            store=store,
            dense=build_dense_encoder(settings.models),
            sparse=build_sparse_encoder(settings.models),
            settings=settings.serve.retrieval,
            batch_max=settings.serve.encode_batch_max if invariant else 1,
            batch_wait_s=settings.serve.encode_batch_wait_ms / 1000,
            facts=FactSearch.from_settings(settings, collection or settings.qdrant.collection),
        )

    def close(self) -> None:
        self._sparse_pool.shutdown(wait=False)
        self.store.close()
        if self.facts is not None:
            self.facts.close()

    def _encode_batch(self, items: list[tuple[str, str | None]]) -> list[Encoded]:
        """Dense vectors of every query, sparse ones of those that asked: two forward passes
        for the whole group of concurrent queries, at the same time."""
        wanted = [i for i, (_, sparse) in enumerate(items) if sparse is not None]
        pending: Future[list[SparseVector]] | None = None
        if wanted and self.sparse is not None:
            pending = self._sparse_pool.submit(
                self.sparse.encode, [str(items[i][1]) for i in wanted], kind="query"
            )
        vectors = self.dense.encode([text for text, _ in items], kind="query")
        sparse = dict(zip(wanted, pending.result(), strict=True)) if pending is not None else {}
        return [(vectors[i], sparse.get(i)) for i in range(len(items))]

    async def retrieve(self, query: RetrievalQuery) -> RankedLists:
        plan = query.plan
        with stage("encode", sparse=int(plan.sparse)):
            vec, sp = await self.encoder((query.text, self._sparse_text(query)))
        if plan.hierarchical:
            lists = {"hierarchical": await asyncio.to_thread(self._hierarchical, query, vec, sp)}
        else:
            lists = await asyncio.to_thread(self._flat, query, vec, sp)
        if plan.graph and self.facts is not None:
            facts = await asyncio.to_thread(self.facts.search, vec)
            if facts:
                lists[FACTS] = facts
        return lists

    def _sparse_text(self, query: RetrievalQuery) -> str | None:
        """The sparse query's text: a code question's without its language words."""
        if not query.plan.sparse:
            return None
        if query.plan.scope is ContentScope.CODE and self.settings.code_sparse_drop_language:
            return without_language_words(query.text)
        return query.text

    def _flat(self, query: RetrievalQuery, vec: np.ndarray, sp: SparseVector | None) -> RankedLists:
        plan = query.plan
        limit = plan.candidates * self.settings.diversity_factor
        flt = _filter(query)
        names, requests = [], []
        if plan.dense:
            names.append("dense")
            requests.append(
                VectorQuery(
                    mode="dense", dense=vec, limit=limit, filter=flt, with_payload=RANKING_FIELDS
                )
            )
        if plan.sparse and sp is not None and sp.indices:
            names.append("sparse")
            requests.append(
                VectorQuery(
                    mode="sparse", sparse=sp, limit=limit, filter=flt, with_payload=RANKING_FIELDS
                )
            )
        results = self.store.query_batch(requests) if requests else []
        lists: RankedLists = {}
        for name, points in zip(names, results, strict=True):
            hits = [hit_from_point(p, name, ranked=True) for p in points]
            lists[name] = (
                cap_per_document(hits, max_per_document=1)[: plan.candidates]
                if self.settings.diversity_factor > 1
                else hits
            )
        return lists

    def _hierarchical(
        self, query: RetrievalQuery, vec: np.ndarray, sp: SparseVector | None
    ) -> list[Hit]:
        plan = query.plan
        mode: Literal["hybrid", "dense"] = "hybrid" if sp is not None and sp.indices else "dense"

        def search(limit: int, **extra: object) -> list[ScoredPoint]:
            points: list[ScoredPoint] = self.store.query(
                VectorQuery(
                    mode=mode,
                    dense=vec,
                    sparse=sp,
                    limit=limit,
                    filter=_filter(query, **extra),
                    with_payload=RANKING_FIELDS,
                )
            )
            return points

        docs = search(max(10, plan.top_k), level=Level.DOCUMENT.value)
        if not docs:
            return []
        doc_score = {str(p.payload["doc_id"]): p.score for p in docs}
        sections = search(plan.candidates, level=Level.SECTION.value, doc_id=list(doc_score))
        section_score = {
            p.id: p.score + HIERARCHY_DECAY * doc_score.get(str(p.payload["doc_id"]), 0.0)
            for p in sections
        }
        props = (
            search(plan.candidates, level=Level.PROPOSITION.value, parent_id=list(section_score))
            if section_score
            else []
        )
        scored: dict[str, tuple[float, ScoredPoint]] = {}
        for p in sections:
            scored[p.id] = (section_score[p.id], p)
        for p in props:
            parent = section_score.get(str(p.payload.get("parent_id")), 0.0)
            scored[p.id] = (p.score + HIERARCHY_DECAY * parent, p)
        ranked = sorted(scored.values(), key=lambda t: -t[0])[: plan.candidates]
        return [hit_from_point(p, "hierarchical", ranked=True).evolve(score=s) for s, p in ranked]

    async def hydrate(self, ids: Sequence[str]) -> dict[str, Hit]:
        if not ids:
            return {}
        points = await asyncio.to_thread(self.store.retrieve, list(ids))
        return {p.id: hit_from_point(p, "") for p in points if p.payload.get("visible") is True}

    async def document(self, doc_id: str) -> list[Hit]:
        """Every visible chunk of a document: summary, then sections and propositions in reading
        order."""

        def scan() -> list[Hit]:
            hits: list[Hit] = []
            offset: str | None = None
            while True:
                points, offset = self.store.scroll(
                    filter={"doc_id": doc_id, "visible": True}, limit=512, offset=offset
                )
                hits.extend(hit_from_point(p, "") for p in points)
                if offset is None:
                    break
            order = {Level.DOCUMENT: 0, Level.SECTION: 1, Level.PROPOSITION: 2}
            return sorted(hits, key=lambda h: (order[h.level], int(h.metadata.get("position", 0))))

        return await asyncio.to_thread(scan)
