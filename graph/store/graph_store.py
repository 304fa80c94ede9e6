"""`GraphStore`: the knowledge graph over the official `neo4j` driver (Cypher over Bolt).

Production Neo4j and the embedded ArcadeDB server share this one code path, so every query
sticks to the openCypher both accept: UNWIND + MERGE batches, no APOC, no Neo4j-only DDL.
Labels and relationship types are interpolated only from `schema` enums; every value is a
query parameter.

One store instance is bound to one namespace (`for_namespace` gives siblings that share the
driver). Writes are idempotent: MERGE on keys, and an edge written again keeps the larger of its
old and new weight/confidence/count, so re-running a batch changes no counts. Replace a changed
document with `delete_document` first.
"""

from __future__ import annotations

from rayweave.cluster.settings import Settings
from rayweave.graph.store.chunk_writes import ChunkWrites
from rayweave.graph.store.conversations import GraphConversations
from rayweave.graph.store.extractions import GraphExtractions
from rayweave.graph.store.layer_sync import GraphLayerSync
from rayweave.graph.store.reads import GraphReads
from rayweave.graph.store.removal import GraphRemoval
from rayweave.graph.store.views import GraphViews
from rayweave.graph.store.writes import GraphWrites

__all__ = ["GraphStore", "open_graph_store"]


class GraphStore(
    ChunkWrites,
    GraphLayerSync,
    GraphWrites,
    GraphRemoval,
    GraphReads,
    GraphViews,
    GraphConversations,
    GraphExtractions,
):
    """The graph of one namespace (see module docstring): each base is one responsibility over
    the shared `StoreConnection`."""


def open_graph_store(settings: Settings, *, namespace: str = "default") -> GraphStore:
    """The edge's way in: connect (starting the embedded server if configured so) and ensure
    the schema."""
    return GraphStore.open(settings, namespace=namespace)
