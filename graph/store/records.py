"""What the store's operations return: counts and reports, frozen and keyword-built."""

from __future__ import annotations

from dataclasses import dataclass

from rayweave.graph.schema import NodeLabel, RelType

__all__ = [
    "DeleteReport",
    "EntityMatch",
    "GraphCounts",
    "MessageRecord",
    "PruneReport",
    "ViewRecord",
    "WriteReport",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class GraphCounts:
    nodes: dict[str, int]
    relationships: dict[str, int]

    def node(self, label: NodeLabel) -> int:
        return self.nodes.get(label.value, 0)

    def rel(self, rel: RelType) -> int:
        return self.relationships.get(rel.value, 0)

    def render(self, namespace: str) -> str:
        """Totals, then each label and type with any, largest first."""

        def each(counts: dict[str, int]) -> str:
            ranked = sorted(((n, k) for k, n in counts.items() if n), reverse=True)
            return ", ".join(f"{k} {n}" for n, k in ranked)

        nodes, rels = sum(self.nodes.values()), sum(self.relationships.values())
        return (
            f"graph {namespace}: {nodes} nodes, {rels} relationships\n"
            f"  nodes: {each(self.nodes) or 'none'}\n"
            f"  relationships: {each(self.relationships) or 'none'}"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteReport:
    entities: int = 0
    topics: int = 0
    edges: int = 0
    skipped_edges: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteReport:
    doc_id: str
    chunks: int
    entities: int
    aliases: int
    topics: int
    # Nodes the delete touched (its chunks, the entities they linked): the change log's entry.
    keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class PruneReport:
    edges: int
    entities: int
    aliases: int
    topics: int
    chunks: int = 0
    """Section/Proposition nodes whose Document was gone."""
    conversations: int = 0
    messages: int = 0
    users: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class EntityMatch:
    """An entity found through an alias: `via` is the normalised form that matched."""

    id: str
    name: str
    kind: str
    df: int
    via: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageRecord:
    conversation_id: str
    message_id: str
    mentioned_entity_ids: tuple[str, ...]
    referenced_doc_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ViewRecord:
    user_id: str
    doc_id: str
    view_count: int
    first_viewed_at: float
    last_viewed_at: float
