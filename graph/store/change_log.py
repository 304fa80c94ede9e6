"""The namespace's change log: which nodes each write touched, for projections to follow.

Every write path marks the keys of the nodes whose projected row or incident edges it changed
(`StoreConnection.mark`), or marks everything when it cannot say (`mark_all`). Its closing
`touch` then bumps the namespace's version on the stamp node and appends one entry, `(version,
keys)` or `(version, full)`. A projection built at version v re-reads only the nodes named by
the entries after v (`graph/projection_delta.py`), or reloads whole when an entry is full or
the log no longer reaches back to v: only the last `graph.change_log_entries` entries are kept.

An entry also names its writer when the connection has one (`StoreConnection.writing_as`): the
upkeep tags its own, so that its next pass can tell what it wrote itself, which its caches already
hold, from what others wrote since (`Changes.foreign`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import neo4j

from rayweave.graph.store.cypher import CHANGE_LABEL, STAMP_LABEL, q


@dataclass(frozen=True, slots=True)
class StoreVersion:
    """Where a namespace stands: the stamp value (changes on every write) and the version
    (counts change-log entries; 0 before the first)."""

    stamp: str | None
    version: int


@dataclass(frozen=True, slots=True)
class Changes:
    """The entries after a version, merged: the keys to re-read, or `full` when some entry
    could not name them or the log was compacted past that version. `own`: the keys that only
    the entries of the reader's own writer named; `held`: those of them that only its entry
    `held` named (see `merge_changes`)."""

    to: StoreVersion
    keys: frozenset[str]
    full: bool
    own: frozenset[str] = frozenset()
    held: frozenset[str] = frozenset()

    @property
    def foreign(self) -> frozenset[str]:
        """The keys some other writer named: what the reader's own writes cannot account for."""
        return self.keys - self.own if self.own else self.keys


def log_change(
    tx: neo4j.ManagedTransaction,
    ns: str,
    stamp_key: str,
    keys: Sequence[str] | None,
    *,
    keep: int,
    writer: str = "",
) -> int:
    """Bump the namespace's version and append its entry (`keys` None: a full entry; `writer`:
    who wrote, '' for anyone); drops the entries older than the last `keep`. Returns the new
    version. The entry keeps the stamp value it set, so a reader can tell that its own version
    lies in this history (`merge_changes`)."""
    value = uuid.uuid4().hex
    record = tx.run(
        q(
            f"MERGE (s:{STAMP_LABEL} {{key: $key}}) "
            "SET s.ns = $ns, s.value = $value, s.version = coalesce(s.version, 0) + 1 "
            "RETURN s.version AS v"
        ),
        {"key": stamp_key, "ns": ns, "value": value},
    ).single()
    version = int(record["v"]) if record is not None else 1
    tx.run(
        q(
            f"CREATE (c:{CHANGE_LABEL} {{key: $key, ns: $ns, version: $v, keys: $keys, "
            "full: $full, at: $at, value: $value, writer: $writer})"
        ),
        {
            "key": f"{stamp_key}:{version}",
            "ns": ns,
            "v": version,
            "value": value,
            "keys": list(keys or ()),
            "full": keys is None,
            "at": time.time(),
            "writer": writer,
        },
    ).consume()
    tx.run(
        q(f"MATCH (c:{CHANGE_LABEL} {{ns: $ns}}) WHERE c.version <= $oldest DELETE c"),
        {"ns": ns, "oldest": version - keep},
    ).consume()
    return version


def read_version(rows: Sequence[dict[str, object]]) -> StoreVersion:
    if not rows:
        return StoreVersion(stamp=None, version=0)
    value, version = rows[0]["v"], rows[0]["version"]
    return StoreVersion(
        stamp=str(value) if value is not None else None,
        version=int(version) if isinstance(version, int) else 0,
    )


def merge_changes(
    since: int,
    to: StoreVersion,
    entries: Sequence[dict[str, object]],
    *,
    stamp: str | None = None,
    own: str = "",
    held: int | None = None,
) -> Changes:
    """Merge the entries `(version, keys, full[, writer])` after `since` up to `to`; full when
    one is full or any version in between is missing (compacted away, or never logged). With
    `stamp` (the value the reader saw at `since`), `entries` also holds entry `since`, and a
    different value there means the namespace was dropped and written anew since: full too.
    `own`: the reader's writer; the keys only its entries name are told apart (`Changes.own`),
    and those only its entry of version `held` names too (`Changes.held`: writes whose result
    the reader holds as written). A full entry is full whoever wrote it: it names nothing to
    tell apart."""
    if stamp is not None and since > 0:
        at_since = [e for e in entries if e["version"] == since]
        if not at_since or at_since[0].get("value") != stamp:
            return Changes(to=to, keys=frozenset(), full=True)
        entries = [e for e in entries if e["version"] != since]
    versions = sorted(int(e["version"]) for e in entries)  # type: ignore[call-overload]
    if versions != list(range(since + 1, to.version + 1)):
        return Changes(to=to, keys=frozenset(), full=True)
    others: set[str] = set()
    mine: set[str] = set()  # named by the reader's entries other than `held`
    kept: set[str] = set()  # named by its entry `held`
    for e in entries:
        if e["full"]:
            return Changes(to=to, keys=frozenset(), full=True)
        named = {str(k) for k in e["keys"] or ()}  # type: ignore[attr-defined]
        if not own or e.get("writer") != own:
            others.update(named)
        else:
            (kept if e["version"] == held else mine).update(named)
    return Changes(
        to=to,
        keys=frozenset(others | mine | kept),
        full=False,
        own=frozenset((mine | kept) - others),
        held=frozenset(kept - others - mine),
    )
