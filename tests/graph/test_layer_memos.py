"""Where a corpus pass's caches live between passes: files, or memory with the files written
behind. The passes themselves are in `test_indexing_invariant.py` (both keepers)."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest

from rayweave.graph.edge_memo import EdgeMemo
from rayweave.graph.layer_memos import HeldMemos, LayerMemos, MemoFiles
from rayweave.graph.layer_snapshot import LayerSnapshot
from rayweave.graph.match_memo import MatchMemo
from rayweave.graph.store.change_log import StoreVersion


def _memos(made: str, version: int) -> LayerMemos:
    at = StoreVersion(stamp="s", version=version)
    return LayerMemos(
        snapshot=LayerSnapshot(ns="ns", at=at, view={}),
        matches=MatchMemo(max_ngram=3, forms={}, cased=frozenset(), words={}, rows={}, made=made),
        parts=EdgeMemo(made=made, at=at, header="h", facts={}, documents={}),
    )


def _made(memos: LayerMemos) -> tuple[int | None, str | None, str | None]:
    return (
        None if memos.snapshot is None else memos.snapshot.at.version,
        None if memos.matches is None else memos.matches.made,
        None if memos.parts is None else memos.parts.made,
    )


def test_files_keep_only_the_caches_they_name(tmp_path: Path) -> None:
    files = MemoFiles(snapshot=tmp_path / "a.pickle")
    assert files.kept == {"snapshot"}
    files.keep(_memos("p1", 1))
    assert _made(files.load()) == (1, None, None)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.pickle"]
    assert MemoFiles.under(tmp_path, "ns").kept == {"snapshot", "matches", "parts"}


def test_held_memos_read_the_files_once_and_write_them_behind(tmp_path: Path) -> None:
    files = MemoFiles.under(tmp_path, "ns")
    files.keep(_memos("p1", 1))
    held = HeldMemos(files)
    assert _made(held.load()) == (1, "p1", "p1")
    files.keep(_memos("other", 5))  # another process's pass: memory is what this one uses
    assert _made(held.load()) == (1, "p1", "p1")
    held.keep(_memos("p2", 2))
    assert _made(files.load()) == (5, "other", "other")  # not yet written
    held.write_behind()
    held.flush()
    assert _made(files.load()) == (2, "p2", "p2")  # the files follow, for the next process
    assert _made(held.load()) == (2, "p2", "p2")
    held.keep(_memos("p3", 3))
    held.load()  # a pass that starts does not wait for files
    assert _made(files.load()) == (2, "p2", "p2")
    held.flush()
    assert _made(files.load()) == (3, "p3", "p3")


def test_a_cache_not_made_stays_as_it_was(tmp_path: Path) -> None:
    # A `full` pass makes no snapshot and no document parts, only a new match memo.
    held = HeldMemos(MemoFiles.under(tmp_path, "ns"))
    held.keep(_memos("p1", 1))
    held.keep(LayerMemos(matches=_memos("p2", 2).matches))
    assert _made(held.load()) == (1, "p2", "p1")
    held.release()
    assert not held.held
    assert _made(held.load()) == (1, "p2", "p1")  # read back from the files


def test_forgetting_the_snapshot_drops_it_in_memory_and_on_disk(tmp_path: Path) -> None:
    files = MemoFiles.under(tmp_path, "ns")
    held = HeldMemos(files)
    held.keep(_memos("p1", 1))
    held.forget_snapshot()
    assert _made(held.load()) == (None, "p1", "p1")
    assert files.snapshot is not None
    assert not files.snapshot.exists()
    held.flush()  # what was kept goes to the files, but for the snapshot
    assert not files.snapshot.exists()
    assert _made(files.load()) == (None, "p1", "p1")


def test_caches_handed_over_are_neither_held_nor_written(tmp_path: Path) -> None:
    """The pass changes a handed-over snapshot and parts memo in place: one that fails half way
    must leave neither in memory nor a file written from them (under the version they had)."""
    files = MemoFiles.under(tmp_path, "ns")
    held = HeldMemos(files)
    held.keep(_memos("p0", 0))
    held.flush()
    held.keep(_memos("p1", 1))  # not written yet when the next pass starts
    loaded = held.load()
    held.hand_over("snapshot", "parts")
    assert loaded.snapshot is not None
    assert loaded.parts is not None
    loaded.snapshot.view[("RELATED_TO", "Entity", "Entity", "a", "b")] = {}  # the pass's change
    loaded.parts.facts["resolve"] = {"ada": ("e1",)}
    assert _made(held.load()) == (None, "p1", None)
    held.release()  # the pass failed; the namespace is let go
    written = files.load()
    assert written.snapshot is not None
    assert written.parts is not None
    assert (written.snapshot.at.version, written.snapshot.view) == (0, {})  # the earlier pass's
    assert written.parts.facts == {}
    assert _made(written) == (0, "p1", "p0")
    files.hand_over("snapshot", "parts")  # each load of a file is its own copy: nothing to let go


class _SlowToPickle:
    """Pickles as a megabyte after half a second: a snapshot of 670k edges takes seconds."""

    started = threading.Event()

    def __reduce__(self) -> tuple[type[bytes], tuple[bytes]]:
        _SlowToPickle.started.set()
        time.sleep(0.5)
        return bytes, (b"x" * (1 << 20),)


def test_a_pass_that_starts_stops_the_write_behind_which_waits_for_the_next(
    tmp_path: Path,
) -> None:
    files = MemoFiles.under(tmp_path, "ns")
    held = HeldMemos(files)
    held.keep(_memos("p1", 1))
    held.flush()
    slow = _memos("p2", 2)
    assert slow.snapshot is not None
    slow.snapshot.view[("RELATED_TO", "Entity", "Entity", "a", "b")] = {"w": _SlowToPickle()}
    held.keep(slow)
    ran: list[str] = []
    held.write_behind(then=lambda: ran.append("then"))
    assert _SlowToPickle.started.wait(10)
    held.load()  # the next pass: it stops the write instead of waiting for it
    assert _made(files.load()) == (1, "p1", "p1")  # as the earlier pass left them
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "ns.matches.pickle",
        "ns.parts.pickle",
        "ns.pickle",
    ]  # no half-written file beside them
    assert ran == []  # what follows a write runs only after one that finished
    held.flush()  # what it did not write goes with the next write
    assert _made(files.load()) == (2, "p2", "p2")


def test_a_failed_write_is_logged_and_memory_still_serves(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the folder should be")
    held = HeldMemos(MemoFiles.under(blocked, "ns"))
    with caplog.at_level(logging.WARNING, logger="rayweave.graph.layer_memos"):
        held.keep(_memos("p1", 1))
        held.write_behind()
        held.flush()
    assert "could not write the layer memos" in caplog.text
    assert _made(held.load()) == (1, "p1", "p1")
