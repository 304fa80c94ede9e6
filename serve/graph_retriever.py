"""Graph retrieval for the search pipeline: the traversals of `graph/` behind the retriever
protocol.

Phase 1 (`retrieve`) looks up the entities the query names (exact, alias) and follows
EXPLAINS/MENTIONS/DEFINES/SOLVES to chunks. Phase 2 (`expand`) starts from the top vector hits and
runs the query type's profile: neighbours and parents, definitions and usages, error solutions,
and the multi-hop bridge to documents that explain entities the seeds mention; the bridge's first
hop also comes back as the `bridge-links` list, which fusion reads but does not vote with. In a
conversation, concepts mentioned earlier boost documents that explain them (seed 003).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import Any

from rayweave.cluster.settings import Settings
from rayweave.cluster.types import Hit
from rayweave.graph.store import GraphStore
from rayweave.graph.traversal import GraphTraversal, Seed
from rayweave.serve.fusion import LINKS
from rayweave.serve.search import RankedLists, RetrievalQuery


class GraphSearch:
    def __init__(self, store: GraphStore, *, entity_extractor: Any | None = None) -> None:
        self.store = store
        self.traversal = GraphTraversal(store)
        self.entity_extractor = entity_extractor

    @classmethod
    def from_settings(cls, settings: Settings, *, collection: str | None = None) -> GraphSearch:
        from rayweave.graph.store import open_graph_store

        store = open_graph_store(settings, namespace=collection or settings.qdrant.collection)
        return cls(store)

    def close(self) -> None:
        self.traversal.close()
        self.store.close()

    async def retrieve(self, query: RetrievalQuery) -> RankedLists:
        hits = await asyncio.to_thread(
            self.traversal.entity_search, query.text, entity_names=list(query.keywords)
        )
        return {"graph": _marked(hits, "graph")}

    async def expand(self, query: RetrievalQuery) -> RankedLists:
        seeds = [Seed.from_hit(h) for h in query.seeds]
        hits, links = await asyncio.to_thread(
            self.traversal.search_with_links,
            query_text="",  # phase 1 already did the query's entities
            seeds=seeds,
            query_type=query.plan.query_type,
        )
        if query.conversation_id:
            hits = await asyncio.to_thread(
                self.traversal.conversation_rerank, hits, query.conversation_id
            )
        lists = {"graph-expand": _marked(hits, "graph-expand")}
        if links:
            lists[LINKS] = _marked(links, LINKS)
        return lists

    async def add_message(
        self,
        conversation_id: str,
        *,
        role: str,
        content: str,
        user_id: str | None,
        document_ids: Sequence[str],
    ) -> str:
        message_id = uuid.uuid4().hex
        names = await asyncio.to_thread(self._entity_names, content)
        await asyncio.to_thread(
            self.store.add_message,
            conversation_id=conversation_id,
            message_id=message_id,
            text=content,
            role=role,
            user_id=user_id,
            referenced_doc_ids=tuple(document_ids),
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


def _marked(hits: list[Hit], name: str) -> list[Hit]:
    """Graph hits name the list they came from, so fusion can weight and report them."""
    from dataclasses import replace

    return [replace(h, retrievers=(name,)) for h in hits]
