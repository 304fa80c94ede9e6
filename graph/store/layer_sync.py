"""Writing a recomputed entity layer as the difference from the stored one.

The corpus pass recomputes every entity and rule-made edge; most of them come out exactly as
they are stored (a one-document change moves a few hundred of 150,000 edges, plus the
co-occurrence weights that the unit total shifts). Writing only rows that differ and deleting
only rows that went costs what changed, and leaves the rest of the graph untouched for readers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from rayweave.graph.names import normalize_name, unique
from rayweave.graph.schema import (
    CHUNK_LABELS,
    ColumnsDelta,
    EdgeColumns,
    EdgeRow,
    EdgeSource,
    EntityRow,
    NodeLabel,
    NodeRef,
    RelType,
    RowsDelta,
)
from rayweave.graph.store.cleanup import delete_unlisted_aliases
from rayweave.graph.store.connection import StoreConnection
from rayweave.graph.store.cypher import merge_edges_query, q
from rayweave.graph.store.layer_view import (
    EdgeKey,
    LayerView,
    as_view,
    column_form,
    unmade_by_index,
)
from rayweave.graph.store.writes import GraphWrites, KeyCache, group_edges

_BOOKKEEPING = frozenset({"run"})

EntityView = dict[str, tuple[str, str, tuple[str, ...]]]  # entity key -> name, kind, aliases
EntityRows = dict[str, EntityRow]  # entity key -> the row that its stored entity equals
_ENTITY_COLUMNS = {"k": "e.key", "name": "e.name", "kind": "e.kind", "aliases": "e.aliases"}
_SYNCED_STARTS = (*CHUNK_LABELS, NodeLabel.ENTITY)  # the rule-made layer starts at these
_ENTITY, _TOPIC = NodeLabel.ENTITY.value, NodeLabel.TOPIC.value
_EDGE_COLUMNS = {  # an edge as `stored_edges` reads it (`r`, from `a` to `b`)
    "t": "type(r)",
    "la": "labels(a)[0]",
    "lb": "labels(b)[0]",
    "s": "a.key",
    "d": "b.key",
    "p": "properties(r)",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class EdgeSync:
    """`view`: the synced edges as they are stored after the sync, when asked for (what the
    next sync can start from instead of reading them all, `graph/layer_snapshot.py`);
    `entity_ends`: the keys of the entities at an end of an edge written or deleted (the only
    ones the sync can have left with nothing to introduce them)."""

    edges_written: int
    edges_deleted: int
    edges_unchanged: int
    view: LayerView | None = field(default=None, repr=False, compare=False)
    entity_ends: frozenset[str] = field(default=frozenset(), repr=False, compare=False)


def _stored_form(row: Mapping[str, Any]) -> dict[str, Any]:
    """An edge row's properties as a replace write stores them."""
    return {
        "weight": row["w"],
        "confidence": row["c"],
        "source": row["src"],
        "count": row["n"],
        **row["props"],
    }


def _changed_columns(
    cols: EdgeColumns,
    view: LayerView,
    seen: set[EdgeKey],
    touched: list[EdgeKey],
    key: Mapping[str, str],
) -> tuple[list[dict[str, Any]], int]:
    """The rows of `cols` that differ from `view` (which takes them, as `touched` does their
    keys; `seen`, every key), and how many do not. An edge as stored is not made into a row at
    all: at 10k documents that is 250k co-occurrence edges a pass, when all are compared."""
    t, la, lb = cols.rel.value, _ENTITY, _ENTITY
    source = cols.source.value
    changed: list[dict[str, Any]] = []
    same = 0
    for s_id, d_id, w, c, n in zip(
        cols.src, cols.dst, cols.weight, cols.confidence, cols.count, strict=True
    ):
        s, d = key[s_id], key[d_id]
        k = (t, la, lb, s, d)
        seen.add(k)
        was = view.get(k)
        if (
            was is not None
            and was.get("weight") == w
            and was.get("confidence") == c
            and was.get("count") == n
            and was.get("source") == source
        ):  # `_edge_differs` spelled out: the row's form would hold just these
            same += 1
            continue
        row = {"s": s, "d": d, "w": w, "c": c, "src": source, "n": n, "props": {}}
        changed.append(row)
        touched.append(k)
        view.put(k, _stored_form(row), vouched=True)
    return changed, same


@dataclass(slots=True)
class _Unmade:
    """The stored edges a sync did not make (`_unmade`): `rest`, those it deletes; `typed`,
    those of the columns' types between entities (deleted unless a delta says which went);
    `foreign`, whether any of those is not in the form the columns write (a row merged in)."""

    rest: list[EdgeKey] = field(default_factory=list)
    typed: list[EdgeKey] = field(default_factory=list)
    foreign: bool = False


def _unmade(
    view: LayerView,
    seen: AbstractSet[EdgeKey],
    standing: AbstractSet[str],
    columns: Sequence[EdgeColumns],
    *,
    by_delta: bool,
    settled: AbstractSet[str] = frozenset(),
) -> _Unmade:
    """One walk over the stored edges (670k at 10k documents, most of them standing), or the
    view's index when it keeps one (`graph/store/layer_view.py`); `typed` is found, or
    `foreign` checked, as `by_delta` needs. A key of the columns' types is not looked up in
    `seen` here: whoever uses `typed` does. Edges of the `settled` types (from chunks or
    documents) are kept unless a delta names them."""
    source = {c.rel.value: c.source.value for c in columns}
    index = view.index
    if index is not None:
        rest, typed, foreign = unmade_by_index(
            view, index, seen, standing, source, by_delta=by_delta, settled=settled
        )
        return _Unmade(rest=rest, typed=typed, foreign=foreign)
    out = _Unmade()
    rest, typed = out.rest, out.typed
    for k, v in view.items():
        # From a chunk or document: its document's own edge (phase 3 of the corpus pass,
        # `graph/document_edges.py`) unless it ends at a topic (BELONGS_TO, phase 4).
        if k[1] != _ENTITY:
            if (k[2] == _TOPIC or k[3] not in standing) and k[0] not in settled and k not in seen:
                rest.append(k)
        elif k[0] in source and k[2] == _ENTITY:
            if not by_delta:
                typed.append(k)
            elif not column_form(v, source[k[0]]):
                out.foreign = True
        elif k not in seen:
            rest.append(k)
    return out


def _entity_ends(keys: Iterable[EdgeKey]) -> frozenset[str]:
    """The keys of the entities at an end of these edges."""
    entity = NodeLabel.ENTITY.value
    return frozenset(
        end for _, la, lb, s, d in keys for end, label in ((s, la), (d, lb)) if label == entity
    )


def _edge_differs(stored: Mapping[str, Any] | None, form: Mapping[str, Any]) -> bool:
    """Whether a replace write of `form` would change the stored edge (a property the row does
    not set is left as it is: `SET e += r.props`)."""
    return stored is None or not form.items() <= stored.items()


class GraphLayerSync(GraphWrites, StoreConnection):
    """Entity and edge rows written as a difference from what the namespace stores."""

    def stored_entities(self, keys: Iterable[str] | None = None) -> EntityView:
        """The stored entities as `sync_entities` compares them; `keys`: only these (a key
        that names no entity is left out)."""
        if keys is None:
            rows = self.read_table("MATCH (e:Entity {ns: $ns})", _ENTITY_COLUMNS, op="entities")
        else:
            rows = self.read_table_by_keys(
                "MATCH (e:Entity {key: k})", _ENTITY_COLUMNS, sorted(set(keys)), op="entities"
            )
        return {r["k"]: (r["name"], r["kind"], tuple(r["aliases"] or ())) for r in rows}

    def sync_entities(
        self,
        entities: Sequence[EntityRow],
        stored: EntityView | None = None,
        rows: EntityRows | None = None,
    ) -> tuple[list[str], EntityView, EntityRows]:
        """Write the entities whose name, kind or aliases differ from the stored ones; returns
        the keys of those written, the stored entities as they are after the write (`stored`,
        updated in place: what is stored, when the caller knows it, as a layer snapshot does;
        else read whole), and by key the rows they now equal (`rows`, updated in place: those
        the stored entities are known to equal; a row that is the very object held there is
        not compared again, as the lexicon hands unchanged rows on, 0.13 s of 59.5k rows at
        10k documents). Entities no row names are left to `prune`."""
        view = self.stored_entities() if stored is None else stored
        held: EntityRows = {} if rows is None else rows
        changed: list[EntityRow] = []
        keys: list[str] = []
        for e in entities:
            key = self.key(e.id)
            if held.get(key) is e:
                continue
            held[key] = e
            now = (e.name, e.kind, unique((normalize_name(e.name), *e.aliases)))
            if view.get(key) != now:
                changed.append(e)
                keys.append(key)
                view[key] = now
        if changed:
            self.write_entities(changed, mode="replace")
        return keys, view, held

    def sync_edges(
        self,
        edges: Sequence[EdgeRow],
        sources: Iterable[EdgeSource],
        *,
        stored: LayerView | None = None,
        keep_view: bool = False,
        standing: AbstractSet[str] = frozenset(),
        columns: Sequence[EdgeColumns] = (),
        delta: ColumnsDelta | None = None,
        rows_delta: RowsDelta | None = None,
    ) -> EdgeSync:
        """Make the namespace's edges of `sources` equal `edges` and `columns`: write new and
        changed rows, delete the stored rows of those sources that neither holds any more.
        `stored`: what `stored_edges` would read now, which the sync changes in place into
        what is stored after it (`keep_view`: returned); `standing`: the keys of the nodes
        whose own edges (all from them but BELONGS_TO) are kept as stored and are not in
        `edges` (a memo reused their documents' edges, `graph/edge_memo.py`); `columns`: edges
        between entities, none repeating a pair of `edges`, compared as they come (most are as
        stored) instead of grouped as rows; `delta`: what of `columns` (one) can differ from
        what the last sync wrote of them, when that is known: only it is compared, and only
        its `gone` pairs are deleted, unless rows of the columns' type are synced too or
        stored in another form (an extractor's statements merged in): then every pair is;
        `rows_delta`: the rows of its type (from chunks or documents) are only those that can
        differ from what the last sync wrote, and its `gone` the only ones of them deleted."""
        view = as_view(self.stored_edges(sources) if stored is None else stored)
        seen: set[EdgeKey] = set()  # every edge this sync makes
        touched: list[EdgeKey] = []  # written here
        written = unchanged = 0
        types = {c.rel for c in columns}
        merged = False  # rows of a columns' type between entities
        for (rel, src, dst), rows in group_edges(edges, self.key).items():
            changed = []
            synced = src in _SYNCED_STARTS
            merged |= rel in types and src is NodeLabel.ENTITY and dst is NodeLabel.ENTITY
            t, la, lb = rel.value, src.value, dst.value
            for (s, d), row in rows.items():
                key = (t, la, lb, s, d)
                form = _stored_form(row)
                if synced:
                    seen.add(key)
                if _edge_differs(view.get(key), form):
                    changed.append(row)
                    touched.append(key)
                    if synced:
                        view.put(key, form)
                else:
                    unchanged += 1
            written += self._write_changed(rel, src, dst, changed)
        by_delta = delta is not None and [c.rel for c in columns] == [delta.now.rel] and not merged
        settled = frozenset() if rows_delta is None else {rows_delta.rel.value}
        unmade = _unmade(view, seen, standing, columns, by_delta=by_delta, settled=settled)
        if unmade.foreign:  # rare: walk again for every stored edge of the columns' types
            by_delta = False
            unmade = _unmade(view, seen, standing, columns, by_delta=False, settled=settled)
        keys = KeyCache(self.key)
        gone = unmade.rest
        for cols in (delta.now,) if by_delta and delta is not None else columns:
            changed, same = _changed_columns(cols, view, seen, touched, keys)
            unchanged += same
            written += self._write_changed(cols.rel, NodeLabel.ENTITY, NodeLabel.ENTITY, changed)
        if not by_delta:
            gone += [k for k in unmade.typed if k not in seen]
        named = [] if rows_delta is None else [(rows_delta.rel, a, b) for a, b in rows_delta.gone]
        if by_delta and delta is not None:
            e = NodeLabel.ENTITY
            named += [(delta.now.rel, NodeRef(e, s), NodeRef(e, d)) for s, d in delta.gone]
        for rel, a, b in named:  # what a delta says went, where it is still stored
            k = (rel.value, a.label.value, b.label.value, keys[a.id], keys[b.id])
            if k in view and k not in seen:
                gone.append(k)
        for k in gone:
            view.take(k)
        deleted = self._delete_edges(gone)
        return EdgeSync(
            edges_written=written,
            edges_deleted=deleted,
            edges_unchanged=unchanged,
            view=view if keep_view else None,
            entity_ends=_entity_ends([*touched, *gone]),
        )

    def _write_changed(
        self, rel: RelType, src: NodeLabel, dst: NodeLabel, changed: Sequence[dict[str, Any]]
    ) -> int:
        if not changed:
            return 0
        self.mark(r[end] for r in changed for end in ("s", "d"))
        written = self._write_rows(
            merge_edges_query(rel, src, dst, "replace"), changed, op="sync_edges", run=None
        )
        if rel is RelType.MENTIONS:
            self.refresh_entity_stats(sorted({r["d"] for r in changed}), keys=True)
        return written

    def delete_unlisted_aliases(self, among: Iterable[str] | None = None) -> None:
        """Alias links that their entity's aliases no longer list go, and the aliases they
        leave unlinked; `among`: the keys of the only entities that can have such links (those
        a replace write changed), looked at instead of every alias."""
        keys = None if among is None else sorted(set(among))
        self._write("sync_aliases", lambda tx: delete_unlisted_aliases(tx, self.ns, keys))

    def stored_edges(
        self, sources: Iterable[EdgeSource], *, touching: Iterable[str] | None = None
    ) -> LayerView:
        """The stored edges of `sources` that `sync_edges` keeps equal to a pass's rows (those
        from chunks, documents and entities); `touching`: only those with an end among these
        node keys."""
        params: dict[str, Any] = {"sources": sorted(s.value for s in sources)}
        where = "WHERE r.source IN $sources"
        rows: list[dict[str, Any]] = []
        if touching is None:
            # By batches of start keys, each label's read first (`graph/store/row_reads.py`).
            for label in _SYNCED_STARTS:
                starts = self.read_table(
                    f"MATCH (a:{label.value} {{ns: $ns}})", {"k": "a.key"}, op="sync_edges"
                )
                rows += self.read_table_by_keys(
                    f"MATCH (a:{label.value} {{key: k}})-[r]->(b) {where}",
                    _EDGE_COLUMNS,
                    [str(r["k"]) for r in starts],
                    params,
                    op="sync_edges",
                )
        else:
            keys = sorted(set(touching))
            params["starts"] = [label.value for label in _SYNCED_STARTS]
            # Each end is found by its key first (ArcadeDB scans every edge for an end matched
            # in the pattern), under each label it can have: a start is one of the synced
            # labels, an end any; a key names one node, so misses cost a lookup.
            patterns = [f"(a:{s.value} {{key: k}}) MATCH (a)-[r]->(b)" for s in _SYNCED_STARTS]
            patterns += [f"(b:{e.value} {{key: k}}) MATCH (a)-[r]->(b)" for e in NodeLabel]
            for pattern in patterns:
                rows += self.read_table_by_keys(
                    f"MATCH {pattern} {where} AND labels(a)[0] IN $starts",
                    _EDGE_COLUMNS,
                    keys,
                    params,
                    op="sync_edges",
                )
        return LayerView(
            {
                (r["t"], r["la"], r["lb"], r["s"], r["d"]): {
                    k: v for k, v in dict(r["p"]).items() if k not in _BOOKKEEPING
                }
                for r in rows
            }
        )

    def _delete_edges(self, gone: Iterable[EdgeKey]) -> int:
        """Delete edges by their ends' keys; a MENTIONS edge that goes changes its entity's df."""
        grouped: dict[tuple[str, str, str], list[dict[str, str]]] = {}
        for t, la, lb, s, d in gone:
            grouped.setdefault((t, la, lb), []).append({"s": s, "d": d})
        deleted = 0
        for (t, la, lb), rows in sorted(grouped.items()):
            rel, src, dst = RelType(t), NodeLabel(la), NodeLabel(lb)
            self.mark(r[end] for r in rows for end in ("s", "d"))
            deleted += self._write_rows(
                q(
                    f"UNWIND $rows AS r MATCH (a:{src.value} {{key: r.s}}) "
                    f"MATCH (b:{dst.value} {{key: r.d}}) MATCH (a)-[e:{rel.value}]->(b) "
                    "DELETE e RETURN count(*) AS n"
                ),
                rows,
                op="sync_edges",
            )
            if rel is RelType.MENTIONS:
                self.refresh_entity_stats(sorted({r["d"] for r in rows}), keys=True)
        return deleted
