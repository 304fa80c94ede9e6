"""A projection kept current by deltas from the change log equals a fresh load, after any
sequence of ingests, edits and deletes; and a replica falls back to a whole load when the log
cannot say what changed."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from rayweave.graph.indexing import update_entity_layer
from rayweave.graph.projection import GraphProjection, ProjectionHolder, load_projection
from rayweave.graph.projection_delta import apply_delta, projection_updates, read_delta
from rayweave.graph.store import GraphStore

from .generated_corpus import generate, name_index, random_change, write

pytestmark = pytest.mark.integration


def signature(p: GraphProjection) -> tuple[Any, ...]:
    """A projection by ids rather than rows (a delta appends rows; a load numbers them anew)."""
    ids, kinds = p.nodes.ids, p.nodes.kinds

    def ident(row: int) -> tuple[int, str]:
        return int(kinds[row]), ids[row]

    chunks = {cid: (p.doc_id(r), p.level_of(r)) for cid, r in p.chunk_rows.items()}
    entities = {eid: (p.nodes.names[r], float(p.nodes.df[r])) for eid, r in p.entity_rows.items()}
    edges = {}
    for group, m in p.relations.items():
        coo = m.tocoo()
        edges[group] = {
            (ident(a), ident(b), round(float(w), 5))
            for a, b, w in zip(coo.row.tolist(), coo.col.tolist(), coo.data.tolist(), strict=True)
        }
    aliases = {form: sorted(ids[r] for r in rows.tolist()) for form, rows in p.aliases.items()}
    keys = {k: ident(r) for k, r in p.keys.items()}
    return chunks, entities, edges, aliases, keys


@pytest.mark.parametrize("seed", [3, 4])
def test_deltas_keep_a_projection_equal_to_a_fresh_load(
    seed: int, graph_store: GraphStore, tmp_path: Path
) -> None:
    rng = random.Random(seed)
    names = name_index(tmp_path, graph_store.ns)
    live = {f"D{i}": generate(rng, f"D{i}", 0) for i in range(8)}
    write(graph_store, list(live.values()))
    update_entity_layer(graph_store, names)
    current = load_projection(graph_store)
    touched = []
    for n in range(1, 9):
        random_change(rng, graph_store, live, n)
        update_entity_layer(graph_store, names)
        changes = graph_store.changes_since(current.version)
        assert not changes.full, f"step {n}: a write logged no keys"
        touched.append(len(changes.keys))
        current = apply_delta(
            current, read_delta(graph_store, changes.keys, current), at=changes.to
        )
        fresh = load_projection(graph_store)
        assert (current.stamp, current.version) == (fresh.stamp, fresh.version)
        assert signature(current) == signature(fresh), f"seed {seed}, step {n}"
    names.store.close()
    assert min(touched) > 0


def test_the_holder_updates_by_delta_and_reloads_when_the_log_is_cut(
    graph_store: GraphStore, tmp_path: Path
) -> None:
    rng = random.Random(5)
    names = name_index(tmp_path, graph_store.ns)
    live = {f"D{i}": generate(rng, f"D{i}", 0) for i in range(6)}
    write(graph_store, list(live.values()))
    update_entity_layer(graph_store, names)
    # A small corpus: one step touches most of it, which would otherwise call for a whole load.
    updates = projection_updates(graph_store, max_stale=1.0)
    holder = ProjectionHolder(lambda: load_projection(graph_store), updates, refresh_s=0)
    first = holder.current
    assert holder.refresh() is False
    random_change(rng, graph_store, live, 1)
    update_entity_layer(graph_store, names)
    assert holder.refresh() is True
    by_delta = holder.current
    assert len(by_delta.nodes.ids) > len(set(by_delta.keys.values()))  # tombstones: a delta
    assert signature(by_delta) == signature(load_projection(graph_store))
    # Entries older than the last one are gone: a replica this far behind reloads whole.
    kept = graph_store.settings.model_copy(update={"change_log_entries": 1})
    graph_store.settings = kept
    random_change(rng, graph_store, live, 2)
    update_entity_layer(graph_store, names)
    assert graph_store.changes_since(by_delta.version).full
    holder_behind = ProjectionHolder(lambda: first, updates, refresh_s=0)
    assert holder_behind.refresh() is True
    reloaded = holder_behind.current
    assert len(reloaded.nodes.ids) == len(set(reloaded.keys.values()))  # no tombstones: whole
    assert signature(reloaded) == signature(load_projection(graph_store))
    names.store.close()
