"""`StoreConnection`: one namespace's way to the Bolt server, which every part of the store uses.

Over `StoreSession` (driver, sessions, retries, schema), it keeps the namespace's change stamp
and log: every write that changes the graph leaves a fresh stamp, which in-memory projections
poll, and an entry naming the nodes it touched (`graph/store/change_log.py`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

import neo4j

from rayweave.cluster.services.graph_server import GraphConnection
from rayweave.cluster.settings import GraphSettings
from rayweave.graph.store.change_log import (
    Changes,
    StoreVersion,
    log_change,
    merge_changes,
    read_version,
)
from rayweave.graph.store.cypher import CHANGE_LABEL, STAMP_LABEL
from rayweave.graph.store.session import SharedDriver, StoreSession

__all__ = ["StoreConnection"]

T = TypeVar("T")


class StoreConnection(StoreSession):
    """A `StoreSession` whose writes are stamped and logged."""

    def __init__(
        self,
        connection: GraphConnection,
        settings: GraphSettings,
        *,
        namespace: str = "default",
        _shared: SharedDriver | None = None,
    ) -> None:
        super().__init__(connection, settings, namespace=namespace, _shared=_shared)
        self._dirty: set[str] = set()
        self._dirty_all = False
        self._writer = ""  # named in the change-log entries this connection appends

    def stamp(self) -> str | None:
        """A value that changes whenever this namespace's graph is written (None: never stamped)."""
        return self.version().stamp

    def version(self) -> StoreVersion:
        """The namespace's stamp and change-log version (`graph/store/change_log.py`)."""
        return read_version(
            self.read(
                f"MATCH (s:{STAMP_LABEL} {{key: $key}}) RETURN s.value AS v, s.version AS version",
                {"key": self.key(STAMP_LABEL)},
                op="stamp",
            )
        )

    def changes_since(
        self, version: int, *, stamp: str | None = None, own: str = "", held: int | None = None
    ) -> Changes:
        """The keys that the writes after `version` touched, or full (see `merge_changes`;
        `stamp`: the value seen at `version`, to tell a namespace written anew; `own`, `held`:
        the writer and the entry of it whose keys are told apart)."""
        to = self.version()
        if to.version < version or (to.version == version and stamp in (None, to.stamp)):
            return Changes(to=to, keys=frozenset(), full=to.version < version)
        first = version if stamp is not None and version > 0 else version + 1
        entries = self.read(
            f"MATCH (c:{CHANGE_LABEL} {{ns: $ns}}) WHERE c.version >= $first "
            "AND c.version <= $to RETURN c.version AS version, c.keys AS keys, c.full AS full, "
            "c.value AS value, c.writer AS writer",
            {"first": first, "to": to.version},
            op="changes",
        )
        return merge_changes(version, to, entries, stamp=stamp, own=own, held=held)

    def begin_maintenance(self) -> bool:
        """Flag the namespace's corpus-wide upkeep as under way; True when a previous run left
        the flag set (it died before its change-log entries named what it wrote, so the next
        entry must be full; a concurrent run costs replicas a whole load, nothing worse)."""
        rows = self.write(
            f"MERGE (s:{STAMP_LABEL} {{key: $key}}) ON CREATE SET s.ns = $ns "
            "WITH s, coalesce(s.maintaining, false) AS was SET s.maintaining = true RETURN was",
            {"key": self.key(STAMP_LABEL)},
            op="maintenance",
        )
        return bool(rows and rows[0]["was"])

    def end_maintenance(self) -> None:
        self.write(
            f"MATCH (s:{STAMP_LABEL} {{key: $key}}) SET s.maintaining = false",
            {"key": self.key(STAMP_LABEL)},
            op="maintenance",
        )

    @contextlib.contextmanager
    def writing_as(self, writer: str) -> Iterator[None]:
        """The change-log entries appended meanwhile name `writer`, so that a reader that knows
        it can tell its own writes from others' (`Changes.own`)."""
        was, self._writer = self._writer, writer
        try:
            yield
        finally:
            self._writer = was

    def mark(self, keys: Iterable[str]) -> None:
        """Keys of nodes whose projected row or incident edges the write under way changes;
        the next `touch` logs them."""
        self._dirty.update(keys)

    def mark_all(self) -> None:
        """The write under way cannot name what it changed: the next entry is full."""
        self._dirty_all = True

    def touch(self) -> int:
        """Record that the namespace changed: a fresh stamp value, and a change-log entry with
        the keys marked since the last touch (full after `mark_all`, or past
        `graph.change_log_max_keys`). Returns the entry's version."""
        return self._write_logged("touch", lambda tx: None)[1]

    def _write_logged(
        self, op: str, work: Callable[[neo4j.ManagedTransaction], T]
    ) -> tuple[T, int]:
        """`work` and the change-log entry for everything marked so far (`work` may mark too)
        in one transaction: no crash can leave a write that the log does not name. Returns
        what `work` did and the entry's version."""

        def logged(tx: neo4j.ManagedTransaction) -> tuple[T, int]:
            result = work(tx)
            keys: list[str] | None = sorted(self._dirty)
            if self._dirty_all or len(self._dirty) > self.settings.change_log_max_keys:
                keys = None
            keep = self.settings.change_log_entries
            stamp = self.key(STAMP_LABEL)
            return result, log_change(tx, self.ns, stamp, keys, keep=keep, writer=self._writer)

        done = self._write(op, logged)
        self._dirty.clear()
        self._dirty_all = False
        return done
