"""The change log: entries merge into the keys to re-read, or a full reload when they cannot."""

from __future__ import annotations

from pathlib import Path

import pytest

from rayweave.graph.store import GraphStore
from rayweave.graph.store.change_log import StoreVersion, merge_changes

AT = StoreVersion(stamp="s", version=4)


def entry(
    version: int, *keys: str, full: bool = False, value: str = "", writer: str = ""
) -> dict[str, object]:
    return {"version": version, "keys": list(keys), "full": full, "value": value, "writer": writer}


def test_entries_after_a_version_merge_into_their_keys() -> None:
    changes = merge_changes(2, AT, [entry(3, "a", "b"), entry(4, "b", "c")])
    assert (changes.full, changes.keys) == (False, {"a", "b", "c"})


def test_the_keys_only_a_readers_own_entries_name_are_told_apart() -> None:
    entries = [entry(3, "a", "b", writer="me"), entry(4, "b", "c", writer="other")]
    mine = merge_changes(2, AT, entries, own="me")
    assert (mine.keys, mine.own, mine.foreign) == ({"a", "b", "c"}, {"a"}, {"b", "c"})
    anyone = merge_changes(2, AT, entries)
    assert (anyone.keys, anyone.foreign) == ({"a", "b", "c"}, {"a", "b", "c"})
    # Its entry `held` (a write whose result it holds): the keys that only that entry names.
    later = [
        entry(3, "a", "b", writer="me"),
        entry(4, "a", "d", "e", writer="me"),
        entry(5, "b", "e", writer="other"),
    ]
    held = merge_changes(2, StoreVersion(stamp="s", version=5), later, own="me", held=4)
    assert (held.own, held.held, held.foreign) == ({"a", "d"}, {"d"}, {"b", "e"})
    # Its own full entry names nothing to tell apart.
    assert merge_changes(2, AT, [entry(3, "a"), entry(4, full=True, writer="me")], own="me").full


@pytest.mark.parametrize(
    "entries",
    [
        [entry(4, "a")],  # version 3 was compacted away
        [entry(3, "a"), entry(4, full=True)],  # a write that could not name its nodes
    ],
)
def test_a_gap_or_a_full_entry_means_a_whole_load(entries: list[dict[str, object]]) -> None:
    assert merge_changes(2, AT, entries).full


def test_a_reader_that_names_its_stamp_needs_its_own_entry_in_the_history() -> None:
    later = [entry(3, "a"), entry(4, "b")]
    same = merge_changes(2, AT, [entry(2, "old", value="v2"), *later], stamp="v2")
    assert (same.full, same.keys) == (False, {"a", "b"})  # entry 2 itself is not re-read
    assert merge_changes(2, AT, [entry(2, value="other"), *later], stamp="v2").full  # written anew
    assert merge_changes(2, AT, later, stamp="v2").full  # entry 2 compacted away


@pytest.mark.integration
def test_entries_appended_while_writing_as_someone_name_them(graph_store: GraphStore) -> None:
    graph_store.mark(["w"])
    graph_store.touch()
    seen = graph_store.version()
    with graph_store.writing_as("pass-1"):
        graph_store.mark(["x", "y"])
        graph_store.touch()
    graph_store.mark(["y", "z"])
    graph_store.touch()
    changes = graph_store.changes_since(seen.version, stamp=seen.stamp, own="pass-1")
    assert (changes.keys, changes.own, changes.foreign) == ({"x", "y", "z"}, {"x"}, {"y", "z"})
    assert graph_store.changes_since(seen.version, stamp=seen.stamp, own="pass-2").own == set()


@pytest.mark.integration
def test_a_namespace_written_anew_is_not_a_continuation(graph_store: GraphStore) -> None:
    graph_store.mark(["x"])
    graph_store.touch()
    seen = graph_store.version()
    graph_store.mark(["y"])
    graph_store.touch()
    assert graph_store.changes_since(seen.version, stamp=seen.stamp).keys == {"y"}
    graph_store.drop_namespace()
    for key in ("p", "q"):
        graph_store.mark([key])
        graph_store.touch()
    assert not graph_store.changes_since(seen.version).full  # by version alone: a wrong answer
    assert graph_store.changes_since(seen.version, stamp=seen.stamp).full
    graph_store.drop_namespace()
    graph_store.mark(["r"])
    graph_store.touch()  # the same version as `seen`, another history
    assert graph_store.changes_since(seen.version, stamp=seen.stamp).full


@pytest.mark.integration
def test_writes_log_their_keys_and_old_entries_are_dropped(graph_store: GraphStore) -> None:
    assert graph_store.version().version == 0
    graph_store.mark(["x", "y"])
    graph_store.touch()
    graph_store.touch()  # nothing marked: an empty entry, not a full one
    changes = graph_store.changes_since(0)
    assert (changes.to.version, changes.full, changes.keys) == (2, False, {"x", "y"})
    graph_store.mark_all()
    graph_store.touch()
    assert graph_store.changes_since(2).full
    few = graph_store.settings.model_copy(update={"change_log_entries": 2})
    graph_store.settings = few
    graph_store.mark(["z"])
    graph_store.touch()
    assert graph_store.changes_since(1).full  # entry 2 is gone
    assert graph_store.changes_since(3).keys == {"z"}
    graph_store.drop_namespace()
    assert graph_store.version().version == 0


@pytest.mark.integration
def test_after_an_upkeep_that_died_the_next_entry_is_full(
    graph_store: GraphStore, tmp_path: Path
) -> None:
    from rayweave.graph.indexing import update_entity_layer
    from rayweave.graph.layer_memos import MemoFiles

    layer = tmp_path / "layer.pickle"
    update_entity_layer(graph_store, None, memos=MemoFiles(snapshot=layer))
    done = graph_store.version().version
    assert not graph_store.changes_since(done - 1).full
    assert graph_store.begin_maintenance() is False  # then killed: its writes were not logged
    # Nor is its layer snapshot trusted: the next upkeep reads the stored layer whole.
    assert (
        update_entity_layer(graph_store, None, memos=MemoFiles(snapshot=layer)).corpus.reread
        is None
    )
    assert graph_store.changes_since(done).full
    after = graph_store.version().version
    update_entity_layer(graph_store, None)
    assert not graph_store.changes_since(after).full


@pytest.mark.integration
def test_chunk_rows_a_crash_cut_off_are_already_logged(
    graph_store: GraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunk rows take several transactions: the keys are logged before them, so a writer killed
    after its rows landed and before its closing entry leaves nothing a replica cannot see."""
    from rayweave.cluster.types import Chunk, Level

    before = graph_store.version().version
    real = graph_store._write_rows

    def killed(*args: object, **kwargs: object) -> int:
        real(*args, **kwargs)  # type: ignore[arg-type]
        raise ConnectionError("writer killed")

    monkeypatch.setattr(graph_store, "_write_rows", killed)
    chunk = Chunk(id="s1", doc_id="D", level=Level.SECTION, text="Ada Lovelace wrote notes.")
    with pytest.raises(ConnectionError, match="writer killed"):
        graph_store.write_chunks([chunk])
    changes = graph_store.changes_since(before)
    assert not changes.full
    assert graph_store.key("s1") in changes.keys
