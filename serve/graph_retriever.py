"""Graph retrieval for the search pipeline: personalised PageRank over the in-memory projection
of the namespace's graph (`graph/projection.py`, `graph/walk.py`), behind the retriever protocol.

Phase 1 (`retrieve`) walks from the entities the query names alone, while vector search runs.
Phase 2 (`expand`) walks from those entities and the top vector hits together, over the relation
groups the query type's profile weights; for profiles that bridge, the seeds' first hop (chunk
MENTIONS entity EXPLAINED by another document) also comes back as the `bridge-links` list, which
fusion reads but does not vote with. Neither phase makes a Cypher round trip. In a conversation,
concepts mentioned earlier boost documents that explain them (seed 003, one Cypher read).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import Any

from rayweave.cluster.settings import Settings
from rayweave.cluster.types import Hit
from rayweave.graph.profiles import PROFILES, TraversalProfile, parse_query_type
from rayweave.graph.projection import GraphProjection, ProjectionHolder, load_projection
from rayweave.graph.projection_delta import projection_updates
from rayweave.graph.store import GraphStore
from rayweave.graph.traversal import GraphTraversal
from rayweave.graph.walk import (
    WalkRequest,
    bridge_links,
    fact_entities,
    query_entities,
    relation_weights,
    seed_rows,
    walk,
)
from rayweave.models.protocols import EntityExtractor
from rayweave.serve.conversation import ConversationMessage
from rayweave.serve.fusion import FACT_WALK, LINKS, SPARSE_FACTS
from rayweave.serve.search import RankedLists, RetrievalQuery
from rayweave.serve.views import VIEW_ID


class GraphSearch:
    def __init__(
        self,
        store: GraphStore,
        *,
        entity_extractor: EntityExtractor | None = None,
        refresh_s: float | None = None,
    ) -> None:
        self.store = store
        self.settings = store.settings
        self.traversal = GraphTraversal(store)
        self.entity_extractor = entity_extractor
        self.projections = ProjectionHolder(
            lambda: load_projection(store),
            projection_updates(store),
            refresh_s=self.settings.projection_refresh_s if refresh_s is None else refresh_s,
        )

    @classmethod
    def from_settings(cls, settings: Settings, *, collection: str | None = None) -> GraphSearch:
        from rayweave.graph.store import open_graph_store

        store = open_graph_store(settings, namespace=collection or settings.qdrant.collection)
        return cls(store)

    def close(self) -> None:
        self.projections.close()
        self.traversal.close()
        self.store.close()

    def _request(
        self,
        query: RetrievalQuery,
        projection: GraphProjection,
        profile: TraversalProfile,
        *,
        seeds: bool,
    ) -> WalkRequest:
        entities = query_entities(
            projection, query.text, query.keywords, self.settings.gazetteer_max_ngram
        )
        named = fact_entities(projection, query.facts) if seeds and query.facts else {}
        for row, weight in named.items():
            entities[row] = max(entities.get(row, 0.0), weight)
        return WalkRequest(
            entities=entities,
            seeds=seed_rows(projection, query.seeds) if seeds else {},
            weights=relation_weights(profile),
            entity_share=self.settings.walk_fact_entity_share if named else None,
        )

    async def retrieve(self, query: RetrievalQuery) -> RankedLists:
        projection = self.projections.current
        profile = PROFILES[parse_query_type(query.plan.query_type)]
        request = self._request(query, projection, profile, seeds=False)
        hits = walk(projection, request, self.settings, limit=self.settings.max_results)
        return {"graph": _marked(hits, "graph", projection)}

    async def expand(self, query: RetrievalQuery) -> RankedLists:
        projection = self.projections.current
        profile = PROFILES[parse_query_type(query.plan.query_type)]
        request = self._request(query, projection, profile, seeds=True)
        hits = walk(projection, request, self.settings, limit=self.settings.max_results)
        links = bridge_links(projection, request.seeds, self.settings) if profile.bridge > 0 else []
        if query.conversation_id:
            hits = await asyncio.to_thread(
                self.traversal.conversation_rerank, hits, query.conversation_id
            )
        name = "graph-expand"
        if query.facts and request.entity_share is not None:
            name = FACT_WALK
            hits = with_facts(hits, query.facts, projection)
            if any(f.metadata.get(SPARSE_FACTS) for f in query.facts):
                hits = [h.evolve(metadata={**h.metadata, SPARSE_FACTS: True}) for h in hits]
        lists = {name: _marked(hits, name, projection)}
        if links:
            lists[LINKS] = _marked(links, LINKS, projection)
        return lists

    async def add_message(self, conversation_id: str, message: ConversationMessage) -> str:
        message_id = uuid.uuid4().hex
        names = await asyncio.to_thread(self._entity_names, message.content)
        await asyncio.to_thread(
            self.store.add_message,
            conversation_id=conversation_id,
            message_id=message_id,
            text=message.content,
            role=message.role,
            user_id=message.user_id,
            referenced_doc_ids=tuple(message.document_ids),
            entity_names=tuple(names),
        )
        return message_id

    def _entity_names(self, text: str) -> list[str]:
        """Known entities the message names (the gazetteer), plus extractor entities if any."""
        names = [m.name for m in self.store.entities_in_text(text)]
        if self.entity_extractor is not None:
            names.extend(e.name for e in self.entity_extractor.extract([text])[0])
        return list(dict.fromkeys(names))

    async def neighbourhood(self, node_ids: Sequence[str], depth: int = 1) -> dict[str, Any]:
        """Nodes and typed relationships around `node_ids` (for the UI's graph view)."""
        return await asyncio.to_thread(self.store.neighbourhood, list(node_ids), depth=depth)


def _marked(hits: list[Hit], name: str, projection: GraphProjection) -> list[Hit]:
    """Graph hits name the list they came from, so fusion can weight and report them, and the
    unit they resolve to before fusion, as vector hits do (`serve/views.py`)."""
    views = projection.views()
    out = []
    for h in hits:
        view = views.get(h.id)
        if view is None:
            out.append(h.evolve(retrievers=(name,)))
        else:
            out.append(h.evolve(retrievers=(name,), metadata={**h.metadata, VIEW_ID: view}))
    return out


def with_facts(hits: list[Hit], facts: Sequence[Hit], projection: GraphProjection) -> list[Hit]:
    """Each hit with the facts that led to it: those its document states, or naming an entity on
    the hit's path (the search page shows them under the passage), and the topics a model put
    them under (statement groups show facts by topic)."""
    from rayweave.graph.names import normalize_name

    by_entity: dict[str, list[str]] = {}
    by_doc: dict[str, list[str]] = {}
    topics: dict[str, str] = {}
    for fact in facts:
        if topic := fact.metadata.get("topic"):
            topics.setdefault(fact.text, str(topic))
        for key in ("subject", "object"):
            form = normalize_name(str(fact.metadata.get(key, "")))
            for eid in entity_ids_for(projection, form):
                by_entity.setdefault(eid, []).append(fact.text)
        for chunk_id in fact.metadata.get("chunk_ids") or ():
            row = projection.chunk_rows.get(str(chunk_id))
            if row is not None:
                by_doc.setdefault(projection.doc_id(row), []).append(fact.text)
    out = []
    for hit in hits:
        texts = list(by_doc.get(hit.doc_id, ()))
        for path in hit.paths:
            for node in path.nodes:
                texts.extend(by_entity.get(node, ()))
        if texts:
            shown = list(dict.fromkeys(texts))[:3]
            metadata = {
                **hit.metadata,
                "facts": shown,
                "fact_topics": {t: topics[t] for t in shown if t in topics},
            }
            hit = hit.evolve(metadata=metadata)
        out.append(hit)
    return out


def entity_ids_for(projection: GraphProjection, form: str) -> list[str]:
    from rayweave.graph.names import variants
    from rayweave.graph.projection import entity_rows_for

    if not form:
        return []
    return [projection.nodes.ids[row] for row in entity_rows_for(projection, variants(form))]
