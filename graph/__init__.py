"""rayweave's knowledge graph over Cypher/Bolt (Neo4j, or the embedded ArcadeDB server).

- `schema`: labels, relationship types, keys, row types, DDL.
- `names`: name normalisation shared by ingest and query time.
- `store`: `GraphStore` (the system of record): connection, writes, removal and pruning, reads,
  the search page's views and conversations, each in its own module.
- `builders`: `build_graph`, composing the pure rules of `entities`, `mentions`, `edges`,
  `cooccurrence` (and an optional `extraction` hook) from chunks to graph rows.
- `indexing`: per-batch indexing during ingest and the corpus-wide rebuild after it.
- `projection`, `ppr`, `walk`, `synonyms`: the in-memory projection and personalised PageRank
  that the query hot path runs.
- `traversal` (with `profiles`, `queries`, `scoring`): Cypher traversals for conversation
  re-ranking, discovery and the bench's baseline.
"""
