"""`rayweave graph prune`: the settings-driven edge over `GraphStore.prune`.

The store owns the Cypher (one transaction, so a dry run is the real run rolled back and its
counts are exact); this module turns settings into arguments, opens the namespace's store and
renders what was (or would be) removed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from rayweave.cluster.errors import InputError
from rayweave.cluster.settings import Settings
from rayweave.graph.store.graph_store import GraphStore
from rayweave.graph.store.records import GraphCounts, PruneReport

__all__ = ["PruneSummary", "prune_graph", "retention_cutoff"]

_DAY_S = 86_400.0


@dataclass(frozen=True, slots=True, kw_only=True)
class PruneSummary:
    namespace: str
    dry_run: bool
    min_confidence: float
    conversations_before: float | None
    removed: PruneReport
    before: GraphCounts
    after: GraphCounts

    def __str__(self) -> str:
        return self.render()

    def render(self) -> str:
        r = self.removed
        verb = "would remove" if self.dry_run else "removed"
        kept = (
            "conversations kept (retention off)"
            if self.conversations_before is None
            else f"{r.conversations} conversation(s) idle since before "
            f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime(self.conversations_before))} UTC, "
            f"{r.messages} message(s), {r.users} user(s)"
        )
        nodes_before, nodes_after = sum(self.before.nodes.values()), sum(self.after.nodes.values())
        rels_before = sum(self.before.relationships.values())
        rels_after = sum(self.after.relationships.values())
        return (
            f"graph namespace {self.namespace!r}: {verb} "
            f"{r.edges} inferred edge(s) below confidence {self.min_confidence:g}, "
            f"{r.entities} orphan entit{'y' if r.entities == 1 else 'ies'}, "
            f"{r.aliases} alias(es), {r.topics} empty topic(s), "
            f"{r.chunks} chunk(s) without their document; {kept}.\n"
            f"nodes {nodes_before} -> {nodes_after}, relationships {rels_before} -> {rels_after}"
            + (" (dry run: nothing changed)" if self.dry_run else "")
        )


def retention_cutoff(retention_days: float, *, now: float) -> float | None:
    """Epoch seconds before which a conversation is stale; None when retention is off (0 days)."""
    if retention_days < 0:
        raise InputError(
            f"retention_days must be >= 0 (0 keeps conversations), got {retention_days}"
        )
    return None if retention_days == 0 else now - retention_days * _DAY_S


def prune_graph(
    settings: Settings,
    *,
    min_confidence: float | None = None,
    retention_days: float | None = None,
    dry_run: bool = False,
    namespace: str | None = None,
    now: float | None = None,
    store: GraphStore | None = None,
) -> PruneSummary:
    """Prune the namespace of `settings.qdrant.collection` (or `namespace`).

    Defaults come from `settings.graph` (`prune_min_confidence`, `conversation_retention_days`).
    A given `store` is used as is (and left open); otherwise one is opened and closed here.
    """
    graph = settings.graph
    threshold = graph.prune_min_confidence if min_confidence is None else min_confidence
    if not 0.0 <= threshold <= 1.0:
        raise InputError(f"min_confidence must lie in [0, 1], got {threshold}")
    days = graph.conversation_retention_days if retention_days is None else retention_days
    cutoff = retention_cutoff(days, now=time.time() if now is None else now)
    ns = namespace or settings.qdrant.collection
    own = store is None
    target = GraphStore.open(settings, namespace=ns) if store is None else store
    try:
        before = target.counts()
        removed = target.prune(threshold, conversations_before=cutoff, dry_run=dry_run)
        if not dry_run and (removed.entities or removed.topics):
            # Orphans found over the whole namespace: their keys are not known here, and what
            # follows the log (replicas, the upkeep's held names) must not keep them.
            target.mark_all()
            target.touch()
        after = before if dry_run else target.counts()
    finally:
        if own:
            target.close()
    return PruneSummary(
        namespace=target.ns,
        dry_run=dry_run,
        min_confidence=threshold,
        conversations_before=cutoff,
        removed=removed,
        before=before,
        after=after,
    )
