"""What one corpus pass keeps for the next, and where it lives between passes.

A pass keeps three caches (`graph/indexing.py`): the layer snapshot, the match memo and the
document parts; held in memory, its input and phase 1 as well. Each is checked
against the store when the next pass starts, so any earlier pass's copy is safe to start from;
only how much it saves differs. Pickling them costs what parts of the pass they save do (at 10k
documents, 1.0 s to write and 0.5 s to read, of a 13 s upkeep), so where they live matters:

- `MemoFiles` keeps them in files beside the store: what a process that runs one upkeep and
  exits can leave.
- `HeldMemos` keeps them in memory for a process that runs upkeep after upkeep
  (`ingest/upkeep_host.py`). It still writes the files, so another process, or this one after a
  restart, starts from them: in a thread started once the upkeep has answered (pickling beside
  the upkeep's last steps slowed them by half of what it saved). A pass that starts while that
  write runs stops it rather than wait (3-5 s at 10k documents, for an update that follows
  another): the files stay as an earlier pass left them, which is as safe to start from, and
  what was not written goes with the next write, or when the namespace is let go.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, TypeVar

from rayweave.graph.cache_file import CacheWriteStopped
from rayweave.graph.corpus_content import CorpusContent
from rayweave.graph.edge_memo import EdgeMemo, load_edge_memo, save_edge_memo
from rayweave.graph.held_names import HeldNames
from rayweave.graph.layer_snapshot import LayerSnapshot, load_snapshot, save_snapshot
from rayweave.graph.match_memo import MatchMemo, load_memo, save_memo
from rayweave.graph.name_memo import NameMemo

log = logging.getLogger(__name__)

Memo = Literal["snapshot", "matches", "parts", "content", "names"]
_C = TypeVar("_C")


@dataclass(frozen=True, slots=True)
class LayerMemos:
    """The caches of one pass (None: not made, or not kept). `content`, the pass's input, and
    `names`, its phase 1 per document, are only ever held in memory (`graph/corpus_content.py`,
    `graph/name_memo.py`)."""

    snapshot: LayerSnapshot | None = None
    matches: MatchMemo | None = None
    parts: EdgeMemo | None = None
    content: CorpusContent | None = None
    names: NameMemo | None = None


class MemoKeeper(Protocol):
    """Where a corpus pass finds the caches of the last one and leaves its own."""

    @property
    def kept(self) -> frozenset[Memo]:
        """The caches this keeper keeps; a pass makes and uses only these."""
        ...

    def load(self) -> LayerMemos: ...

    def keep(self, memos: LayerMemos) -> None:
        """Keep the caches of `memos` that are not None; the others stay as they were."""
        ...

    def forget_snapshot(self) -> None:
        """Drop the snapshot: the stored layer may have changed without a log entry."""
        ...

    def hand_over(self, *which: Memo) -> None:
        """The loaded caches `which` are the pass's to change in place: stop holding them, so
        that a pass that fails half way leaves none of them (the next reads the layer whole,
        or computes every document)."""
        ...

    def held_names(self) -> HeldNames | None:
        """The entity names the last synonymy read (`graph/held_names.py`; memory only)."""
        ...

    def hold_names(self, names: HeldNames | None) -> None: ...


@dataclass(frozen=True, slots=True)
class MemoFiles:
    """The caches as pickles (None: that cache is not kept)."""

    snapshot: Path | None = None
    matches: Path | None = None
    parts: Path | None = None

    @classmethod
    def under(cls, folder: Path, collection: str) -> MemoFiles:
        """All three, named for `collection` in `folder` (the ingest's `<home>/graph/layers`)."""
        return cls(
            snapshot=folder / f"{collection}.pickle",
            matches=folder / f"{collection}.matches.pickle",
            parts=folder / f"{collection}.parts.pickle",
        )

    @property
    def kept(self) -> frozenset[Memo]:
        paths: dict[Memo, Path | None] = {
            "snapshot": self.snapshot,
            "matches": self.matches,
            "parts": self.parts,
        }
        return frozenset(memo for memo, path in paths.items() if path is not None)

    def load(self) -> LayerMemos:
        return LayerMemos(
            snapshot=load_snapshot(self.snapshot) if self.snapshot else None,
            matches=load_memo(self.matches) if self.matches else None,
            parts=load_edge_memo(self.parts) if self.parts else None,
        )

    def keep(self, memos: LayerMemos, *, stop: threading.Event | None = None) -> None:
        """`stop`: see `write_cache` (a file not yet begun is not written either)."""
        if self.snapshot is not None and memos.snapshot is not None:
            save_snapshot(self.snapshot, memos.snapshot, stop=stop)
        if self.matches is not None and memos.matches is not None:
            save_memo(self.matches, memos.matches, stop=stop)
        if self.parts is not None and memos.parts is not None:
            save_edge_memo(self.parts, memos.parts, stop=stop)

    def forget_snapshot(self) -> None:
        if self.snapshot is not None:
            self.snapshot.unlink(missing_ok=True)

    def hand_over(self, *which: Memo) -> None:
        pass  # each load reads its own copy

    def held_names(self) -> HeldNames | None:
        return None  # a file would cost what the read does, as for the pass's input

    def hold_names(self, names: HeldNames | None) -> None:
        pass


class HeldMemos:
    """`files`' caches held in memory from pass to pass; each pass's files are written when its
    host calls `write_behind` (after the upkeep, so the pickling does not slow its last steps),
    `flush` or `release`. A pass that starts meanwhile stops a write in progress (see module
    docstring).

    Not for concurrent passes over one namespace (the host runs one upkeep at a time)."""

    def __init__(self, files: MemoFiles) -> None:
        self.files = files
        self._held: LayerMemos | None = None  # None: not read yet
        self._names: HeldNames | None = None
        self._unwritten: LayerMemos | None = None  # kept and not in the files: the newest each
        self._writing: threading.Thread | None = None
        self._batch: LayerMemos | None = None  # what `_writing` writes
        self._written = False  # whether it wrote all of it
        self._stop = threading.Event()

    @property
    def kept(self) -> frozenset[Memo]:
        return self.files.kept | {"content", "names"}

    @property
    def held(self) -> bool:
        return self._held is not None

    def load(self) -> LayerMemos:
        self._join(stop=True)  # a pass starts: what it replaces or changes is not waited for
        if self._held is None:
            self._held = self.files.load()
        return self._held

    def keep(self, memos: LayerMemos) -> None:
        self._join(stop=True)
        self._held = _over(memos, self._held)
        self._unwritten = _over(memos, self._unwritten)

    def forget_snapshot(self) -> None:
        self._join(stop=True)
        self._drop("snapshot")
        self._names = None
        self.files.forget_snapshot()

    def hand_over(self, *which: Memo) -> None:
        self._join(stop=True)  # the pass changes them in place: no file is written from them
        self._drop(*which)

    def held_names(self) -> HeldNames | None:
        return self._names

    def hold_names(self, names: HeldNames | None) -> None:
        self._names = names

    def release(self) -> None:
        """Let go of the memory (the files stay, written first): the next pass reads them."""
        self.flush()
        self._held = None
        self._names = None

    def write_behind(self, then: Callable[[], None] | None = None) -> None:
        """Start writing the kept caches' files in a thread, which runs `then` after a write
        that was not stopped."""
        if self._writing is not None:
            return
        memos, self._unwritten = self._unwritten, None
        self._batch, self._written = memos, False

        def run() -> None:
            self._written = memos is None or self._write(memos, self._stop)
            if self._written and then is not None:
                then()

        self._writing = threading.Thread(target=run, name="rayweave-memo-files")
        self._writing.start()

    def flush(self) -> None:
        """Every kept cache's files written (waits for `write_behind`'s thread)."""
        self._join(stop=False)
        if self._unwritten is not None:
            memos, self._unwritten = self._unwritten, None
            self._write(memos, None)

    def _join(self, *, stop: bool) -> None:
        """Wait for the write behind, stopped first with `stop`; what it did not write stays to
        be written, under anything kept since."""
        if self._writing is None:
            return
        if stop:
            self._stop.set()
        self._writing.join()
        self._stop.clear()
        self._writing = None
        batch, self._batch = self._batch, None
        if not self._written and batch is not None:
            self._unwritten = _over(self._unwritten, batch)

    def _drop(self, *which: Memo) -> None:
        gone: dict[str, None] = dict.fromkeys(which)
        if self._held is not None:
            self._held = dataclasses.replace(self._held, **gone)
        if self._unwritten is not None:
            self._unwritten = dataclasses.replace(self._unwritten, **gone)

    def _write(self, memos: LayerMemos, stop: threading.Event | None) -> bool:
        """Whether `memos` were written, or given up on (False: stopped half way)."""
        try:
            self.files.keep(memos, stop=stop)
        except CacheWriteStopped:
            log.info("layer memos %s: a newer pass stopped their write", self.files)
            return False
        except Exception:  # a cache: the next process without memory starts from the store
            log.warning("could not write the layer memos %s", self.files, exc_info=True)
        return True


def _over(new: LayerMemos | None, old: LayerMemos | None) -> LayerMemos:
    """Each cache of `new`, else of `old`."""
    if new is None or old is None:
        return new or old or LayerMemos()
    return LayerMemos(
        snapshot=_either(new.snapshot, old.snapshot),
        matches=_either(new.matches, old.matches),
        parts=_either(new.parts, old.parts),
        content=_either(new.content, old.content),
        names=_either(new.names, old.names),
    )


def _either(new: _C | None, old: _C | None) -> _C | None:
    return old if new is None else new
