"""Transaction functions that remove nodes and edges, and what their removal leaves orphaned.

They run inside the caller's one transaction, so a prune's dry run (the same work rolled back)
counts exactly what the real run removes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import neo4j

from rayweave.graph.schema import CHUNK_LABELS, NodeLabel
from rayweave.graph.store.cypher import (
    ANCHOR_PATTERN,
    INTRODUCED,
    REFRESH_DF,
    delete_edges_query,
    detach_delete_query,
    q,
)
from rayweave.graph.store.session import run_count, run_single

__all__ = [
    "ConversationReport",
    "DocumentChunks",
    "OrphanReport",
    "delete_detached_chunks",
    "delete_document_chunks",
    "delete_edges",
    "delete_namespace_orphans",
    "delete_orphans",
    "delete_unlisted_aliases",
    "document_exists",
    "expire_conversations",
    "topic_keys",
]

_DEAD_ENTITIES = f"""
    UNWIND $entities AS k
    MATCH (e:Entity {{key: k}})
    WHERE NOT {INTRODUCED}
    OPTIONAL MATCH (a:Alias)-[:ALIAS_OF]->(e)
    RETURN collect(DISTINCT e.key) AS dead, collect(DISTINCT a.key) AS aliases
"""
_UNINTRODUCED = f"MATCH (e:Entity {{ns: $ns}}) WHERE NOT {INTRODUCED} RETURN collect(e.key) AS keys"
_TOPICS = "MATCH (t:Topic {ns: $ns}) RETURN collect(t.key) AS keys"
_LOOSE_ALIASES = """
    UNWIND $keys AS k
    MATCH (a:Alias {key: k})
    WHERE NOT EXISTS { MATCH (a)-[:ALIAS_OF]->() }
    DETACH DELETE a
    RETURN count(*) AS n
"""
_EMPTY_TOPICS = """
    UNWIND $topics AS k
    MATCH (t:Topic {key: k})
    WHERE NOT EXISTS { MATCH (t)<-[:BELONGS_TO]-() }
    DETACH DELETE t
    RETURN count(*) AS n
"""
_STALE_CONVERSATIONS = """
    MATCH (c:Conversation {ns: $ns})
    WHERE c.updated_at IS NULL OR c.updated_at < $before
    OPTIONAL MATCH (m:Message)-[:PART_OF]->(c)
    RETURN collect(DISTINCT c.key) AS convs, collect(DISTINCT m.key) AS msgs
"""
_LOOSE_MESSAGES = """
    MATCH (m:Message {ns: $ns})
    WHERE NOT EXISTS { MATCH (m)-[:PART_OF]->() }
    DETACH DELETE m
    RETURN count(*) AS n
"""
_LONELY_USERS = """
    MATCH (u:User {ns: $ns})
    WHERE NOT EXISTS { MATCH (u)-[]-() }
    DELETE u
    RETURN count(*) AS n
"""
_UNLISTED_ALIAS_LINKS = """
    MATCH (a:Alias {ns: $ns})-[x:ALIAS_OF]->(e:Entity)
    WHERE NOT a.norm IN e.aliases
    DELETE x
"""
_UNLINKED_ALIASES = """
    MATCH (a:Alias {ns: $ns})
    WHERE NOT EXISTS { MATCH (a)-[:ALIAS_OF]->() }
    DETACH DELETE a
"""
# The same, for the aliases of some entities only (found by key first, see `stored_edges`).
_UNLISTED_ALIAS_LINKS_OF = """
    UNWIND $keys AS k
    MATCH (e:Entity {key: k})
    MATCH (a:Alias)-[x:ALIAS_OF]->(e)
    WHERE NOT a.norm IN e.aliases
    DELETE x
    RETURN DISTINCT a.key AS akey
"""
_UNLINKED_ALIASES_OF = """
    UNWIND $keys AS k
    MATCH (a:Alias {key: k})
    WHERE NOT EXISTS { MATCH (a)-[:ALIAS_OF]->() }
    DETACH DELETE a
"""
_DOCUMENT_FOUND = """
    OPTIONAL MATCH (d:Document {key: $dkey})
    OPTIONAL MATCH (s:Section {dkey: $dkey})
    WITH d, count(s) AS sections
    OPTIONAL MATCH (p:Proposition {dkey: $dkey})
    RETURN d IS NOT NULL AS doc, sections, count(p) AS propositions
"""


@dataclass(frozen=True, slots=True)
class OrphanReport:
    entities: int
    aliases: int
    topics: int
    dead: tuple[str, ...] = ()  # the keys of the entities deleted, for the change log


@dataclass(frozen=True, slots=True)
class ConversationReport:
    conversations: int
    messages: int
    users: int


@dataclass(frozen=True, slots=True)
class DocumentChunks:
    """What deleting a document's chunk nodes removed (the summary on the Document not counted)
    and the entities and topics they linked, which may be orphaned now."""

    chunks: int
    entity_keys: list[str]
    topic_keys: list[str]
    chunk_keys: list[str]


def _collect_keys(
    tx: neo4j.ManagedTransaction, text: str, params: Mapping[str, Any], *fields: str
) -> list[list[str]]:
    """The key lists one row of `text` collects, per field, without nulls."""
    record = run_single(tx, text, params)
    return [[k for k in (record[f] if record else []) if k] for f in fields]


def _detach_delete(tx: neo4j.ManagedTransaction, label: NodeLabel, keys: list[str]) -> None:
    if keys:
        tx.run(q(detach_delete_query(label)), {"keys": keys}).consume()


def delete_edges(
    tx: neo4j.ManagedTransaction,
    labels: Iterable[NodeLabel],
    where: str,
    params: Mapping[str, Any],
) -> int:
    """Delete the namespace's out-edges of nodes with these labels that match `where`."""
    return sum(run_count(tx, delete_edges_query(label, where), params) for label in labels)


def delete_orphans(
    tx: neo4j.ManagedTransaction,
    entity_keys: list[str],
    topic_keys: list[str],
    *,
    orphans_only: bool = False,
) -> OrphanReport:
    """Delete the listed entities nothing introduces any more (and their unshared aliases),
    refresh the `df` of the survivors (unless `orphans_only`), and delete the listed topics
    that have no members left."""
    dead, alias_keys = _collect_keys(
        tx, _DEAD_ENTITIES, {"entities": entity_keys}, "dead", "aliases"
    )
    _detach_delete(tx, NodeLabel.ENTITY, dead)
    aliases = run_count(tx, _LOOSE_ALIASES, {"keys": alias_keys}) if alias_keys else 0
    if not orphans_only:
        survivors = sorted(set(entity_keys) - set(dead))
        if survivors:
            tx.run(q(REFRESH_DF), {"rows": [{"key": k} for k in survivors]}).consume()
    topics = run_count(tx, _EMPTY_TOPICS, {"topics": topic_keys}) if topic_keys else 0
    return OrphanReport(entities=len(dead), aliases=aliases, topics=topics, dead=tuple(dead))


def delete_namespace_orphans(tx: neo4j.ManagedTransaction, ns: str) -> OrphanReport:
    """Every entity of the namespace nothing introduces (with its unshared aliases) and every
    topic without members."""
    (entities,) = _collect_keys(tx, _UNINTRODUCED, {"ns": ns}, "keys")
    return delete_orphans(tx, entities, topic_keys(tx, ns), orphans_only=True)


def topic_keys(tx: neo4j.ManagedTransaction, ns: str) -> list[str]:
    (topics,) = _collect_keys(tx, _TOPICS, {"ns": ns}, "keys")
    return topics


def expire_conversations(
    tx: neo4j.ManagedTransaction, ns: str, before: float | None
) -> ConversationReport:
    """Delete conversations last updated before `before` (None: none) with their messages, any
    message no conversation holds, and users left without an edge."""
    params: dict[str, Any] = {"ns": ns, "before": before}
    convs: list[str] = []
    msgs: list[str] = []
    if before is not None:
        convs, msgs = _collect_keys(tx, _STALE_CONVERSATIONS, params, "convs", "msgs")
        _detach_delete(tx, NodeLabel.MESSAGE, msgs)
        _detach_delete(tx, NodeLabel.CONVERSATION, convs)
    loose = run_count(tx, _LOOSE_MESSAGES, params)
    users = run_count(tx, _LONELY_USERS, params)
    return ConversationReport(conversations=len(convs), messages=len(msgs) + loose, users=users)


def delete_detached_chunks(tx: neo4j.ManagedTransaction, ns: str) -> int:
    """Delete Section/Proposition nodes whose Document no longer exists; returns how many."""
    return sum(
        run_count(
            tx,
            f"""
            MATCH (c:{label.value} {{ns: $ns}})
            OPTIONAL MATCH (d:Document {{key: c.dkey}})
            WITH c, d WHERE d IS NULL
            DETACH DELETE c
            RETURN count(*) AS n
            """,
            {"ns": ns},
        )
        for label in (NodeLabel.SECTION, NodeLabel.PROPOSITION)
    )


def delete_unlisted_aliases(
    tx: neo4j.ManagedTransaction, ns: str, among: Sequence[str] | None = None
) -> None:
    """Drop the alias links their entity no longer lists, then the aliases left unlinked;
    `among`: the keys of the only entities whose aliases can have changed."""
    if among is None:
        tx.run(q(_UNLISTED_ALIAS_LINKS), {"ns": ns}).consume()
        tx.run(q(_UNLINKED_ALIASES), {"ns": ns}).consume()
        return
    if not among:
        return
    unlinked = [r["akey"] for r in tx.run(q(_UNLISTED_ALIAS_LINKS_OF), {"keys": list(among)})]
    if unlinked:
        tx.run(q(_UNLINKED_ALIASES_OF), {"keys": unlinked}).consume()


def document_exists(tx: neo4j.ManagedTransaction, dkey: str) -> bool:
    """Whether the Document node or any of its chunk nodes is stored."""
    found = run_single(tx, _DOCUMENT_FOUND, {"dkey": dkey})
    return found is not None and (
        bool(found["doc"]) or found["sections"] + found["propositions"] > 0
    )


def delete_document_chunks(tx: neo4j.ManagedTransaction, dkey: str) -> DocumentChunks:
    """Delete a document's nodes of every chunk level (the Document itself included) with their
    edges, collecting first the entities and topics they linked."""
    entity_keys: set[str] = set()
    topic_keys: set[str] = set()
    chunk_keys: set[str] = set()
    chunks = 0
    for label in CHUNK_LABELS:
        match = (
            "(c:Document {key: $dkey})"
            if label is NodeLabel.DOCUMENT
            else f"(c:{label.value} {{dkey: $dkey}})"
        )
        record = run_single(
            tx,
            f"""
            MATCH {match}
            OPTIONAL MATCH (c)-[:{ANCHOR_PATTERN}]->(e:Entity)
            OPTIONAL MATCH (c)-[:BELONGS_TO]->(t:Topic)
            RETURN count(DISTINCT c) AS chunks, collect(DISTINCT e.key) AS entities,
                   collect(DISTINCT t.key) AS topics, collect(DISTINCT c.key) AS keys
            """,
            {"dkey": dkey},
        )
        if record is None:
            continue
        entity_keys.update(k for k in record["entities"] if k)
        topic_keys.update(k for k in record["topics"] if k)
        chunk_keys.update(k for k in record["keys"] if k)
        if label is not NodeLabel.DOCUMENT:
            chunks += int(record["chunks"])
        tx.run(q(f"MATCH {match} DETACH DELETE c"), {"dkey": dkey}).consume()
    return DocumentChunks(
        chunks=chunks,
        entity_keys=sorted(entity_keys),
        topic_keys=sorted(topic_keys),
        chunk_keys=sorted(chunk_keys),
    )
