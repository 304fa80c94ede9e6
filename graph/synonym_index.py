"""Synonymy at the cost of the change: entity names live in a vector collection, and an update
relinks only the names whose neighbourhood it touched.

SYNONYM_OF joins each name to its `max_per_entity` closest partners at or above the threshold
(`graph/synonyms.py`), so an edge changes only when one end's partner list does, and a list
changes only when a name within the threshold of its owner arrives or goes. An update therefore
encodes the new names, asks the index for the neighbours of every name that arrived or went,
recomputes the lists of those neighbours (and reads the lists of their own neighbours, which
decide the edges back to them), and rewrites the edges that touch them. Everything else stays.

Vectors are cached per (entity, name) in `<collection>-names`, so a name is encoded once; the
points carry a fingerprint of the encoder and the rule, and a different one rebuilds all.
When the change reaches more than `full_fraction` of the names (a fresh ingest is all of them),
one blocked all-pairs pass over the stored vectors is cheaper than a query per name, and gives
the same edges: both paths score pairs from the same stored vectors through `partner_lists`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from rayweave.cluster.errors import NotFoundError
from rayweave.cluster.types import stable_id
from rayweave.cluster.vectors.store import CollectionSpec, VectorPoint, VectorQuery, VectorStore
from rayweave.graph.held_names import HeldNames, Name, read_entity_names
from rayweave.graph.schema import EdgeRow
from rayweave.graph.synonyms import is_candidate, synonym_edge, synonym_pairs, top_partners

if TYPE_CHECKING:
    from rayweave.graph.store import GraphStore

NAMES_SUFFIX = "-names"
_PAGE = 1024
_ENCODE_BATCH = 256
_FIRST_LIMIT = 32


def names_collection(collection: str) -> str:
    """The collection holding `collection`'s entity-name vectors."""
    return f"{collection}{NAMES_SUFFIX}"


@dataclass(frozen=True, slots=True, kw_only=True)
class SynonymRule:
    threshold: float
    max_per_entity: int
    encoder: str  # what produced the vectors: a changed model invalidates every cached one

    @property
    def fingerprint(self) -> str:
        return f"{self.encoder}|{self.threshold}|{self.max_per_entity}"


@dataclass(frozen=True, slots=True, kw_only=True)
class NameIndex:
    """Where a namespace's entity names are indexed, and how new ones are encoded."""

    store: VectorStore
    collection: str
    encode: Callable[[list[str]], np.ndarray]
    dense_dim: int
    rule: SynonymRule
    # Above this share of names changed, one all-pairs pass beats a query per name.
    full_fraction: float = 0.25


@dataclass(frozen=True, slots=True, kw_only=True)
class SynonymUpdate:
    names: int
    added: int
    removed: int
    relinked: int  # names whose edges were recomputed
    edges: int  # SYNONYM_OF edges written
    full: bool
    reread: int | None = None  # entity nodes read again from a held copy (None: all read)
    held: HeldNames | None = field(default=None, repr=False, compare=False)  # for the next run


def update_synonyms(
    graph: GraphStore, names: NameIndex, held: HeldNames | None = None
) -> SynonymUpdate:
    """Bring `graph`'s SYNONYM_OF edges and the name index up to the entities now stored (see
    module docstring). Ordered so that a run killed anywhere leaves the next one enough to
    redo: new names enter the index first, entities are marked linked after their edges are
    written, and names that went leave the index last. `held`: the entities as the last run
    left them, followed through the change log (`graph/held_names.py`); the result's `held`
    is this run's, for the next."""
    index, rule = names.store, names.rule
    read = read_entity_names(graph, held, rule.fingerprint)
    current = {
        name: mark == _link_mark(rule, name[1]) for name, mark in read.held.entities.values()
    }
    # Entity nodes created or renamed since they were last linked: their edges went with their
    # last delete (even where the name never left the index), or were never written.
    unlinked = sorted(n for n, linked in current.items() if not linked)
    if read.reread is None:
        stored = _stored_names(index, rule)
        if stored is None:  # absent, or built under another rule or encoder
            index.drop()
            stored = {}
        ids = {_point_id(n): n for n in current}
        empty = not stored
    else:  # the last run left every name then current in the index: ask about the rest
        entities = read.held.entities
        asked = {entities[k][0] for k in read.reread if k in entities} | {*unlinked, *read.gone}
        stored = _indexed(index, asked)
        ids = {_point_id(n): n for n in asked if n in current}
        empty = False
    if not current:
        return _clear(graph, index, len(stored))
    _ensure(names)
    # Sorted: batch composition moves a quantised encoder's vectors, so it must not follow
    # storage order.
    added = sorted(n for pid, n in ids.items() if pid not in stored)
    removed = sorted(pid for pid in stored if pid not in ids)
    _add(index, added, names.encode, rule)
    full = empty or len(unlinked) + len(removed) > names.full_fraction * len(current)
    if full:
        edges = _all_pairs(index, sorted(current), rule)
        graph.mark_all()
        graph.write("MATCH (:Entity {ns: $ns})-[r:SYNONYM_OF]->() DELETE r", op="synonyms")
        relinked = len(current)
    else:
        skip = set(removed)
        moved = [*_vectors(index, removed).values()]
        moved += _vectors(index, [_point_id(n) for n in unlinked]).values()
        relink = set(unlinked) | _neighbours_of(moved, index, rule, skip)
        edges = _local_edges(index, relink, rule, skip)
        ends = sorted({eid for eid, _ in relink} | {stored[pid][0] for pid in removed})
        graph.mark(graph.key(eid) for eid in ends)
        graph.write(
            "UNWIND $keys AS k MATCH (e:Entity {key: k}) MATCH (e)-[r:SYNONYM_OF]-() DELETE r",
            {"keys": [graph.key(eid) for eid in ends]},
            op="synonyms",
        )
        relinked = len(relink)
    written = graph.write_edges(edges, mode="replace") if edges else 0
    graph.write(
        "UNWIND $rows AS r MATCH (e:Entity {key: r.k}) SET e.synonyms = r.v",
        {"rows": [{"k": graph.key(eid), "v": _link_mark(rule, name)} for eid, name in unlinked]},
        op="synonyms",
    )
    if removed:
        index.delete({"chunk_id": removed})
    graph.touch()
    return SynonymUpdate(
        names=len(current),
        added=len(added),
        removed=len(removed),
        relinked=relinked,
        edges=written,
        full=full,
        reread=None if read.reread is None else len(read.reread),
        held=read.held,
    )


def _clear(graph: GraphStore, index: VectorStore, removed: int) -> SynonymUpdate:
    """No entities: no synonyms and no index."""
    index.drop()
    graph.mark_all()
    graph.write("MATCH (:Entity {ns: $ns})-[r:SYNONYM_OF]->() DELETE r", op="synonyms")
    graph.touch()
    return SynonymUpdate(names=0, added=0, removed=removed, relinked=0, edges=0, full=True)


def _link_mark(rule: SynonymRule, name: str) -> str:
    """What an entity linked under `rule` as `name` carries (a rename unlinks it)."""
    return f"{rule.fingerprint}|{name}"


def _ensure(names: NameIndex) -> None:
    names.store.ensure_collection(
        CollectionSpec(
            name=names.collection,
            dense_dim=names.dense_dim,
            sparse=False,
            keyword_fields=("chunk_id",),
            bool_fields=(),
        )
    )


def _point_id(n: Name) -> str:
    return stable_id("entity-name", *n)


def _stored_names(index: VectorStore, rule: SynonymRule) -> dict[str, Name] | None:
    """Point id -> (entity id, name) of every indexed name; None when the collection is absent
    or was built under another rule."""
    try:
        index.spec()
    except NotFoundError:
        return None
    out: dict[str, Name] = {}
    offset: str | None = None
    while True:
        points, offset = index.scroll(limit=_PAGE, offset=offset)
        for p in points:
            if p.payload.get("rule") != rule.fingerprint:
                return None
            out[p.id] = (str(p.payload["entity"]), str(p.payload["name"]))
        if offset is None:
            return out


def _indexed(index: VectorStore, names: Iterable[Name]) -> dict[str, Name]:
    """Point id -> (entity id, name) of those of `names` that the index holds."""
    wanted = sorted({_point_id(n) for n in names})
    found = index.retrieve(wanted) if wanted else []
    return {
        _point_id(n): n for n in ((str(p.payload["entity"]), str(p.payload["name"])) for p in found)
    }


def _add(
    index: VectorStore,
    names: Sequence[Name],
    encode: Callable[[list[str]], np.ndarray],
    rule: SynonymRule,
) -> None:
    for start in range(0, len(names), _ENCODE_BATCH):
        part = names[start : start + _ENCODE_BATCH]
        vectors = encode([n for _, n in part])
        index.upsert(
            [
                VectorPoint(
                    id=_point_id(n),
                    payload={"entity": n[0], "name": n[1], "rule": rule.fingerprint},
                    dense=v,
                )
                for n, v in zip(part, vectors, strict=True)
            ]
        )


def _vectors(index: VectorStore, point_ids: Sequence[str]) -> dict[Name, np.ndarray]:
    """Stored (normalised) vectors of the given points."""
    found = index.retrieve(list(point_ids), with_vectors=True)
    return {
        (str(p.payload["entity"]), str(p.payload["name"])): np.asarray(p.vectors["dense"])
        for p in found
    }


def _neighbours(
    index: VectorStore, vector: np.ndarray, rule: SynonymRule, skip: AbstractSet[str]
) -> dict[Name, np.ndarray]:
    """Every indexed name whose stored score reaches (just under) the threshold, with its
    vector, but those in `skip` (names on their way out): the limit doubles until the last hit
    falls below it."""
    limit = _FIRST_LIMIT
    floor = rule.threshold - 1e-4  # the exact comparison happens on the vectors, below
    while True:
        hits = index.query(VectorQuery(mode="dense", dense=vector, limit=limit, exact=True))
        if len(hits) < limit or hits[-1].score < floor:
            close = [h.id for h in hits if h.score >= floor and h.id not in skip]
            return _vectors(index, close)
        limit *= 4


def _neighbours_of(
    vectors: Sequence[np.ndarray], index: VectorStore, rule: SynonymRule, skip: AbstractSet[str]
) -> set[Name]:
    out: set[Name] = set()
    for v in vectors:
        out.update(_neighbours(index, v, rule, skip))
    return out


def _local_edges(
    index: VectorStore, relink: set[Name], rule: SynonymRule, skip: AbstractSet[str]
) -> list[EdgeRow]:
    """SYNONYM_OF edges that touch `relink`: each name's own partner list, plus its
    neighbours' lists where they name it back."""
    vectors = _vectors(index, [_point_id(n) for n in sorted(relink)])
    around = {n: _neighbours(index, v, rule, skip) for n, v in vectors.items()}
    for near in around.values():
        vectors.update(near)
    lists = {n: partner_list(n, vectors[n], near, rule) for n, near in around.items()}
    for near in list(around.values()):
        for m in near:
            if m not in lists:
                near_m = _neighbours(index, vectors[m], rule, skip)
                lists[m] = partner_list(m, vectors[m], near_m, rule)
    pairs = {
        (min(n, m), max(n, m))
        for n, partners in lists.items()
        for m in partners
        if n in relink or m in relink
    }
    return [synonym_edge(a[0], b[0], _similarity(vectors[a], vectors[b])) for a, b in sorted(pairs)]


def partner_list(
    owner: Name, vector: np.ndarray, near: Mapping[Name, np.ndarray], rule: SynonymRule
) -> list[Name]:
    """`owner`'s kept partners among its neighbours `near`, by `synonym_pairs`' rule (ties go
    to the name that sorts first, as its global order does)."""
    candidates = sorted(m for m in near if m != owner and is_candidate(owner[1], m[1]))
    scored = [(_similarity(vector, near[m]), k) for k, m in enumerate(candidates)]
    kept = top_partners((p for p in scored if p[0] >= rule.threshold), rule.max_per_entity)
    return [candidates[k] for _, k in kept]


def _similarity(a: np.ndarray, b: np.ndarray) -> float:
    return round(float(a.astype(np.float32) @ b.astype(np.float32)), 6)


def _all_pairs(index: VectorStore, names: Sequence[Name], rule: SynonymRule) -> list[EdgeRow]:
    found = _vectors(index, [_point_id(n) for n in names])
    ordered = [n for n in names if n in found]
    if len(ordered) < 2:
        return []
    pairs = synonym_pairs(
        [n for _, n in ordered],
        np.stack([found[n] for n in ordered]),
        threshold=rule.threshold,
        max_per_entity=rule.max_per_entity,
    )
    return [synonym_edge(ordered[i][0], ordered[j][0], sim) for i, j, sim in pairs]
