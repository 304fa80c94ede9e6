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
  the upkeep's last steps slowed them by half of what it saved), and the next pass in this
  process waits for that write before it reads or replaces anything.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, TypeVar

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

    def hand_over_snapshot(self) -> None:
        """The loaded snapshot is the pass's to change in place: stop holding it, so that a
        pass that fails half way leaves none (the next reads the layer whole)."""
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

    def keep(self, memos: LayerMemos) -> None:
        if self.snapshot is not None and memos.snapshot is not None:
            save_snapshot(self.snapshot, memos.snapshot)
        if self.matches is not None and memos.matches is not None:
            save_memo(self.matches, memos.matches)
        if self.parts is not None and memos.parts is not None:
            save_edge_memo(self.parts, memos.parts)

    def forget_snapshot(self) -> None:
        if self.snapshot is not None:
            self.snapshot.unlink(missing_ok=True)

    def hand_over_snapshot(self) -> None:
        pass  # each load reads its own copy

    def held_names(self) -> HeldNames | None:
        return None  # a file would cost what the read does, as for the pass's input

    def hold_names(self, names: HeldNames | None) -> None:
        pass


class HeldMemos:
    """`files`' caches held in memory from pass to pass; each pass's files are written when its
    host calls `write_behind` (after the upkeep, so the pickling does not slow its last steps)
    or, at the latest, before the next load or keep.

    Not for concurrent passes over one namespace (the host runs one upkeep at a time)."""

    def __init__(self, files: MemoFiles) -> None:
        self.files = files
        self._held: LayerMemos | None = None  # None: not read yet
        self._names: HeldNames | None = None
        self._unwritten: LayerMemos | None = None
        self._writing: threading.Thread | None = None

    @property
    def kept(self) -> frozenset[Memo]:
        return self.files.kept | {"content", "names"}

    @property
    def held(self) -> bool:
        return self._held is not None

    def load(self) -> LayerMemos:
        self.flush()
        if self._held is None:
            self._held = self.files.load()
        return self._held

    def keep(self, memos: LayerMemos) -> None:
        self.flush()
        was = self._held or LayerMemos()
        self._held = LayerMemos(
            snapshot=_either(memos.snapshot, was.snapshot),
            matches=_either(memos.matches, was.matches),
            parts=_either(memos.parts, was.parts),
            content=_either(memos.content, was.content),
            names=_either(memos.names, was.names),
        )
        self._unwritten = memos

    def forget_snapshot(self) -> None:
        self.flush()
        if self._held is not None:
            self._held = dataclasses.replace(self._held, snapshot=None)
        self._names = None
        self.files.forget_snapshot()

    def hand_over_snapshot(self) -> None:
        self.flush()  # its files are written first
        if self._held is not None:
            self._held = dataclasses.replace(self._held, snapshot=None)

    def held_names(self) -> HeldNames | None:
        return self._names

    def hold_names(self, names: HeldNames | None) -> None:
        self._names = names

    def release(self) -> None:
        """Let go of the memory (the files stay): the next pass reads them."""
        self.flush()
        self._held = None
        self._names = None

    def write_behind(self, then: Callable[[], None] | None = None) -> None:
        """Start writing the last kept caches' files in a thread, which runs `then` after."""
        if self._writing is not None:
            return
        memos, self._unwritten = self._unwritten, None

        def run() -> None:
            if memos is not None:
                self._write(memos)
            if then is not None:
                then()

        self._writing = threading.Thread(target=run, name="rayweave-memo-files")
        self._writing.start()

    def flush(self) -> None:
        """Every kept cache's files written (waits for `write_behind`'s thread)."""
        if self._writing is not None:
            self._writing.join()
            self._writing = None
        if self._unwritten is not None:
            memos, self._unwritten = self._unwritten, None
            self._write(memos)

    def _write(self, memos: LayerMemos) -> None:
        try:
            self.files.keep(memos)
        except Exception:  # a cache: the next process without memory starts from the store
            log.warning("could not write the layer memos %s", self.files, exc_info=True)


def _either(new: _C | None, old: _C | None) -> _C | None:
    return old if new is None else new
