"""The layer snapshot and the change log together give what reading the whole stored layer
gives, for a fraction of the reads; a snapshot the log cannot vouch for is never used."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from rayweave.graph.indexing import update_entity_layer
from rayweave.graph.layer_memos import HeldMemos, MemoFiles
from rayweave.graph.layer_snapshot import load_snapshot, stored_layer
from rayweave.graph.schema import CORPUS_SOURCES, EntityRow
from rayweave.graph.store import GraphStore

from .generated_corpus import generate, random_change, titled, write

pytestmark = pytest.mark.integration


def test_snapshot_and_log_equal_a_whole_read(graph_store: GraphStore, tmp_path: Path) -> None:
    rng = random.Random(11)
    layer = tmp_path / "layer.pickle"
    live = {f"D{i}": generate(rng, f"D{i}", 0) for i in range(8)}
    write(graph_store, list(live.values()))
    update_entity_layer(graph_store, None, memos=MemoFiles(snapshot=layer))
    for step in range(6):
        random_change(rng, graph_store, live, step + 1)
        # Between a write and its upkeep, as the next upkeep starts: the snapshot is behind.
        found = stored_layer(graph_store, CORPUS_SOURCES, load_snapshot(layer))
        whole = graph_store.stored_edges(CORPUS_SOURCES)
        assert found.reread is not None
        assert found.view == whole, f"step {step}"
        assert found.entities == graph_store.stored_entities(), f"step {step}"
        # The caller's own copy is changed into the same, in place.
        own = load_snapshot(layer)
        assert own is not None
        taken = stored_layer(graph_store, CORPUS_SOURCES, own, owned=True)
        assert taken.view is own.view
        assert taken.view == whole
        assert taken.entities is own.entities
        assert taken.unsettled == found.unsettled
        assert (
            update_entity_layer(graph_store, None, memos=MemoFiles(snapshot=layer)).corpus.reread
            is not None
        )
    assert stored_layer(graph_store, CORPUS_SOURCES, load_snapshot(layer)).view == (
        graph_store.stored_edges(CORPUS_SOURCES)
    )


def test_a_snapshot_the_log_cannot_vouch_for_is_not_used(
    graph_store: GraphStore, tmp_path: Path
) -> None:
    rng = random.Random(12)
    layer = tmp_path / "layer.pickle"
    docs = [generate(rng, f"D{i}", 0) for i in range(4)]
    write(graph_store, docs)
    update_entity_layer(graph_store, None, memos=MemoFiles(snapshot=layer))
    snapshot = load_snapshot(layer)
    assert snapshot is not None
    assert snapshot.view

    # The namespace dropped and written anew, up to a later version: by version alone the log
    # would look like a continuation of the snapshot's history.
    graph_store.drop_namespace()
    write(graph_store, docs[:2])
    for _ in range(snapshot.at.version + 1):
        graph_store.touch()
    assert stored_layer(graph_store, CORPUS_SOURCES, snapshot).reread is None
    # Another namespace's snapshot, a full entry, a torn file: all read the stored layer.
    other = graph_store.for_namespace(f"{graph_store.ns}-other")
    assert stored_layer(other, CORPUS_SOURCES, snapshot).reread is None
    update_entity_layer(graph_store, None, memos=MemoFiles(snapshot=layer))
    graph_store.mark_all()
    graph_store.touch()
    assert stored_layer(graph_store, CORPUS_SOURCES, load_snapshot(layer)).reread is None
    layer.write_bytes(b"not a pickle")
    assert load_snapshot(layer) is None
    assert load_snapshot(tmp_path / "absent.pickle") is None


def test_entities_a_prune_deletes_are_not_kept_as_stored(
    graph_store: GraphStore, tmp_path: Path
) -> None:
    rng = random.Random(13)
    layer = tmp_path / "layer.pickle"
    write(graph_store, [generate(rng, f"D{i}", 0) for i in range(3)])
    for _ in range(2):  # the second reads from the first's snapshot, and prunes only its ends
        update_entity_layer(graph_store, None, memos=MemoFiles(snapshot=layer))
    graph_store.write_entities([EntityRow(id="orphan", name="Orphan Thing")])
    graph_store.touch()
    update_entity_layer(graph_store, None, memos=MemoFiles(snapshot=layer))
    snapshot = load_snapshot(layer)
    assert snapshot is not None
    assert snapshot.entities is not None
    assert graph_store.key("orphan") in snapshot.entities  # no edge, but stored
    assert graph_store.prune(0.0).entities == 1  # a user's prune: orphans anywhere
    found = stored_layer(graph_store, CORPUS_SOURCES, snapshot)
    assert found.reread is not None  # the log names what went: no whole read
    assert found.entities == graph_store.stored_entities()


def test_only_another_writers_keys_unsettle_a_documents_edges(
    graph_store: GraphStore, tmp_path: Path
) -> None:
    rng = random.Random(14)
    layer = tmp_path / "layer.pickle"
    write(graph_store, [generate(rng, f"D{i}", 0) for i in range(3)])
    for _ in range(2):  # the first relinks every name: a full log entry, read whole next
        update_entity_layer(graph_store, None, memos=MemoFiles(snapshot=layer))
    snapshot = load_snapshot(layer)
    assert snapshot is not None
    assert snapshot.made  # the pass's name, as its entries carry it
    key = graph_store.key("D0")
    with graph_store.writing_as(snapshot.made):  # as the pass that kept it, after its sync
        graph_store.mark([key])
        graph_store.touch()
    own = stored_layer(graph_store, CORPUS_SOURCES, snapshot)
    assert own.unsettled is not None
    assert key not in own.unsettled
    assert own.view == graph_store.stored_edges(CORPUS_SOURCES)  # read back all the same
    graph_store.mark([key])  # anyone else
    graph_store.touch()
    other = stored_layer(graph_store, CORPUS_SOURCES, load_snapshot(layer))
    assert other.unsettled is not None
    assert key in other.unsettled


def test_what_the_passs_own_sync_wrote_is_not_read_back(
    graph_store: GraphStore, tmp_path: Path
) -> None:
    # The sync's keys are logged in an entry of their own, which the snapshot holds as
    # written; the clean-up's (entities pruned after the sync) and anyone else's are read.
    rng = random.Random(15)
    layer = tmp_path / "layer.pickle"
    live = {f"D{i}": generate(rng, f"D{i}", 0) for i in range(6)}
    write(graph_store, list(live.values()))
    for _ in range(2):  # the first relinks every name: a full log entry, read whole next
        update_entity_layer(graph_store, None, memos=MemoFiles(snapshot=layer))
    held = 0
    for step in range(6):
        random_change(rng, graph_store, live, step + 1)
        update_entity_layer(graph_store, None, memos=MemoFiles(snapshot=layer))
        snapshot = load_snapshot(layer)
        assert snapshot is not None
        assert snapshot.synced is not None
        at = snapshot.at
        changes = graph_store.changes_since(
            at.version, stamp=at.stamp, own=snapshot.made, held=snapshot.synced
        )
        found = stored_layer(graph_store, CORPUS_SOURCES, snapshot)
        assert found.reread == len(changes.keys - changes.held), f"step {step}"
        assert found.view == graph_store.stored_edges(CORPUS_SOURCES), f"step {step}"
        assert found.entities == graph_store.stored_entities(), f"step {step}"
        held += len(changes.held)
    assert held > 0, "no sync wrote anything: nothing was tested"


def test_what_the_passs_clean_up_deleted_after_its_sync_is_read_back(
    graph_store: GraphStore, tmp_path: Path
) -> None:
    # "Gadgets" is an entity of its own until a document titled "Gadget" merges the plural into
    # the singular: the sync moves its edges away, then the clean-up prunes it. Its key is in
    # the sync's entry, which the snapshot holds as written, and in the clean-up's, which it
    # does not: the next pass must not keep the entity as stored.
    layer = tmp_path / "layer.pickle"
    write(graph_store, [titled("A", "Gadgets", "Gadgets are small tools that fit in a pocket.")])
    for _ in range(2):  # the first relinks every name: a full log entry, read whole next
        update_entity_layer(graph_store, None, memos=MemoFiles(snapshot=layer))
    before = graph_store.stored_entities()
    write(graph_store, [titled("B", "Gadget", "A Gadget is one of the small tools.")])
    update_entity_layer(graph_store, None, memos=MemoFiles(snapshot=layer))
    assert before.keys() - graph_store.stored_entities().keys(), "the plural did not merge away"
    found = stored_layer(graph_store, CORPUS_SOURCES, load_snapshot(layer))
    assert found.reread is not None
    assert found.entities == graph_store.stored_entities()
    assert found.view == graph_store.stored_edges(CORPUS_SOURCES)


def test_held_rows_are_vouched_for_only_where_no_write_has_been_since(
    graph_store: GraphStore, tmp_path: Path
) -> None:
    rng = random.Random(16)
    write(graph_store, [generate(rng, f"D{i}", 0) for i in range(3)])
    memos = HeldMemos(MemoFiles.under(tmp_path / "layers", graph_store.ns))
    for _ in range(2):  # the first relinks every name: a full log entry, read whole next
        update_entity_layer(graph_store, None, memos=memos)
    snapshot = memos.load().snapshot
    assert snapshot is not None
    assert snapshot.rows  # held in memory, as the upkeep actor holds them
    key = min(snapshot.rows)
    graph_store.mark([key])  # any write that names the entity
    graph_store.touch()
    found = stored_layer(graph_store, CORPUS_SOURCES, snapshot)
    assert found.rows is not None
    assert found.rows.keys() == snapshot.rows.keys() - {key}
    memos.flush()
    saved = load_snapshot(memos.files.snapshot)
    assert saved is not None
    assert saved.rows is None  # a row read from a file is no object a lexicon hands on
