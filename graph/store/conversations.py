"""Conversations, messages and document views (seed 003): who asked what, and what they read.

Their edges have their own sources (`conversation`, `user`), which no corpus pass replaces and
no prune threshold removes; stale conversations go only by retention (`prune`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import neo4j

from rayweave.cluster.errors import InputError, NotFoundError
from rayweave.graph.names import name_ngrams, normalize_name, unique, variants
from rayweave.graph.schema import EdgeSource
from rayweave.graph.store.connection import StoreConnection
from rayweave.graph.store.cypher import q
from rayweave.graph.store.reads import MAX_NGRAM
from rayweave.graph.store.records import MessageRecord, ViewRecord
from rayweave.graph.store.session import run_single

__all__ = ["GraphConversations"]

_MERGE_MESSAGE = """
    MERGE (c:Conversation {key: $ckey})
    ON CREATE SET c.ns = $ns, c.id = $cid, c.created_at = $ts
    SET c.updated_at = $ts
    MERGE (m:Message {key: $mkey})
    ON CREATE SET m.ns = $ns, m.id = $mid, m.created_at = $ts
    SET m.text = $text, m.role = $role, m.conversation_id = $cid
    MERGE (m)-[p:PART_OF]->(c)
    ON CREATE SET p.weight = 1.0, p.confidence = 1.0, p.source = $conv, p.count = 1
"""
_FORGET_LINKS = "MATCH (m:Message {key: $mkey})-[r:MENTIONS|REFERENCES]->() DELETE r"
_LINK_USER = """
    MATCH (m:Message {key: $mkey})
    MERGE (u:User {key: $ukey})
    ON CREATE SET u.ns = $ns, u.id = $uid
    MERGE (u)-[r:CREATED]->(m)
    ON CREATE SET r.weight = 1.0, r.confidence = 1.0, r.source = $user, r.count = 1
"""
_LINK_DOCUMENTS = """
    MATCH (m:Message {key: $mkey})
    UNWIND $docs AS dk
    MATCH (d:Document {key: dk})
    MERGE (m)-[r:REFERENCES]->(d)
    ON CREATE SET r.weight = 1.0, r.confidence = 1.0, r.source = $conv, r.count = 1
    RETURN collect(DISTINCT d.id) AS ids
"""
_LINK_ENTITIES = """
    MATCH (m:Message {key: $mkey})
    UNWIND $aliases AS ak
    MATCH (:Alias {key: ak})-[:ALIAS_OF]->(e:Entity)
    WITH DISTINCT m, e
    MERGE (m)-[r:MENTIONS]->(e)
    ON CREATE SET r.weight = 1.0, r.confidence = 1.0, r.source = $conv, r.count = 1
    RETURN collect(e.id) AS ids
"""
_RECORD_VIEW = """
    MATCH (d:Document {key: $dkey})
    MERGE (u:User {key: $ukey})
    ON CREATE SET u.ns = $ns, u.id = $uid
    MERGE (u)-[v:VIEWED]->(d)
    ON CREATE SET v.view_count = 1, v.first_viewed_at = $ts, v.last_viewed_at = $ts,
                  v.duration_s = $dur, v.weight = 1.0, v.confidence = 1.0, v.source = $src,
                  v.count = 1
    ON MATCH SET v.view_count = v.view_count + 1, v.count = v.view_count + 1,
                 v.last_viewed_at = CASE WHEN $ts > v.last_viewed_at
                                    THEN $ts ELSE v.last_viewed_at END,
                 v.first_viewed_at = CASE WHEN $ts < v.first_viewed_at
                                     THEN $ts ELSE v.first_viewed_at END,
                 v.duration_s = v.duration_s + $dur
    RETURN v.view_count AS views, v.first_viewed_at AS first, v.last_viewed_at AS last
"""


def _sorted_ids(record: neo4j.Record | None) -> tuple[str, ...]:
    return tuple(sorted(record["ids"])) if record else ()


class GraphConversations(StoreConnection):
    """Messages linked to their conversation, user, documents and entities; document views."""

    def add_message(
        self,
        *,
        conversation_id: str,
        message_id: str,
        text: str,
        role: str = "user",
        user_id: str | None = None,
        referenced_doc_ids: Sequence[str] = (),
        entity_names: Sequence[str] = (),
        timestamp: float | None = None,
        resolve_mentions: bool = True,
    ) -> MessageRecord:
        """Record a message: PART_OF its conversation, CREATED by its user, REFERENCES the
        documents it cites, MENTIONS the known entities it names (explicit names, plus every alias
        found in its text when `resolve_mentions`). Recording the same id again replaces its
        text, mentions and references."""
        if not conversation_id or not message_id:
            raise InputError("conversation_id and message_id must be non-empty")
        ts = time.time() if timestamp is None else float(timestamp)
        names = [normalize_name(n) for n in entity_names]
        if resolve_mentions:
            names.extend(n for _, _, n in name_ngrams(text, MAX_NGRAM))
        forms = list(unique(f for n in names for f in variants(n)))
        params: dict[str, Any] = {
            "ns": self.ns,
            "ckey": self.key(conversation_id),
            "cid": conversation_id,
            "mkey": self.key(message_id),
            "mid": message_id,
            "text": text,
            "role": role,
            "ts": ts,
            "ukey": self.key(user_id) if user_id else None,
            "uid": user_id,
            "docs": [self.key(d) for d in referenced_doc_ids],
            "aliases": [self.key(f) for f in forms],
            "conv": EdgeSource.CONVERSATION.value,
            "user": EdgeSource.USER.value,
        }

        def work(tx: neo4j.ManagedTransaction) -> MessageRecord:
            tx.run(q(_MERGE_MESSAGE), params).consume()
            # Re-recording a message (an edit) replaces what it mentions and references.
            tx.run(q(_FORGET_LINKS), params).consume()
            if user_id:
                tx.run(q(_LINK_USER), params).consume()
            refs = run_single(tx, _LINK_DOCUMENTS, params)
            mentions = run_single(tx, _LINK_ENTITIES, params)
            return MessageRecord(
                conversation_id=conversation_id,
                message_id=message_id,
                mentioned_entity_ids=_sorted_ids(mentions),
                referenced_doc_ids=_sorted_ids(refs),
            )

        return self._write("add_message", work)

    def record_view(
        self, *, user_id: str, doc_id: str, timestamp: float | None = None, duration_s: float = 0.0
    ) -> ViewRecord:
        """Count one view of a document by a user (VIEWED: view_count, first/last_viewed_at)."""
        ts = time.time() if timestamp is None else float(timestamp)
        rows = self.write(
            _RECORD_VIEW,
            {
                "dkey": self.key(doc_id),
                "ukey": self.key(user_id),
                "uid": user_id,
                "ts": ts,
                "dur": float(duration_s),
                "src": EdgeSource.USER.value,
            },
            op="record_view",
        )
        if not rows:
            raise NotFoundError(f"document {doc_id!r} is not in graph namespace {self.ns!r}")
        r = rows[0]
        return ViewRecord(
            user_id=user_id,
            doc_id=doc_id,
            view_count=int(r["views"]),
            first_viewed_at=float(r["first"]),
            last_viewed_at=float(r["last"]),
        )
