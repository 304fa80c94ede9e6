"""The entity layer's edges as the last corpus pass left them, kept beside the store.

The corpus pass writes its recomputed edges as a difference from the stored ones
(`GraphLayerSync.sync_edges`), so it must know what is stored: reading every edge back costs
what the corpus costs (84 s of a 200 s pass over 10,406 documents), even when one document
changed. The pass's own result is that knowledge, up to what was written since. So each pass
saves the edges it synced with the change-log version it started from; the next pass takes the
snapshot, drops every edge with an end among the keys logged since that version, and reads only
those keys' edges from the store (`graph/store/change_log.py`: every write names the nodes whose
edges it changed). The result equals a full read. The stored entities, which the pass compares
its entity rows with (59k at 10k documents, 0.8 s of an upkeep to read), are kept alike.
The pass's own writes come after that version too. Its sync has an entry of its own, whose keys
the snapshot holds as written, so they are not read back; what its clean-up and synonymy wrote
after the sync (an entity pruned, an alias dropped) is. Only another writer's keys make a
document's stored edges unsettled (`StoredLayer.unsettled`): what the pass wrote is what its
memos hold.

The snapshot is a cache, never the truth: it is used only when the log still reaches back to
its version through the same stamp (not compacted, no full entry, the namespace not written
anew), and is otherwise ignored and replaced. Saving starts from the version seen before the
pass read anything, so writes that land while it runs are re-read next time.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from rayweave.graph.cache_file import read_cache, write_cache
from rayweave.graph.schema import EdgeSource, NodeLabel
from rayweave.graph.store import GraphStore
from rayweave.graph.store.change_log import StoreVersion
from rayweave.graph.store.layer_sync import EntityRows, EntityView
from rayweave.graph.store.layer_view import LayerView, as_view

log = logging.getLogger(__name__)

_FORMAT = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class LayerSnapshot:
    """The synced edges (`view`) of namespace `ns`, true for every edge whose ends no write
    after `at` names; `entities`, the stored entities, likewise for every entity no write after
    `at` names (None: not kept); `made`: the writer that the pass which kept it named in its
    change-log entries ('' for none); `synced`: the version of its entry for the sync alone,
    whose keys `view` and `entities` hold as they were written (None: none); `rows`: by key,
    the entity rows that the stored entities equal (`GraphLayerSync.sync_entities`), held in
    memory only (None: not held, as after a load from file)."""

    ns: str
    at: StoreVersion
    view: LayerView
    entities: EntityView | None = None
    made: str = ""
    synced: int | None = None
    rows: EntityRows | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredLayer:
    """What `stored_layer` found: the view, the version it is true from, and how it was made
    (`reread` keys read from the store; None when the whole layer was read). `unsettled`: the
    keys of the nodes whose edges may no longer be what the snapshot's pass left (the nodes
    another writer touched since, and the starts of edges to such a chunk or document: the
    pass's own writes are what it left); None when the layer was read whole."""

    view: LayerView
    at: StoreVersion
    reread: int | None
    since: StoreVersion | None = None  # the snapshot's version, when one was used
    unsettled: frozenset[str] | None = None
    entities: EntityView | None = None  # the stored entities, when the snapshot kept them
    rows: EntityRows | None = None  # the rows they equal, when held: see `LayerSnapshot`


def stored_layer(
    store: GraphStore,
    sources: Iterable[EdgeSource],
    snapshot: LayerSnapshot | None,
    *,
    owned: bool = False,
    index: bool = False,
) -> StoredLayer:
    """The stored synced edges of `sources`: from `snapshot` and the keys logged since it when
    the log allows, else read whole. `owned`: the snapshot is the caller's to change, and
    becomes the result (a copy of its 670k edges at 10k documents cost 0.2 s a pass); `index`:
    the view keeps its index by node (`graph/store/layer_view.py`), built when it has none, for
    a caller that holds it for the next pass."""
    sources = tuple(sources)
    if snapshot is not None and snapshot.ns == store.ns and snapshot.at.stamp is not None:
        changes = store.changes_since(
            snapshot.at.version, stamp=snapshot.at.stamp, own=snapshot.made, held=snapshot.synced
        )
        if not changes.full:
            # What the pass's own sync wrote, the snapshot holds as written: not read back.
            keys, foreign = changes.keys - changes.held, changes.foreign
            view = as_view(snapshot.view) if owned else LayerView(snapshot.view)
            if index:
                view.indexed()
            # An entity is never written away under an edge that the next pass still makes
            # (`graph/edge_memo.py`); a chunk or document can be, by ingesting it again.
            entity = NodeLabel.ENTITY.value
            starts: set[str] = set()
            if keys:
                dropped = view.touching(keys)
                starts = {k[3] for k in dropped if k[4] in foreign and k[2] != entity}
                for k in dropped:
                    view.take(k)
                view.merge(store.stored_edges(sources, touching=keys))
            entities = None
            if snapshot.entities is not None:  # a key written since is read again, or gone
                entities = snapshot.entities if owned else dict(snapshot.entities)
                for key in keys:
                    entities.pop(key, None)
                if keys:
                    entities.update(store.stored_entities(keys))
            rows = None
            if entities is not None and snapshot.rows is not None:  # vouched for but there
                rows = snapshot.rows if owned else dict(snapshot.rows)
                for key in keys:
                    rows.pop(key, None)
            return StoredLayer(
                view=view,
                at=changes.to,
                reread=len(keys),
                since=snapshot.at,
                unsettled=foreign | starts,
                entities=entities,
                rows=rows,
            )
    at = store.version()
    whole = store.stored_edges(sources)
    if index:
        whole.indexed()
    return StoredLayer(view=whole, at=at, reread=None)


def load_snapshot(path: Path) -> LayerSnapshot | None:
    """The snapshot saved at `path`; None when there is none or it cannot be read (it is a
    cache: the caller reads the store instead)."""
    data = read_cache(path, _FORMAT, what="layer snapshot")
    if data is None:
        return None
    try:
        at = StoreVersion(stamp=data["stamp"], version=data["version"])
        return LayerSnapshot(
            ns=str(data["ns"]),
            at=at,
            view=as_view(data["edges"]),
            entities=data.get("entities"),
            made=str(data.get("made", "")),
            synced=data.get("synced"),
        )
    except (KeyError, TypeError) as exc:
        log.warning("layer snapshot %s is malformed (%s); reading the stored layer", path, exc)
        return None


def save_snapshot(
    path: Path, snapshot: LayerSnapshot, *, stop: threading.Event | None = None
) -> None:
    """Write `snapshot` to `path` atomically (a reader never sees half a file)."""
    data = {
        "ns": snapshot.ns,
        "stamp": snapshot.at.stamp,
        "version": snapshot.at.version,
        "edges": snapshot.view,
        "entities": snapshot.entities,
        "made": snapshot.made,
        "synced": snapshot.synced,
    }
    write_cache(path, _FORMAT, data, stop=stop)
