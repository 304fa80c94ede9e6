"""An in-memory projection of one namespace's graph, for the query hot path.

As Neo4j GDS projects a graph into memory for its algorithms, each graph retriever replica loads
the retrieval-relevant part of the Cypher store once into compact CSR matrices: chunk nodes (all
three levels; a Document row stands for its summary chunk), entity nodes and, per relation
group, a symmetric weighted adjacency (weight x confidence of the stored edge). Queries then make
no Cypher round trip. The Cypher store stays the system of record (writes, deletes, the search
page's graph view, conversations).

Freshness: every write path logs what it touched (`GraphStore.touch`, the change log);
`ProjectionHolder` polls it off the hot path and swaps in a projection updated by delta
(`graph/projection_delta.py`) or reloaded whole. A query never waits for either; a chunk deleted
since the last swap can still be scored by the graph, but hydration drops ids that are no longer
visible, so it is never returned.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

import numpy as np
import scipy.sparse as sp

from rayweave.cluster.types import Level, view_of
from rayweave.graph.ppr import Transition, Weights
from rayweave.graph.schema import CHUNK_LABELS, NodeLabel, RelType
from rayweave.graph.store import GraphStore
from rayweave.graph.store.row_reads import KEY_BATCH

log = logging.getLogger(__name__)


class NodeKind(IntEnum):
    CHUNK = 0
    ENTITY = 1
    DOCUMENT = 2  # a document without a summary chunk: a junction, never a hit


# Relation groups: what a traversal profile weights, each kept in its stored direction.
RELATIONS: Mapping[str, tuple[RelType, ...]] = {
    "structure": (RelType.HAS_CHILD,),
    "sequence": (RelType.NEXT,),
    "explains": (RelType.EXPLAINS,),
    "mentions": (RelType.MENTIONS,),
    "defines": (RelType.DEFINES,),
    "uses": (RelType.USES,),
    "references": (RelType.REFERENCES,),
    "solves": (RelType.SOLVES,),
    "related": (RelType.RELATED_TO,),
    "synonym": (RelType.SYNONYM_OF,),
    "comention": (RelType.CO_MENTIONED,),
}
_LEVEL_OF = {
    NodeLabel.DOCUMENT: Level.DOCUMENT,
    NodeLabel.SECTION: Level.SECTION,
    NodeLabel.PROPOSITION: Level.PROPOSITION,
}
_LEVEL_CODES = {Level.DOCUMENT: 0, Level.SECTION: 1, Level.PROPOSITION: 2}
LEVELS: tuple[Level, ...] = (Level.DOCUMENT, Level.SECTION, Level.PROPOSITION)


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeTable:
    """Rows of the projection: ids, kinds, documents, levels and entity statistics."""

    ids: list[str]  # chunk id (a Document row: its summary chunk id), entity id, or document id
    kinds: np.ndarray  # int8 NodeKind
    docs: list[str]  # distinct document ids
    doc_of: np.ndarray  # int32 index into `docs`; -1 for entities
    level: np.ndarray  # int8 index into LEVELS; -1 for entities
    df: np.ndarray  # float32: chunks mentioning an entity; 0 for chunks
    names: dict[int, str]  # entity row -> display name


@dataclass(slots=True, kw_only=True)
class GraphProjection:
    """One namespace's graph in memory (see module docstring). Read-only once built."""

    nodes: NodeTable
    chunk_rows: dict[str, int]  # chunk id -> row
    entity_rows: dict[str, int]  # entity id -> row
    aliases: dict[str, np.ndarray]  # normalised surface form -> entity rows
    relations: dict[str, sp.csr_matrix]
    stamp: str | None = None
    version: int = 0  # the change-log version it reflects (`graph/projection_delta.py`)
    keys: dict[str, int] = field(default_factory=dict)  # node key -> row, for deltas
    built_s: float = 0.0
    _transitions: dict[tuple[tuple[str, tuple[float, float]], ...], Transition] = field(
        default_factory=dict
    )
    _reversed: dict[str, sp.csr_matrix] = field(default_factory=dict)
    _chunks: np.ndarray | None = None
    _views: dict[str, tuple[str, str, bool]] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def size(self) -> int:
        return len(self.nodes.ids)

    @property
    def edges(self) -> int:
        return sum(int(m.nnz) for m in self.relations.values())

    def transition(self, weights: Weights) -> Transition:
        """The walk for one weighting of the relation groups, built once and cached."""
        key = tuple(
            sorted((g, (float(f), float(b))) for g, (f, b) in weights.items() if f > 0 or b > 0)
        )
        with self._lock:
            cached = self._transitions.get(key)
        if cached is not None:
            return cached
        built = Transition.combine(self.relations, dict(key))
        with self._lock:
            return self._transitions.setdefault(key, built)

    def reversed(self, group: str) -> sp.csr_matrix | None:
        """A relation read against its stored direction (entity -> the chunks that explain it)."""
        matrix = self.relations.get(group)
        if matrix is None:
            return None
        with self._lock:
            cached = self._reversed.get(group)
        if cached is None:
            cached = matrix.T.tocsr()
            cached.sort_indices()
            with self._lock:
                cached = self._reversed.setdefault(group, cached)
        return cached

    def nbytes(self) -> int:
        """Memory held by the arrays and matrices (cached transitions included); Python
        containers for ids and names are estimated at their string sizes plus dict slots."""
        total: int = sum(
            m.data.nbytes + m.indices.nbytes + m.indptr.nbytes for m in self.relations.values()
        )
        for t in self._transitions.values():
            for a in (t.adjacency, t.incoming):
                total += a.data.nbytes + a.indices.nbytes + a.indptr.nbytes
            total += t.inv_degree.nbytes + t.incoming_group.nbytes + t.incoming_max.nbytes
        for a in self._reversed.values():
            total += a.data.nbytes + a.indices.nbytes + a.indptr.nbytes
        n = self.nodes
        total += n.kinds.nbytes + n.doc_of.nbytes + n.level.nbytes + n.df.nbytes
        total += sum(49 + len(s) for s in n.ids) + sum(49 + len(s) for s in n.docs)
        total += 100 * (len(self.chunk_rows) + len(self.entity_rows) + len(self.aliases))
        total += sum(49 + len(k) + a.nbytes for k, a in self.aliases.items())
        return total

    def chunk_mask(self) -> np.ndarray:
        """Rows that can be hits (read-only; computed once, not per query)."""
        if self._chunks is None:
            mask = self.nodes.kinds == NodeKind.CHUNK
            mask.flags.writeable = False
            self._chunks = mask
        return self._chunks

    def views(self) -> dict[str, tuple[str, str, bool]]:
        """Chunk id -> its `serve.views.view_of` units, for the chunks that are not plainly
        their own unit (computed once from the structure edges, not per query)."""
        if self._views is not None:
            return self._views
        children: dict[int, list[int]] = {}
        parent: dict[int, int] = {}
        structure = self.relations.get("structure")
        if structure is not None:
            coo = structure.tocoo()
            for s, d in zip(coo.row.tolist(), coo.col.tolist(), strict=True):
                children.setdefault(s, []).append(d)
                parent[d] = s
        ids, level, kinds = self.nodes.ids, self.nodes.level, self.nodes.kinds
        views: dict[str, tuple[str, str, bool]] = {}
        for row in np.flatnonzero(kinds == NodeKind.CHUNK).tolist():
            lvl = LEVELS[int(level[row])]
            up = parent.get(row)
            sole = (
                lvl is Level.SECTION
                and up is not None
                and kinds[up] == NodeKind.CHUNK
                and len(children.get(up, ())) == 1
            )
            view = view_of(
                lvl,
                ids[row],
                parent_id=ids[up] if up is not None else None,
                children=[ids[c] for c in children.get(row, ())],
                sole=sole,
            )
            if view != (ids[row], ids[row], False):
                views[ids[row]] = view
        self._views = views
        return views

    def level_of(self, row: int) -> Level:
        return LEVELS[int(self.nodes.level[row])]

    def doc_id(self, row: int) -> str:
        i = int(self.nodes.doc_of[row])
        return self.nodes.docs[i] if i >= 0 else ""


class ProjectionBuilder:
    """Accumulates nodes and edges (from the store or from a generator) into a projection."""

    def __init__(self) -> None:
        self._ids: list[str] = []
        self._kinds: list[int] = []
        self._doc_of: list[int] = []
        self._level: list[int] = []
        self._df: list[float] = []
        self._names: dict[int, str] = {}
        self._docs: dict[str, int] = {}
        self._by_key: dict[str, int] = {}
        self.chunk_rows: dict[str, int] = {}
        self.entity_rows: dict[str, int] = {}
        self._aliases: dict[str, list[int]] = defaultdict(list)
        self._edges: dict[str, tuple[list[int], list[int], list[float]]] = {
            g: ([], [], []) for g in RELATIONS
        }

    def _add(self, key: str, node_id: str, kind: NodeKind, doc: str | None, level: int) -> int:
        row = self._by_key.get(key)
        if row is not None:
            return row
        row = len(self._ids)
        self._by_key[key] = row
        self._ids.append(node_id)
        self._kinds.append(int(kind))
        self._doc_of.append(self._docs.setdefault(doc, len(self._docs)) if doc else -1)
        self._level.append(level)
        self._df.append(0.0)
        return row

    def add_chunk(self, key: str, chunk_id: str, doc_id: str, level: Level) -> int:
        row = self._add(key, chunk_id, NodeKind.CHUNK, doc_id, _LEVEL_CODES[level])
        self.chunk_rows[chunk_id] = row
        return row

    def add_document(self, key: str, doc_id: str, *, first_chunk: str | None = None) -> int:
        """A document node without a summary chunk. With `first_chunk` (a key already added) the
        document is that chunk: edges to the document (its title's EXPLAINS) land on the chunk
        that opens it, so the walk and bridge links can return it. Without, it stays a
        junction that is never a hit."""
        if first_chunk is not None and first_chunk in self._by_key:
            row = self._by_key[first_chunk]
            self._by_key.setdefault(key, row)
            return row
        return self._add(key, doc_id, NodeKind.DOCUMENT, doc_id, _LEVEL_CODES[Level.DOCUMENT])

    def add_entity(self, key: str, entity_id: str, name: str, df: float) -> int:
        row = self._add(key, entity_id, NodeKind.ENTITY, None, -1)
        self._df[row] = float(df)
        self._names[row] = name
        self.entity_rows[entity_id] = row
        return row

    def add_alias(self, form: str, entity_key: str) -> None:
        row = self._by_key.get(entity_key)
        if row is not None and row not in self._aliases[form]:
            self._aliases[form].append(row)

    def add_edge(self, group: str, src_key: str, dst_key: str, weight: float) -> bool:
        a, b = self._by_key.get(src_key), self._by_key.get(dst_key)
        if a is None or b is None or a == b or weight <= 0:
            return False
        rows, cols, vals = self._edges[group]
        rows.append(a)
        cols.append(b)
        vals.append(weight)
        return True

    def build(self, *, stamp: str | None = None, version: int = 0) -> GraphProjection:
        n = len(self._ids)
        relations: dict[str, sp.csr_matrix] = {}
        for group, (rows, cols, vals) in self._edges.items():
            if rows:
                relations[group] = strongest(
                    np.asarray(rows, dtype=np.int64),
                    np.asarray(cols, dtype=np.int64),
                    np.asarray(vals, dtype=np.float32),
                    n,
                )
        docs = list(self._docs)
        nodes = NodeTable(
            ids=self._ids,
            kinds=np.asarray(self._kinds, dtype=np.int8),
            docs=docs,
            doc_of=np.asarray(self._doc_of, dtype=np.int32),
            level=np.asarray(self._level, dtype=np.int8),
            df=np.asarray(self._df, dtype=np.float32),
            names=self._names,
        )
        return GraphProjection(
            nodes=nodes,
            chunk_rows=self.chunk_rows,
            entity_rows=self.entity_rows,
            aliases={k: np.asarray(v, dtype=np.int32) for k, v in self._aliases.items()},
            relations=relations,
            stamp=stamp,
            version=version,
            keys=self._by_key,
        )


def strongest(rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, n: int) -> sp.csr_matrix:
    """A CSR matrix of the edges, parallel duplicates keeping the strongest weight (not the
    sum: the same mention stored twice is no stronger)."""
    pair = rows * n + cols
    order = np.lexsort((-vals, pair))
    pair, vals = pair[order], vals[order]
    first = np.ones(pair.size, dtype=bool)
    first[1:] = pair[1:] != pair[:-1]
    pair, vals = pair[first], vals[first]
    m = sp.csr_matrix(
        (vals, ((pair // n).astype(np.int32), (pair % n).astype(np.int32))), shape=(n, n)
    )
    m.sort_indices()
    return m


# Chunks stored as nodes of their own (a document's summary chunk lives on its Document node).
CHUNK_NODE_LABELS = (NodeLabel.SECTION, NodeLabel.PROPOSITION)
_CHUNK_COLUMNS = {
    "key": "n.key",
    "chunk": "n.id",
    "id": "n.doc_id",
    "pos": "coalesce(n.position, 0)",
}
EDGE_COLUMNS = {  # what a projection reads of an edge (`r`, from `a` to `b`)
    "s": "a.key",
    "d": "b.key",
    "w": "coalesce(r.weight, 1.0) * coalesce(r.confidence, 1.0)",
}
_EDGE_BATCH = KEY_BATCH  # start nodes per edge read
_EDGE_SOURCES: Mapping[RelType, tuple[NodeLabel, ...]] = {
    RelType.HAS_CHILD: (NodeLabel.DOCUMENT, NodeLabel.SECTION),
    RelType.NEXT: (NodeLabel.SECTION, NodeLabel.PROPOSITION, NodeLabel.DOCUMENT),
    RelType.RELATED_TO: (NodeLabel.ENTITY,),
    RelType.SYNONYM_OF: (NodeLabel.ENTITY,),
    RelType.CO_MENTIONED: (NodeLabel.ENTITY,),
}


def load_projection(
    store: GraphStore, *, progress: Callable[[str], None] | None = None
) -> GraphProjection:
    """Read the namespace of `store` into a projection: each label's nodes in one table read,
    then their edges by batches of start keys (`graph/store/row_reads.py`), so that no read
    makes the server collect more than `_EDGE_BATCH` nodes' edges at once."""
    started = time.perf_counter()
    at = store.version()
    b = ProjectionBuilder()
    starts: dict[NodeLabel, list[str]] = {}
    proxies: dict[str, str] = {}  # document key -> id, for documents without a summary chunk
    documents = store.read_table(
        "MATCH (n:Document {ns: $ns})",
        {"key": "n.key", "id": "n.id", "chunk": "n.chunk_id"},
        op="projection",
    )
    starts[NodeLabel.DOCUMENT] = [str(r["key"]) for r in documents]
    for r in documents:
        if r["chunk"]:
            b.add_chunk(r["key"], str(r["chunk"]), str(r["id"]), Level.DOCUMENT)
        else:
            proxies[str(r["key"])] = str(r["id"])
    opening: dict[str, tuple[int, int, str]] = {}  # document id -> (level, position, chunk key)
    for rank, label in enumerate(CHUNK_NODE_LABELS):
        chunks = store.read_table(
            f"MATCH (n:{label.value} {{ns: $ns}})", _CHUNK_COLUMNS, op="projection"
        )
        starts[label] = [str(r["key"]) for r in chunks]
        for r in chunks:
            doc = str(r["id"])
            b.add_chunk(r["key"], str(r["chunk"]), doc, _LEVEL_OF[label])
            candidate = (rank, int(r["pos"] or 0), str(r["key"]))
            if doc not in opening or candidate < opening[doc]:
                opening[doc] = candidate
    for key, doc in proxies.items():
        first = opening.get(doc)
        b.add_document(key, doc, first_chunk=first[2] if first else None)
    entities = store.read_table(
        "MATCH (n:Entity {ns: $ns})",
        {"key": "n.key", "id": "n.id", "name": "n.name", "df": "coalesce(n.df, 0)"},
        op="projection",
    )
    starts[NodeLabel.ENTITY] = [str(r["key"]) for r in entities]
    for r in entities:
        b.add_entity(r["key"], str(r["id"]), str(r["name"] or r["id"]), float(r["df"]))
    for r in store.read_table(
        "MATCH (a:Alias {ns: $ns})-[:ALIAS_OF]->(e:Entity)",
        {"form": "a.norm", "ekey": "e.key"},
        op="projection",
    ):
        b.add_alias(str(r["form"]), str(r["ekey"]))
    _add_edges(store, b, starts, progress)
    projection = b.build(stamp=at.stamp, version=at.version)
    projection.built_s = time.perf_counter() - started
    return projection


def _add_edges(
    store: GraphStore,
    b: ProjectionBuilder,
    starts: Mapping[NodeLabel, Sequence[str]],
    progress: Callable[[str], None] | None,
) -> None:
    # Switched off, sentence links stored by an earlier corpus pass are not walked either.
    skip = set() if store.settings.sentence_links else {RelType.CO_MENTIONED}
    for group, types in RELATIONS.items():
        for rel in (t for t in types if t not in skip):
            for label in _EDGE_SOURCES.get(rel, CHUNK_LABELS):
                for r in store.read_table_by_keys(
                    f"MATCH (a:{label.value} {{key: k}})-[r:{rel.value}]->(b)",
                    EDGE_COLUMNS,
                    starts[label],
                    op="projection",
                    batch=_EDGE_BATCH,
                ):
                    b.add_edge(group, str(r["s"]), str(r["d"]), float(r["w"]))
        if progress is not None:
            progress(group)


class ProjectionHolder:
    """The current projection of a namespace, brought up to date in the background when the
    store changes and swapped in whole (readers never see a half-built one). `update` returns
    None when nothing changed, else the new projection (`projection_delta.projection_updates`:
    by delta where the change log allows, else a whole load)."""

    def __init__(
        self,
        load: Callable[[], GraphProjection],
        update: Callable[[GraphProjection], GraphProjection | None],
        *,
        refresh_s: float,
    ) -> None:
        self._update = update
        self._refresh_s = refresh_s
        self._current = load()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if refresh_s > 0:
            self._thread = threading.Thread(target=self._poll, name="graph-projection", daemon=True)
            self._thread.start()

    @property
    def current(self) -> GraphProjection:
        return self._current

    def refresh(self) -> bool:
        """Update now if the store changed since the current projection; True if swapped."""
        updated = self._update(self._current)
        if updated is None:
            return False
        self._current = updated
        return True

    def close(self) -> None:
        self._stop.set()

    def _poll(self) -> None:
        while not self._stop.wait(self._refresh_s):
            try:
                self.refresh()
            except Exception:  # the old projection keeps serving; the next poll tries again
                log.warning("graph projection refresh failed", exc_info=True)


def entity_rows_for(projection: GraphProjection, forms: Iterable[str]) -> dict[int, str]:
    """Entity rows whose alias equals one of `forms` (first form that named each row)."""
    out: dict[int, str] = {}
    for form in forms:
        rows = projection.aliases.get(form)
        if rows is None:
            continue
        for row in rows.tolist():
            out.setdefault(int(row), form)
    return out


def describe(projection: GraphProjection) -> dict[str, Any]:
    """Sizes for `rayweave bench graph` and logs."""
    kinds = projection.nodes.kinds
    return {
        "nodes": projection.size,
        "chunks": int((kinds == NodeKind.CHUNK).sum()),
        "entities": int((kinds == NodeKind.ENTITY).sum()),
        "edges": projection.edges,
        "edges_by_relation": {g: int(m.nnz) for g, m in projection.relations.items()},
        "bytes": projection.nbytes(),
        "build_s": round(projection.built_s, 3),
    }
