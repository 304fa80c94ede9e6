"""Entities, topics and the typed edges between nodes: the layer the corpus pass rebuilds."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from rayweave.graph.names import normalize_name, unique
from rayweave.graph.schema import (
    EdgeRow,
    EdgeSource,
    EntityRow,
    GraphBatch,
    NodeLabel,
    RelType,
    TopicRow,
)
from rayweave.graph.store.connection import StoreConnection
from rayweave.graph.store.cypher import (
    REFRESH_DF,
    REFRESH_DF_ALL,
    WriteMode,
    merge_edges_query,
    upsert_entities_query,
)
from rayweave.graph.store.records import WriteReport

__all__ = ["GraphWrites"]

_EdgeGroups = dict[tuple[RelType, NodeLabel, NodeLabel], dict[tuple[str, str], dict[str, Any]]]

_LINK_ALIASES = """
    UNWIND $rows AS r
    MATCH (e:Entity {key: r.ekey})
    MERGE (a:Alias {key: r.akey})
    ON CREATE SET a.ns = $ns, a.id = r.norm, a.norm = r.norm
    MERGE (a)-[x:ALIAS_OF]->(e)
    ON CREATE SET x.weight = 1.0, x.confidence = 1.0, x.source = $source, x.count = 1
    RETURN count(x) AS n
"""
_WRITE_TOPICS = """
    UNWIND $rows AS r
    MERGE (t:Topic {key: r.key})
    SET t.ns = $ns, t.id = r.id, t.name = r.name, t.keywords = r.keywords
    RETURN count(t) AS n
"""


def _check_mode(mode: str) -> None:
    if mode not in ("max", "replace"):
        raise ValueError(f"write mode {mode!r} is not one of 'max', 'replace'")


def group_edges(edges: Sequence[EdgeRow], key: Callable[[str], str]) -> _EdgeGroups:
    """Edge rows by (type, end labels), one per pair of ends: the most confident, then the
    heaviest, of the duplicates a batch carries."""
    groups: _EdgeGroups = defaultdict(dict)
    keys = KeyCache(key)  # a corpus pass names each entity in hundreds of edges
    for e in edges:
        row: dict[str, Any] = {
            "s": keys[e.src.id],
            "d": keys[e.dst.id],
            "w": float(e.weight),
            "c": float(e.confidence),
            "src": e.source._value_,  # not `.value`, a property lookup per edge
            "n": int(e.count),
            "props": dict(e.props),
        }
        group = groups[(e.rel, e.src.label, e.dst.label)]
        old = group.get((row["s"], row["d"]))
        if old is None or (row["c"], row["w"]) > (old["c"], old["w"]):
            group[(row["s"], row["d"])] = row
    return groups


class KeyCache(dict[str, str]):
    """Node id -> store key, each computed once."""

    def __init__(self, key: Callable[[str], str]) -> None:
        super().__init__()
        self._key = key

    def __missing__(self, node_id: str) -> str:
        value = self[node_id] = self._key(node_id)
        return value


class GraphWrites(StoreConnection):
    """Idempotent MERGE writes of entities (with their Alias nodes), topics and edges."""

    def write_entities(self, entities: Sequence[EntityRow], *, mode: WriteMode = "max") -> int:
        """MERGE entities and their Alias nodes. `mode="max"` only adds (aliases are unioned, a
        specific kind replaces 'concept'); `"replace"` sets name, kind and aliases to these rows
        (the corpus pass, whose rows are the whole truth; `delete_stale` then drops the alias
        links they no longer list)."""
        _check_mode(mode)
        rows = []
        alias_rows: list[dict[str, str]] = []
        for e in entities:
            aliases = unique((normalize_name(e.name), *e.aliases))
            rows.append(
                {
                    "key": self.key(e.id),
                    "id": e.id,
                    "name": e.name,
                    "kind": e.kind,
                    "aliases": list(aliases),
                    "description": e.description or None,
                }
            )
            alias_rows.extend(
                {"akey": self.key(a), "norm": a, "ekey": self.key(e.id)} for a in aliases
            )
        self.mark(self.key(e.id) for e in entities)
        n = self._write_rows(upsert_entities_query(mode), rows, op="write_entities")
        self._write_rows(
            _LINK_ALIASES, alias_rows, op="write_entities", source=EdgeSource.STRUCTURE.value
        )
        return n

    def write_topics(self, topics: Sequence[TopicRow]) -> int:
        rows = [
            {"key": self.key(t.id), "id": t.id, "name": t.name, "keywords": list(t.keywords)}
            for t in topics
        ]
        return self._write_rows(_WRITE_TOPICS, rows, op="write_topics")

    def delete_topics_except(self, topics: Sequence[TopicRow]) -> None:
        """Topic nodes (and their edges) that `topics` does not list go: after a corpus pass
        wrote its topics and their edges."""
        self.write(
            "MATCH (t:Topic {ns: $ns}) WHERE NOT t.key IN $keep DETACH DELETE t",
            {"keep": [self.key(t.id) for t in topics]},
            op="delete_topics",
        )

    def write_edges(
        self, edges: Sequence[EdgeRow], *, mode: WriteMode = "max", run: str | None = None
    ) -> int:
        """MERGE edges; both ends must exist (rows whose ends are missing are not written).

        `mode="max"` keeps the larger of old and new weight/confidence/count (idempotent, and a
        second source can only strengthen an edge); `"replace"` overwrites (recomputed edges)
        and stamps each edge with `run`, which `delete_stale` keeps.
        """
        _check_mode(mode)
        written = 0
        for (rel, src, dst), rows in group_edges(edges, self.key).items():
            self.mark(r[end] for r in rows.values() for end in ("s", "d"))
            written += self._write_rows(
                merge_edges_query(rel, src, dst, mode),
                list(rows.values()),
                op="write_edges",
                run=run,
            )
            if rel is RelType.MENTIONS:
                self.refresh_entity_stats(sorted({r["d"] for r in rows.values()}), keys=True)
        return written

    def write_batch(self, batch: GraphBatch, *, mode: WriteMode = "max") -> WriteReport:
        """Entities and topics first, then the edges between them and already-written chunks."""
        entities = self.write_entities(batch.entities) if batch.entities else 0
        topics = self.write_topics(batch.topics) if batch.topics else 0
        rows = batch.edge_rows()
        edges = self.write_edges(rows, mode=mode) if rows else 0
        self.touch()
        distinct = len({(e.rel, e.src, e.dst) for e in rows})
        return WriteReport(
            entities=entities, topics=topics, edges=edges, skipped_edges=distinct - edges
        )

    def refresh_entity_stats(
        self, entity_ids: Sequence[str] | None = None, *, keys: bool = False
    ) -> None:
        """Recompute `df` (how many chunks mention an entity), which traversals use as an IDF."""
        if entity_ids is None:
            self.mark_all()
            self.write(REFRESH_DF_ALL, op="refresh_entity_stats")
            return
        rows = [{"key": i if keys else self.key(i)} for i in entity_ids]
        self.mark(r["key"] for r in rows)
        self._write_rows(REFRESH_DF, rows, op="refresh_entity_stats")
