"""rayweave's knowledge graph over Cypher/Bolt (Neo4j, or the embedded ArcadeDB server).

- `schema`: labels, relationship types, keys, row types, DDL.
- `names`: name normalisation shared by ingest and query time.
- `store`: `GraphStore`, idempotent batched writes, deletes, pruning, conversations.
- `builders`: pure functions from chunks (and optional extractor output) to graph rows.
- `indexing`: per-batch indexing during ingest and the corpus-wide rebuild after it.
- `traversal`: query builders, scoring and `GraphTraversal` for retrieval.
- `bench`: `run_graph_bench`.
"""
