"""The knowledge graph's schema: labels, relationship types, keys, rows and DDL.

Nodes (one label each; ArcadeDB maps a label to a type, and multi-label nodes lose their
indexes there):

- `Document`: one source document, which also carries its `Level.DOCUMENT` chunk (the summary)
  as `chunk_id`/`ckey`/`text`; `Section` and `Proposition`: the other two chunk levels.
- `Entity` (concepts, named entities, code symbols, error codes, document titles), `Alias`
  (one per normalised surface form, `ALIAS_OF` its entities: exact and alias lookups are one
  index seek each), `Topic` (a keyword cluster).
- `Conversation`, `Message`, `User` (seed 003).

Every node has `ns` (the namespace a corpus was ingested into), `id`, and a `key` equal to
`ns + ":" + id` under a uniqueness constraint (Neo4j community has no composite node keys).
Every query is scoped by `ns` through the key or the indexed `ns` property.

Relationships carry `weight` (traversal strength), `confidence` (how sure the builder was;
`prune` removes weak inferred ones) and `source` (which rule made them). Labels and types only
ever come from the enums here; values only ever travel as query parameters.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeAlias

from rayweave.cluster.errors import ConfigError
from rayweave.cluster.types import Level


class NodeLabel(StrEnum):
    DOCUMENT = "Document"
    SECTION = "Section"
    PROPOSITION = "Proposition"
    ENTITY = "Entity"
    ALIAS = "Alias"
    TOPIC = "Topic"
    CONVERSATION = "Conversation"
    MESSAGE = "Message"
    USER = "User"
    EXTRACTION_CACHE = "ExtractionCache"  # an extractor's answer for a text hash, in no namespace


class RelType(StrEnum):
    CHUNK_OF = "CHUNK_OF"  # Section|Proposition -> Document
    HAS_CHILD = "HAS_CHILD"  # parent chunk -> child chunk
    NEXT = "NEXT"  # chunk -> following sibling chunk
    EXPLAINS = "EXPLAINS"  # chunk -> Entity it defines or is titled after
    MENTIONS = "MENTIONS"  # chunk|Message -> Entity (count)
    BELONGS_TO = "BELONGS_TO"  # Document|Section -> Topic
    RELATED_TO = "RELATED_TO"  # Entity -> Entity (undirected in meaning, stored once)
    REFERENCES = "REFERENCES"  # chunk|Message -> chunk|Document
    DEFINES = "DEFINES"  # chunk -> Entity (code symbol)
    USES = "USES"  # chunk -> Entity (code symbol, dependency)
    SOLVES = "SOLVES"  # chunk -> Entity (error code or message) whose fix it explains
    PART_OF = "PART_OF"  # Message -> Conversation
    CREATED = "CREATED"  # User -> Message
    VIEWED = "VIEWED"  # User -> Document (view_count, first/last_viewed_at)
    ALIAS_OF = "ALIAS_OF"  # Alias -> Entity
    SYNONYM_OF = "SYNONYM_OF"  # Entity -> Entity whose name the dense encoder finds equivalent
    CO_MENTIONED = "CO_MENTIONED"  # Entity -> Entity named in one sentence (stored once)


class EdgeSource(StrEnum):
    """Which rule made an edge. Structural and user-made edges are never pruned."""

    STRUCTURE = "structure"
    TITLE = "title"
    HEADING = "heading"
    DEFINITION = "definition"
    EXTRACTOR = "extractor"
    GAZETTEER = "gazetteer"
    COOCCURRENCE = "cooccurrence"
    KEYWORDS = "keywords"
    CODE = "code"
    ERROR = "error"
    LINK = "link"
    LLM = "llm"
    SYNONYMY = "synonymy"
    SENTENCE = "sentence"
    CONVERSATION = "conversation"
    USER = "user"


INFERRED_SOURCES: frozenset[EdgeSource] = frozenset(
    {
        EdgeSource.DEFINITION,
        EdgeSource.EXTRACTOR,
        EdgeSource.GAZETTEER,
        EdgeSource.COOCCURRENCE,
        EdgeSource.SENTENCE,
        EdgeSource.KEYWORDS,
        EdgeSource.ERROR,
        EdgeSource.LLM,
        EdgeSource.SYNONYMY,
    }
)

# The rules `graph.builders.build_graph` applies to stored chunks: the corpus pass owns these
# edges and replaces them all, extracted statements (LLM) included, from the extractions kept on
# chunks (synonymy, conversation and user edges have other writers).
CORPUS_SOURCES: frozenset[EdgeSource] = frozenset(
    {
        EdgeSource.TITLE,
        EdgeSource.HEADING,
        EdgeSource.DEFINITION,
        EdgeSource.EXTRACTOR,
        EdgeSource.GAZETTEER,
        EdgeSource.COOCCURRENCE,
        EdgeSource.SENTENCE,
        EdgeSource.KEYWORDS,
        EdgeSource.CODE,
        EdgeSource.ERROR,
        EdgeSource.LINK,
        EdgeSource.LLM,
    }
)

CHUNK_LABELS: tuple[NodeLabel, ...] = (NodeLabel.DOCUMENT, NodeLabel.SECTION, NodeLabel.PROPOSITION)
_LEVEL_LABEL = {
    Level.DOCUMENT: NodeLabel.DOCUMENT,
    Level.SECTION: NodeLabel.SECTION,
    Level.PROPOSITION: NodeLabel.PROPOSITION,
}
_CHUNKS = frozenset(CHUNK_LABELS)
_ENTITY = frozenset({NodeLabel.ENTITY})

# Which endpoint labels each relationship type accepts; writes outside this are rejected.
ENDPOINTS: Mapping[RelType, tuple[frozenset[NodeLabel], frozenset[NodeLabel]]] = {
    RelType.CHUNK_OF: (
        frozenset({NodeLabel.SECTION, NodeLabel.PROPOSITION}),
        frozenset({NodeLabel.DOCUMENT}),
    ),
    RelType.HAS_CHILD: (_CHUNKS, _CHUNKS),
    RelType.NEXT: (_CHUNKS, _CHUNKS),
    RelType.EXPLAINS: (_CHUNKS, _ENTITY),
    RelType.MENTIONS: (_CHUNKS | {NodeLabel.MESSAGE}, _ENTITY),
    RelType.BELONGS_TO: (_CHUNKS, frozenset({NodeLabel.TOPIC})),
    RelType.RELATED_TO: (_ENTITY, _ENTITY),
    RelType.REFERENCES: (_CHUNKS | {NodeLabel.MESSAGE}, _CHUNKS),
    RelType.DEFINES: (_CHUNKS, _ENTITY),
    RelType.USES: (_CHUNKS, _ENTITY),
    RelType.SOLVES: (_CHUNKS, _ENTITY),
    RelType.PART_OF: (frozenset({NodeLabel.MESSAGE}), frozenset({NodeLabel.CONVERSATION})),
    RelType.CREATED: (frozenset({NodeLabel.USER}), frozenset({NodeLabel.MESSAGE})),
    RelType.VIEWED: (frozenset({NodeLabel.USER}), frozenset({NodeLabel.DOCUMENT})),
    RelType.ALIAS_OF: (frozenset({NodeLabel.ALIAS}), _ENTITY),
    RelType.SYNONYM_OF: (_ENTITY, _ENTITY),
    RelType.CO_MENTIONED: (_ENTITY, _ENTITY),
}

# Relationship types through which an entity stays "in use" (not orphaned).
ENTITY_ANCHORS: tuple[RelType, ...] = (
    RelType.MENTIONS,
    RelType.EXPLAINS,
    RelType.DEFINES,
    RelType.USES,
    RelType.SOLVES,
)

_NAMESPACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def label_for_level(level: Level | str) -> NodeLabel:
    return _LEVEL_LABEL[Level(level)]


def check_namespace(ns: str) -> str:
    """A namespace is 1-64 letters, digits, `_`, `.` or `-` (it prefixes every key)."""
    if not isinstance(ns, str) or not _NAMESPACE.fullmatch(ns):
        raise ConfigError(
            f"graph namespace {ns!r} is invalid: use 1-64 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit"
        )
    return ns


def node_key(ns: str, node_id: str) -> str:
    return f"{ns}:{node_id}"


PropertyValue: TypeAlias = str | int | float | bool | list[str] | list[int] | list[float] | None


_LINKS = frozenset(
    (rel, src, dst) for rel, (srcs, dsts) in ENDPOINTS.items() for src in srcs for dst in dsts
)
"""Every (relationship, source label, target label) that `ENDPOINTS` allows, as one set: a
corpus pass checks about a million edge rows."""


@dataclass(frozen=True, slots=True)
class NodeRef:
    """A node by label and id (namespace implied by the store)."""

    label: NodeLabel
    id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class EntityRow:
    """A resolved entity. `aliases` are normalised surface forms (the canonical one included)."""

    id: str
    name: str
    kind: str = "concept"
    aliases: tuple[str, ...] = ()
    description: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicRow:
    id: str
    name: str
    keywords: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class EdgeRow:
    """One relationship to merge. Re-writing the same row is a no-op (idempotent)."""

    rel: RelType
    src: NodeRef
    dst: NodeRef
    weight: float = 1.0
    confidence: float = 1.0
    source: EdgeSource = EdgeSource.STRUCTURE
    count: int = 1
    props: Mapping[str, PropertyValue] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if (self.rel, self.src.label, self.dst.label) not in _LINKS:
            srcs, dsts = ENDPOINTS[self.rel]
            raise ValueError(
                f"{self.rel} cannot link {self.src.label} -> {self.dst.label} "
                f"(allowed: {sorted(srcs)} -> {sorted(dsts)})"
            )
        if not 0.0 <= self.confidence <= 1.0:
            raise ValueError(f"edge confidence must lie in [0, 1], got {self.confidence}")


@dataclass(frozen=True, slots=True, kw_only=True)
class EdgeColumns:
    """Edges of one type and rule between entities, as columns of their ends and values: how
    the corpus pass hands its co-occurrence edges (250k at 10k documents, most of them as
    stored) to the sync, which compares them with the stored ones without an `EdgeRow` each
    (`GraphLayerSync.sync_edges`). Checked once here, as `EdgeRow` checks each; the values
    are final (at most 1, six decimals, as `EdgeAccumulator` stores them), the pairs distinct."""

    rel: RelType
    source: EdgeSource
    src: Sequence[str]  # entity ids
    dst: Sequence[str]
    weight: Sequence[float]
    confidence: Sequence[float]
    count: Sequence[int]

    def __post_init__(self) -> None:
        if (self.rel, NodeLabel.ENTITY, NodeLabel.ENTITY) not in _LINKS:
            raise ValueError(f"{self.rel} cannot link entities")
        size = len(self.src)
        if any(len(c) != size for c in (self.dst, self.weight, self.confidence, self.count)):
            raise ValueError("edge columns differ in length")
        if size and not (min(self.confidence) >= 0.0 and max(self.confidence) <= 1.0):
            raise ValueError("edge confidences must lie in [0, 1]")

    def __len__(self) -> int:
        return len(self.src)

    def rows(self) -> list[EdgeRow]:
        ref: dict[str, NodeRef] = {}
        for eid in (*self.src, *self.dst):
            if eid not in ref:
                ref[eid] = NodeRef(NodeLabel.ENTITY, eid)
        cols = zip(self.src, self.dst, self.weight, self.confidence, self.count, strict=True)
        return [
            EdgeRow(
                rel=self.rel,
                src=ref[s],
                dst=ref[d],
                weight=w,
                confidence=c,
                source=self.source,
                count=n,
            )
            for s, d, w, c, n in cols
        ]


@dataclass(frozen=True, slots=True)
class ColumnsDelta:
    """Which pairs of a pass's `EdgeColumns` can differ from the columns the last pass synced:
    `now`, those of them that are in the columns (as they are there), and `gone`, those that
    no longer are (entity ids, as the columns name them). Every other pair is as the last pass
    left it (`graph/related_delta.py` knows which pairs a change moved)."""

    now: EdgeColumns
    gone: Sequence[tuple[str, str]]


@dataclass(frozen=True, slots=True)
class RowsDelta:
    """The rows of type `rel` in a pass's edges are only those that can differ from what the
    last pass synced, and `gone` names (start, end) those of its edges that went; every other
    stored edge of the type is as the last pass left it (`graph/topic_delta.py`)."""

    rel: RelType
    gone: Sequence[tuple[NodeRef, NodeRef]]


@dataclass(frozen=True, slots=True, kw_only=True)
class GraphBatch:
    """What the builders produce and `GraphStore.write_batch` writes. `columns`: edges handed
    over as columns (a corpus pass that syncs from a snapshot asks for them), none repeating
    a pair of `edges`."""

    entities: tuple[EntityRow, ...] = ()
    topics: tuple[TopicRow, ...] = ()
    edges: tuple[EdgeRow, ...] = ()
    columns: tuple[EdgeColumns, ...] = ()

    def __add__(self, other: GraphBatch) -> GraphBatch:
        return GraphBatch(
            entities=self.entities + other.entities,
            topics=self.topics + other.topics,
            edges=self.edges + other.edges,
            columns=self.columns + other.columns,
        )

    def edge_rows(self) -> tuple[EdgeRow, ...]:
        """Every edge as a row, the columns' too."""
        if not self.columns:
            return self.edges
        return (*self.edges, *(e for c in self.columns for e in c.rows()))


def schema_statements() -> list[str]:
    """Idempotent DDL both Neo4j 5 and ArcadeDB accept: one unique key and an `ns` index per
    label."""
    statements: list[str] = []
    for label in NodeLabel:
        low = label.value.lower()
        statements.append(
            f"CREATE CONSTRAINT rw_{low}_key IF NOT EXISTS "
            f"FOR (n:{label.value}) REQUIRE n.key IS UNIQUE"
        )
        statements.append(f"CREATE INDEX rw_{low}_ns IF NOT EXISTS FOR (n:{label.value}) ON (n.ns)")
    # The change log is read by namespace and version (`graph/store/change_log.py`).
    statements.append("CREATE INDEX rw_graphchange_ns IF NOT EXISTS FOR (n:GraphChange) ON (n.ns)")
    # The Level.DOCUMENT chunk id of a Document, so chunk ids of every level resolve by one seek.
    statements.append("CREATE INDEX rw_document_ckey IF NOT EXISTS FOR (n:Document) ON (n.ckey)")
    for label in (NodeLabel.SECTION, NodeLabel.PROPOSITION):
        statements.append(
            f"CREATE INDEX rw_{label.value.lower()}_doc IF NOT EXISTS "
            f"FOR (n:{label.value}) ON (n.dkey)"
        )
    return statements
