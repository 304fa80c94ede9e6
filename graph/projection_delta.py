"""Keeping a projection current by re-reading only the nodes that writes touched.

The change log (`graph/store/change_log.py`) names, per write, the nodes whose row or incident
edges changed. A replica reads those nodes and their incident edges by key, drops its old rows
and every edge that touches them, and appends the rows and edges it read: an edge that changed
has at least one end in the log, so everything else stands. Old rows stay as tombstones (no
edges, no id in any lookup) until the next whole load, which happens when an entry is full, the
log no longer reaches back far enough, or tombstones pass a quarter of the rows.

The swap is whole, as for a full load: a query never waits and never sees half an update.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from rayweave.cluster.types import Level
from rayweave.graph.projection import (
    CHUNK_NODE_LABELS,
    EDGE_COLUMNS,
    LEVELS,
    RELATIONS,
    GraphProjection,
    NodeKind,
    NodeTable,
    load_projection,
    strongest,
)
from rayweave.graph.schema import NodeLabel, RelType, node_key
from rayweave.graph.store import GraphStore
from rayweave.graph.store.change_log import StoreVersion

_GROUP_OF = {rel: group for group, rels in RELATIONS.items() for rel in rels}


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkState:
    key: str
    chunk_id: str
    doc_id: str
    level: Level
    rank: tuple[int, int]  # (label order, position): which chunk opens a document


@dataclass(slots=True, kw_only=True)
class ProjectionDelta:
    """What the touched keys hold now: present nodes (absent ones are gone) and the edges
    that touch them, as the full load would read them."""

    keys: set[str]
    documents: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # key: (id, chunk)
    chunks: dict[str, ChunkState] = field(default_factory=dict)
    entities: dict[str, tuple[str, str, float]] = field(default_factory=dict)  # key: (id, name, df)
    aliases: list[tuple[str, str]] = field(default_factory=list)  # (form, entity key)
    edges: list[tuple[str, str, str, float]] = field(default_factory=list)  # (group, s, d, w)
    openings: dict[str, str] = field(default_factory=dict)  # summary-less document -> first chunk


def projection_updates(
    store: GraphStore, *, max_stale: float = 0.25
) -> Callable[[GraphProjection], GraphProjection | None]:
    """The holder's update step for `store`: None when nothing changed, else the projection
    brought up to date by delta, or loaded whole when a delta cannot say enough or would leave
    more than `max_stale` of the rows tombstones."""

    def update(current: GraphProjection) -> GraphProjection | None:
        changes = store.changes_since(current.version, stamp=current.stamp)
        if changes.to == StoreVersion(stamp=current.stamp, version=current.version):
            return None
        tombstones = current.size - len(set(current.keys.values()))
        if (
            changes.full
            or not current.keys
            or tombstones + len(changes.keys) > max_stale * max(current.size, 1)
        ):
            return load_projection(store)
        delta = read_delta(store, changes.keys, current)
        return apply_delta(current, delta, at=changes.to)

    return update


def read_delta(store: GraphStore, keys: Iterable[str], current: GraphProjection) -> ProjectionDelta:
    """Read the touched nodes, widened to every node whose row they share (a summary-less
    document is its opening chunk's row) and to the documents and chunks that decide which
    chunk opens a document."""
    delta = ProjectionDelta(keys=set(keys))
    delta.keys |= _documents_of_summaries(store, delta.keys)
    pending = set(delta.keys)
    while pending:
        delta.keys |= pending
        pending = _read_nodes(store, pending, delta) | _sharing(current, pending)
        pending -= delta.keys
    _read_edges(store, delta)
    entity_keys = list(delta.entities)
    delta.aliases = [
        (str(r["form"]), str(r["ekey"]))
        for r in store.read(
            "UNWIND $keys AS k MATCH (e:Entity {key: k}) MATCH (a:Alias)-[:ALIAS_OF]->(e) "
            "RETURN a.norm AS form, e.key AS ekey",
            {"keys": entity_keys},
            op="projection_delta",
        )
    ]
    return delta


def _documents_of_summaries(store: GraphStore, keys: set[str]) -> set[str]:
    """A summary chunk is marked by its own key; its row is its Document's."""
    rows = store.read(
        "UNWIND $keys AS k MATCH (d:Document {ckey: k}) RETURN d.key AS key",
        {"keys": sorted(keys)},
        op="projection_delta",
    )
    return {str(r["key"]) for r in rows}


def _sharing(current: GraphProjection, keys: set[str]) -> set[str]:
    rows = {current.keys[k] for k in keys if k in current.keys}
    return {k for k, row in current.keys.items() if row in rows} if rows else set()


def _read_nodes(store: GraphStore, keys: set[str], delta: ProjectionDelta) -> set[str]:
    """Read `keys`' nodes into `delta`; returns the keys they bring in (a summary-less
    document's chunks, a chunk's document)."""
    more: set[str] = set()
    params = {"keys": sorted(keys)}
    for r in store.read(
        "UNWIND $keys AS k MATCH (n:Document {key: k}) RETURN n.key AS key, n.id AS id, "
        "n.chunk_id AS chunk",
        params,
        op="projection_delta",
    ):
        key = str(r["key"])
        delta.documents[key] = (str(r["id"]), str(r["chunk"]) if r["chunk"] else None)
        if not r["chunk"]:
            more |= _read_document_chunks(store, key, delta)
    for rank, label in enumerate(CHUNK_NODE_LABELS):
        for r in store.read(
            f"UNWIND $keys AS k MATCH (n:{label.value} {{key: k}}) RETURN n.key AS key, "
            "n.id AS chunk, n.doc_id AS doc, coalesce(n.position, 0) AS pos",
            params,
            op="projection_delta",
        ):
            delta.chunks[str(r["key"])] = _chunk(r, rank, label)
            more.add(node_key(store.ns, str(r["doc"])))
    for r in store.read(
        "UNWIND $keys AS k MATCH (n:Entity {key: k}) RETURN n.key AS key, n.id AS id, "
        "n.name AS name, coalesce(n.df, 0) AS df",
        params,
        op="projection_delta",
    ):
        delta.entities[str(r["key"])] = (str(r["id"]), str(r["name"] or r["id"]), float(r["df"]))
    return more


def _chunk(r: Mapping[str, Any], rank: int, label: NodeLabel) -> ChunkState:
    return ChunkState(
        key=str(r["key"]),
        chunk_id=str(r["chunk"]),
        doc_id=str(r["doc"]),
        level=Level.SECTION if label is NodeLabel.SECTION else Level.PROPOSITION,
        rank=(rank, int(r["pos"] or 0)),
    )


def _read_document_chunks(store: GraphStore, dkey: str, delta: ProjectionDelta) -> set[str]:
    """A summary-less document's chunks: the first of them is the document's row."""
    found: list[ChunkState] = []
    for rank, label in enumerate(CHUNK_NODE_LABELS):
        found += [
            _chunk(r, rank, label)
            for r in store.read(
                f"MATCH (n:{label.value} {{dkey: $dkey}}) RETURN n.key AS key, n.id AS chunk, "
                "n.doc_id AS doc, coalesce(n.position, 0) AS pos",
                {"dkey": dkey},
                op="projection_delta",
            )
        ]
    if found:
        delta.openings[dkey] = min(found, key=lambda c: (c.rank, c.key)).key
    return {c.key for c in found}


def _labelled(delta: ProjectionDelta) -> dict[NodeLabel, list[str]]:
    """The keys read back per label; a key no label holds is a node that went (no edges)."""
    out: dict[NodeLabel, list[str]] = {
        NodeLabel.DOCUMENT: sorted(delta.documents),
        NodeLabel.ENTITY: sorted(delta.entities),
    }
    for label, level in zip(CHUNK_NODE_LABELS, (Level.SECTION, Level.PROPOSITION), strict=True):
        out[label] = sorted(c.key for c in delta.chunks.values() if c.level is level)
    return out


def _read_edges(store: GraphStore, delta: ProjectionDelta) -> None:
    """Every edge of the read nodes, each node looked up under its own label only."""
    skip = set() if store.settings.sentence_links else {RelType.CO_MENTIONED}
    types = sorted(rel.value for rel in _GROUP_OF if rel not in skip)
    columns = {"t": "type(r)", **EDGE_COLUMNS}
    for label, keys in _labelled(delta).items():
        if not keys:
            continue
        # Each end is found by its key first: ArcadeDB plans `(a)-[r]->(b:L {key: k})` as a
        # scan of every edge. A table read: a touched hub brings thousands of edges.
        for pattern in (
            f"(a:{label.value} {{key: k}}) MATCH (a)-[r]->(b)",
            f"(b:{label.value} {{key: k}}) MATCH (a)-[r]->(b)",
        ):
            for r in store.read_table_by_keys(
                f"MATCH {pattern} WHERE type(r) IN $types",
                columns,
                keys,
                {"types": types},
                op="projection_delta",
            ):
                delta.edges.append(
                    (_GROUP_OF[RelType(r["t"])], str(r["s"]), str(r["d"]), float(r["w"]))
                )


def apply_delta(
    current: GraphProjection, delta: ProjectionDelta, *, at: StoreVersion
) -> GraphProjection:
    """A new projection: `current` with the touched rows replaced (see module docstring)."""
    nodes = _Nodes(current)
    gone = {current.keys[k] for k in delta.keys if k in current.keys}
    for row in gone:
        nodes.bury(row)
    for key in delta.keys:
        nodes.keys.pop(key, None)
    for key, (doc_id, chunk) in delta.documents.items():
        if chunk:
            nodes.add(key, chunk, NodeKind.CHUNK, doc_id, Level.DOCUMENT)
    for c in sorted(delta.chunks.values(), key=lambda c: (c.rank[0], c.key)):
        nodes.add(c.key, c.chunk_id, NodeKind.CHUNK, c.doc_id, c.level)
    for key, (doc_id, chunk) in delta.documents.items():
        if not chunk:
            opening = delta.openings.get(key)
            if opening is not None and opening in nodes.keys:
                nodes.keys[key] = nodes.keys[opening]
            else:
                nodes.add(key, doc_id, NodeKind.DOCUMENT, doc_id, Level.DOCUMENT)
    for key, (eid, name, df) in delta.entities.items():
        nodes.add(key, eid, NodeKind.ENTITY, None, None, name=name, df=df)
    relations = _relations(current, gone, delta.edges, nodes)
    aliases = _aliases(current, gone, delta.aliases, nodes.keys)
    return GraphProjection(
        nodes=nodes.table(),
        chunk_rows=nodes.chunk_rows,
        entity_rows=nodes.entity_rows,
        aliases=aliases,
        relations=relations,
        stamp=at.stamp,
        version=at.version,
        keys=nodes.keys,
    )


class _Nodes:
    """The node table of `current`, copied so that rows can be buried and appended."""

    def __init__(self, current: GraphProjection) -> None:
        t = current.nodes
        self.ids = list(t.ids)
        self.kinds = t.kinds.tolist()
        self.docs = list(t.docs)
        self.doc_index = {d: i for i, d in enumerate(self.docs)}
        self.doc_of = t.doc_of.tolist()
        self.level = t.level.tolist()
        self.df = t.df.tolist()
        self.names = dict(t.names)
        self.keys = dict(current.keys)
        self.chunk_rows = dict(current.chunk_rows)
        self.entity_rows = dict(current.entity_rows)

    def bury(self, row: int) -> None:
        node_id = self.ids[row]
        if self.chunk_rows.get(node_id) == row:
            del self.chunk_rows[node_id]
        if self.entity_rows.get(node_id) == row:
            del self.entity_rows[node_id]
        self.kinds[row] = int(NodeKind.DOCUMENT)  # never a hit, never a seed
        self.doc_of[row] = -1
        self.df[row] = 0.0
        self.names.pop(row, None)

    def add(
        self,
        key: str,
        node_id: str,
        kind: NodeKind,
        doc: str | None,
        level: Level | None,
        *,
        name: str = "",
        df: float = 0.0,
    ) -> None:
        row = len(self.ids)
        self.ids.append(node_id)
        self.kinds.append(int(kind))
        self.doc_of.append(self.doc_index.setdefault(doc, len(self.doc_index)) if doc else -1)
        if doc and len(self.docs) < len(self.doc_index):
            self.docs.append(doc)
        self.level.append(LEVELS.index(level) if level is not None else -1)
        self.df.append(df)
        self.keys[key] = row
        if kind is NodeKind.CHUNK:
            self.chunk_rows[node_id] = row
        elif kind is NodeKind.ENTITY:
            self.entity_rows[node_id] = row
            self.names[row] = name

    def table(self) -> NodeTable:
        return NodeTable(
            ids=self.ids,
            kinds=np.asarray(self.kinds, dtype=np.int8),
            docs=self.docs,
            doc_of=np.asarray(self.doc_of, dtype=np.int32),
            level=np.asarray(self.level, dtype=np.int8),
            df=np.asarray(self.df, dtype=np.float32),
            names=self.names,
        )


def _relations(
    current: GraphProjection,
    gone: set[int],
    edges: list[tuple[str, str, str, float]],
    nodes: _Nodes,
) -> dict[str, sp.csr_matrix]:
    n = len(nodes.ids)
    dead = np.zeros(n, dtype=bool)
    dead[list(gone)] = True
    added: dict[str, tuple[list[int], list[int], list[float]]] = defaultdict(lambda: ([], [], []))
    for group, s, d, w in edges:
        a, b = nodes.keys.get(s), nodes.keys.get(d)
        if a is None or b is None or a == b or w <= 0:
            continue
        rows, cols, vals = added[group]
        rows.append(a)
        cols.append(b)
        vals.append(w)
    out: dict[str, sp.csr_matrix] = {}
    for group in RELATIONS:
        old = current.relations.get(group)
        parts_r, parts_c, parts_v = [], [], []
        if old is not None:
            coo = old.tocoo()
            keep = ~(dead[coo.row] | dead[coo.col])
            parts_r.append(coo.row[keep].astype(np.int64))
            parts_c.append(coo.col[keep].astype(np.int64))
            parts_v.append(coo.data[keep].astype(np.float32))
        if group in added:
            rows, cols, vals = added[group]
            parts_r.append(np.asarray(rows, dtype=np.int64))
            parts_c.append(np.asarray(cols, dtype=np.int64))
            parts_v.append(np.asarray(vals, dtype=np.float32))
        if parts_r and sum(p.size for p in parts_r):
            out[group] = strongest(
                np.concatenate(parts_r), np.concatenate(parts_c), np.concatenate(parts_v), n
            )
    return out


def _aliases(
    current: GraphProjection,
    gone: set[int],
    fresh: list[tuple[str, str]],
    keys: Mapping[str, int],
) -> dict[str, np.ndarray]:
    """`current`'s alias lists without the buried rows, plus the fresh forms. Only the forms
    that held a buried row are rebuilt; the rest are shared with `current` (arrays are never
    written in place)."""
    out = dict(current.aliases)
    if gone and out:
        forms = list(out)
        sizes = np.fromiter((a.size for a in out.values()), dtype=np.int64, count=len(forms))
        buried = np.fromiter(gone, dtype=np.int64, count=len(gone))
        hit = np.isin(np.concatenate(list(out.values())), buried)
        for i in np.unique(np.repeat(np.arange(len(forms)), sizes)[hit]).tolist():
            rows = out[forms[i]]
            kept = rows[~np.isin(rows, buried)]
            if kept.size:
                out[forms[i]] = kept
            else:
                del out[forms[i]]
    for form, ekey in fresh:
        row = keys.get(ekey)
        if row is None:
            continue
        held = out.get(form)
        if held is None:
            out[form] = np.asarray([row], dtype=np.int32)
        elif row not in held:
            out[form] = np.append(held, np.int32(row)).astype(np.int32)
    return out
