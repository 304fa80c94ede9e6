"""What each query type asks of the graph: one `TraversalProfile` per `QueryType`.

A profile weighs each traversal (0 disables it): a how-to question follows steps in sequence and
usage examples, a what-is question the entity's explanations, an error question its solutions, a
multi-hop question the bridges between documents.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from rayweave.cluster.errors import ConfigError
from rayweave.cluster.types import QueryType
from rayweave.graph.schema import RelType


def parse_query_type(value: str | QueryType | None) -> QueryType:
    """`None` is GENERAL; anything else must name a `QueryType` (hyphens and case are forgiven)."""
    if value is None:
        return QueryType.GENERAL
    if isinstance(value, QueryType):
        return value
    key = str(value).strip().lower().replace("_", "-").replace(" ", "-")
    try:
        return QueryType(key)
    except ValueError:
        valid = ", ".join(q.value for q in QueryType)
        raise ConfigError(f"unknown query type {value!r}; valid: {valid}") from None


@dataclass(frozen=True, slots=True, kw_only=True)
class TraversalProfile:
    """How much each traversal contributes for one query type (0 disables it)."""

    parent: float = 0.0
    children: float = 0.0
    sequence: float = 0.0
    sequence_depth: int | None = None  # None: GraphSettings.expand_depth
    examples: float = 0.0
    definitions: float = 0.0
    references: float = 0.0
    solutions: float = 0.0
    related: float = 0.0
    comention: float = 0.0  # CO_MENTIONED: a sentence's names, the shortest bridge
    bridge: float = 0.0
    entity: float = 0.0
    entity_rels: Mapping[RelType, float] = field(
        default_factory=lambda: {RelType.EXPLAINS: 1.0, RelType.MENTIONS: 0.3}
    )
    entity_expand: bool | None = None  # None: GraphSettings.expand_entities


_EXPLAINS, _DEFINES, _MENTIONS = RelType.EXPLAINS, RelType.DEFINES, RelType.MENTIONS

# One row per query type; a table reads better than one keyword per line.
# fmt: off
PROFILES: Mapping[QueryType, TraversalProfile] = {
    # Steps come in sequence, and an API's usage examples show how.
    QueryType.HOW_TO: TraversalProfile(
        parent=0.4, children=0.3, sequence=0.8, sequence_depth=2, examples=0.7, entity=0.5,
        entity_rels={_EXPLAINS: 1.0, _DEFINES: 0.6, _MENTIONS: 0.3},
    ),
    # Concept explanations and the context a definition sits in.
    QueryType.WHAT_IS: TraversalProfile(
        parent=0.6, sequence=0.2, entity=1.0, entity_expand=False,
        entity_rels={_EXPLAINS: 1.0, _DEFINES: 0.8, _MENTIONS: 0.2},
    ),
    # Explanations that connect concepts.
    QueryType.WHY: TraversalProfile(
        parent=0.4, sequence=0.4, related=0.7, entity=0.8, entity_expand=True,
        entity_rels={_EXPLAINS: 1.0, _MENTIONS: 0.3},
    ),
    # Error-solution pairs first.
    QueryType.ERROR: TraversalProfile(
        parent=0.3, sequence=0.5, solutions=1.0, entity=1.0, entity_expand=False,
        entity_rels={RelType.SOLVES: 1.0, _EXPLAINS: 0.6, _MENTIONS: 0.3},
    ),
    # Definitions, usages and references of symbols.
    QueryType.CODE: TraversalProfile(
        parent=0.5, definitions=1.0, examples=0.7, references=0.6, entity=0.8,
        entity_expand=False, entity_rels={_DEFINES: 1.0, RelType.USES: 0.5, _EXPLAINS: 0.6},
    ),
    # Both sides of a comparison, and the bridge between documents; a sentence that names two
    # entities is a bridge one hop shorter, weighed as the bridge is.
    QueryType.COMPARISON: TraversalProfile(parent=0.3, bridge=0.8, comention=0.8, entity=1.0),
    QueryType.MULTI_HOP: TraversalProfile(parent=0.3, bridge=1.0, comention=1.0, entity=0.8),
    QueryType.GENERAL: TraversalProfile(
        parent=0.4, sequence=0.3, bridge=0.5, comention=0.5, entity=0.6
    ),
}
# fmt: on
