"""Deletes: a document, a namespace, stale corpus-pass edges, and the prune of weak inferred
edges with what they leave orphaned.

Each is one write transaction (a document delete, a prune), so a dry-run prune is the real run
rolled back and its counts are exact.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict

import neo4j

from rayweave.cluster.errors import InputError, NotFoundError
from rayweave.graph.schema import CHUNK_LABELS, INFERRED_SOURCES, EdgeSource, NodeLabel
from rayweave.graph.store.cleanup import (
    delete_detached_chunks,
    delete_document_chunks,
    delete_edges,
    delete_namespace_orphans,
    delete_orphans,
    delete_unlisted_aliases,
    document_exists,
    expire_conversations,
    topic_keys,
)
from rayweave.graph.store.connection import StoreConnection
from rayweave.graph.store.cypher import CHANGE_LABEL, REFRESH_DF_ALL, STAMP_LABEL
from rayweave.graph.store.records import DeleteReport, PruneReport

__all__ = ["GraphRemoval"]

_DROP_BATCH = 2000


class GraphRemoval(StoreConnection):
    """Removal that keeps the graph consistent: no orphan entity, alias, topic or chunk."""

    def delete_stale(self, run: str, sources: Iterable[EdgeSource]) -> int:
        """Drop the edges of `sources` that the replace write stamped `run` did not write again,
        and alias links their entity no longer lists; returns how many edges went. Conversation
        and user edges are never of these sources, so they stay."""
        params = {"ns": self.ns, "run": run, "sources": sorted(s.value for s in sources)}

        def work(tx: neo4j.ManagedTransaction) -> int:
            gone = delete_edges(
                tx,
                (*CHUNK_LABELS, NodeLabel.ENTITY),
                "r.source IN $sources AND (r.run IS NULL OR r.run <> $run)",
                params,
            )
            delete_unlisted_aliases(tx, self.ns)
            return gone

        self.mark_all()
        return self._write("delete_stale", work)

    def delete_document(self, doc_id: str) -> DeleteReport:
        """Remove a document, its chunks and their edges, and the entities only it used.

        Entities another document (or a conversation message) still mentions, explains, defines,
        uses or solves are kept; their `df` is recomputed. Topics left without members go too.
        """
        dkey = self.key(doc_id)

        def work(tx: neo4j.ManagedTransaction) -> DeleteReport:
            if not document_exists(tx, dkey):
                raise NotFoundError(f"document {doc_id!r} is not in graph namespace {self.ns!r}")
            removed = delete_document_chunks(tx, dkey)
            orphans = delete_orphans(tx, removed.entity_keys, removed.topic_keys)
            self.mark([dkey, *removed.chunk_keys, *removed.entity_keys])
            return DeleteReport(
                doc_id=doc_id,
                chunks=removed.chunks,
                entities=orphans.entities,
                aliases=orphans.aliases,
                topics=orphans.topics,
                keys=(*removed.chunk_keys, *removed.entity_keys),
            )

        # Logged in the same transaction: a deletion the log missed would stay unseen by
        # projections and by the corpus pass's layer snapshot (`graph/layer_snapshot.py`).
        return self._write_logged("delete_document", work)[0]

    def drop_namespace(self) -> int:
        """Delete every node (and so every edge) of this namespace; returns the node count."""
        total = 0
        for bookkeeping in (STAMP_LABEL, CHANGE_LABEL):
            self.write(f"MATCH (s:{bookkeeping} {{ns: $ns}}) DELETE s", op="drop_namespace")
        for label in NodeLabel:
            while True:
                record = self.write(
                    f"MATCH (n:{label.value} {{ns: $ns}}) WITH n LIMIT {_DROP_BATCH} "
                    "DETACH DELETE n RETURN count(*) AS n",
                    op="drop_namespace",
                )
                removed = int(record[0]["n"]) if record else 0
                total += removed
                if removed == 0:
                    break
        return total

    def prune(
        self,
        min_confidence: float,
        *,
        conversations_before: float | None = None,
        among: Iterable[str] | None = None,
        dry_run: bool = False,
    ) -> PruneReport:
        """Drop inferred edges below `min_confidence`, then entities, aliases and topics left
        orphaned.

        Structural, title/heading, code, link, conversation and user edges are never pruned.
        Section and Proposition nodes whose Document is gone (left by an interrupted write) go
        first. With `conversations_before` (epoch seconds), conversations last updated before it
        go too, with their messages and the users left without any edge, so entities only those
        messages mentioned are orphaned in the same pass. `among`: the keys of the only entities
        that can have lost what introduced them (the upkeep's edge sync names them), looked at
        instead of every entity. All of it is one transaction: with `dry_run` it is rolled back,
        so the counts are exact and nothing changes.
        """
        if not 0.0 <= min_confidence <= 1.0:
            raise InputError(f"min_confidence must lie in [0, 1], got {min_confidence}")
        if among is not None and conversations_before is not None:
            raise InputError(
                "prune: `among` cannot go with `conversations_before`: expired conversations "
                "orphan entities that `among` does not name"
            )
        inferred = sorted(s.value for s in INFERRED_SOURCES)
        candidates = None if among is None else sorted(set(among))

        def work(tx: neo4j.ManagedTransaction) -> tuple[PruneReport, tuple[str, ...]]:
            params = {"ns": self.ns, "inferred": inferred, "min": float(min_confidence)}
            expired = expire_conversations(tx, self.ns, conversations_before)
            detached = delete_detached_chunks(tx, self.ns)
            # No confidence lies below 0: the upkeep's prune(0.0) skips a scan of every edge.
            edges = (
                delete_edges(
                    tx,
                    (*CHUNK_LABELS, NodeLabel.ENTITY, NodeLabel.MESSAGE),
                    "r.source IN $inferred AND r.confidence < $min",
                    params,
                )
                if min_confidence > 0.0
                else 0
            )
            orphans = (
                delete_namespace_orphans(tx, self.ns)
                if candidates is None
                else delete_orphans(tx, candidates, topic_keys(tx, self.ns), orphans_only=True)
            )
            report = PruneReport(
                edges=edges,
                chunks=detached,
                entities=orphans.entities,
                aliases=orphans.aliases,
                topics=orphans.topics,
                **asdict(expired),
            )
            return report, orphans.dead

        if dry_run:
            return self._rehearse("prune", work)[0]
        report, dead = self._write("prune", work)
        # Deleted entities are logged, so that a layer snapshot's stored entities drop them.
        self.mark(dead)
        if report.edges or report.chunks or report.messages:  # mentions gone: df changed
            self.mark_all()
            self.write(REFRESH_DF_ALL, op="refresh_entity_stats")
        if report.edges or report.chunks or report.entities or report.topics:
            self.touch()
        return report
