"""The graph store: `GraphStore`, one namespace of the knowledge graph over Cypher/Bolt.

- `graph_store`: the `GraphStore` front and `open_graph_store`.
- `connection`: driver, sessions, retries, schema and the change stamp every part writes through.
- `chunk_writes`, `writes`: documents and chunks; entities, topics and edges.
- `removal` (over `cleanup`'s transaction functions): deletes and the prune.
- `reads`, `views`: reads for retrieval and rebuilds; the search page's graph view.
- `conversations`: messages and document views.
- `cypher`, `chunk_props`, `records`: shared query text, chunk (de)serialisation, reports.
- `maintenance`: `prune_graph`, the settings-driven edge of `rayweave graph prune`.
"""

from rayweave.graph.store.graph_store import GraphStore, open_graph_store
from rayweave.graph.store.records import (
    DeleteReport,
    EntityMatch,
    GraphCounts,
    MessageRecord,
    PruneReport,
    ViewRecord,
    WriteReport,
)

__all__ = [
    "DeleteReport",
    "EntityMatch",
    "GraphCounts",
    "GraphStore",
    "MessageRecord",
    "PruneReport",
    "ViewRecord",
    "WriteReport",
    "open_graph_store",
]
