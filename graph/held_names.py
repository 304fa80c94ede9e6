"""The entity names that synonymy starts from, followed from upkeep to upkeep through the change
log instead of read whole.

Synonymy (`graph/synonym_index.py`) needs every entity's (id, name) with the mark it was linked
under, and which names the name index holds. Read whole, that costs about 0.7 s of entity rows
and 1.3 s of index scroll at 10k documents, whatever changed. A process that runs upkeep after
upkeep (the upkeep actor, `ingest/upkeep_host.py`) keeps the rows as the last synonymy read them
and re-reads only the entity nodes that the log names since: every write that creates, renames,
relinks or deletes an entity names its node, or is a full entry (`graph/store/change_log.py`).
The index is then asked only about the names that can have changed there: those re-read, the
unlinked ones, and the ones that went. A full entry, a log compacted past the copy, a namespace
written anew, another synonymy rule or a copy that held no entity: read whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rayweave.graph.store import GraphStore
from rayweave.graph.store.change_log import StoreVersion

Name = tuple[str, str]  # (entity id, name)
_COLUMNS = {"k": "e.key", "id": "e.id", "name": "e.name", "linked": "e.synonyms"}


@dataclass(frozen=True, slots=True)
class HeldNames:
    """Every entity node's (id, name) and stored link mark by key, true at `at`, for the
    synonymy rule `rule` (its fingerprint)."""

    at: StoreVersion
    rule: str
    entities: Mapping[str, tuple[Name, object]]


@dataclass(frozen=True, slots=True)
class EntityNames:
    """The entity rows now, and what changed since the held copy (`reread` None: read whole)."""

    held: HeldNames
    reread: frozenset[str] | None  # keys read again
    gone: frozenset[Name]  # names the copy held under those keys that no key holds now


def read_entity_names(graph: GraphStore, held: HeldNames | None, rule: str) -> EntityNames:
    """The entities as `held` and the nodes logged since give them when the log allows, else
    read whole."""
    if held is not None and held.rule == rule and held.entities and held.at.stamp:
        changes = graph.changes_since(held.at.version, stamp=held.at.stamp)
        if not changes.full:
            keys = sorted(changes.keys)
            rows = graph.read_table_by_keys(
                "MATCH (e:Entity {key: k})", _COLUMNS, keys, op="synonym_names"
            )
            entities = {k: v for k, v in held.entities.items() if k not in changes.keys}
            entities.update(_by_key(rows))
            now = {name for name, _ in entities.values()}
            gone = {
                name
                for k in keys
                if (was := held.entities.get(k)) is not None and (name := was[0]) not in now
            }
            return EntityNames(
                held=HeldNames(at=changes.to, rule=rule, entities=entities),
                reread=frozenset(keys),
                gone=frozenset(gone),
            )
    at = graph.version()
    rows = graph.read_table("MATCH (e:Entity {ns: $ns})", _COLUMNS, op="synonym_names")
    return EntityNames(
        held=HeldNames(at=at, rule=rule, entities=_by_key(rows)), reread=None, gone=frozenset()
    )


def _by_key(rows: list[dict[str, object]]) -> dict[str, tuple[Name, object]]:
    return {str(r["k"]): ((str(r["id"]), str(r["name"])), r["linked"]) for r in rows if r["name"]}
