"""Domain types shared by ingestion, the stores and serving.

A `Document` is one source (a file, a corpus record). Chunking turns it into `Chunk`s on three
levels (seed 002), all embedded and stored in one collection:

- `Level.DOCUMENT`: one per document, its summary (title, lead, headings);
- `Level.SECTION`: 200-400-token semantic sections, children of the document;
- `Level.PROPOSITION`: 50-150-token complete sentence groups, children of a section.

`Section` and `Proposition` name the last two. They are plain `Chunk`s, so that stores, fusion
and graph code handle every level the same way; `Chunk.level` says which one it is.

Values are frozen, keyword-only dataclasses; `to_row()`/`from_row()` convert them to the flat
dicts that Ray Data batches and Qdrant payloads carry.
"""

from __future__ import annotations

import dataclasses
import hashlib
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Self, TypeAlias

_ID_NAMESPACE = uuid.UUID("6f1c1a53-8f0e-4b7e-9a43-7d8e2c6a5b10")


class Level(StrEnum):
    DOCUMENT = "document"
    SECTION = "section"
    PROPOSITION = "proposition"


class QueryType(StrEnum):
    """What a query asks for (seed 000); decides the retrieval profile and graph traversals."""

    HOW_TO = "how-to"
    WHAT_IS = "what-is"
    WHY = "why"
    ERROR = "error"
    CODE = "code"
    COMPARISON = "comparison"
    MULTI_HOP = "multi-hop"
    GENERAL = "general"


class ContentType(StrEnum):
    MARKDOWN = "markdown"
    RST = "rst"
    HTML = "html"
    TEXT = "text"
    NOTEBOOK = "notebook"
    CODE = "code"
    IMAGE = "image"


def stable_id(*parts: object) -> str:
    """A short, stable id from its parts: equal inputs give equal ids across runs and machines."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).hexdigest()
    return digest[:24]


def point_uuid(chunk_id: str) -> str:
    """Qdrant accepts only integers and UUIDs as point ids; derive a UUID from a chunk id."""
    return str(uuid.uuid5(_ID_NAMESPACE, chunk_id))


def content_hash(data: str | bytes) -> str:
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


class _Row:
    """Conversion to and from flat rows (Ray Data, payloads). Tuples travel as lists."""

    def to_row(self) -> dict[str, Any]:
        row: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, StrEnum):
                value = value.value
            row[f.name] = value
        return row

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Self:
        """Inverse of `to_row`; also accepts numpy arrays where tuples are expected (Ray Data)."""
        kwargs: dict[str, Any] = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if f.name not in row:
                continue
            value = row[f.name]
            # Annotations are strings under `from __future__ import annotations`.
            if str(f.type).startswith("tuple"):
                items = (
                    [] if value is None else (value.tolist() if hasattr(value, "tolist") else value)
                )
                if "GraphPath" in str(f.type):
                    items = [GraphPath.from_row(p) if isinstance(p, Mapping) else p for p in items]
                value = tuple(items)
            kwargs[f.name] = value
        return cls(**kwargs)


@dataclass(frozen=True, slots=True, kw_only=True)
class Document(_Row):
    """One source document as read from disk or a corpus record."""

    id: str
    source: str
    title: str
    content_type: ContentType
    text: str
    language: str | None = None
    content_hash: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "content_type", ContentType(self.content_type))


@dataclass(frozen=True, slots=True, kw_only=True)
class Chunk(_Row):
    """A stored, embedded unit on one of the three levels (see module docstring).

    Relationship metadata follows seed 000: parent/children/sequence for structure, and
    references, defined symbols, dependencies, error codes and keywords for the graph.
    """

    id: str
    doc_id: str
    level: Level
    text: str
    position: int = 0
    parent_id: str | None = None
    children_ids: tuple[str, ...] = ()
    prev_id: str | None = None
    next_id: str | None = None
    section_path: tuple[str, ...] = ()
    title: str = ""
    source: str = ""
    content_type: ContentType = ContentType.TEXT
    language: str | None = None
    token_count: int = 0
    start_char: int = 0
    end_char: int = 0
    references: tuple[str, ...] = ()
    defined_symbols: tuple[str, ...] = ()
    dependencies: tuple[str, ...] = ()
    error_codes: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    # A document-level chunk that is only its code's names and signatures (no docstring): an
    # undocumented function's name is the only description it has, so it keeps its own vote
    # beside its content in dense search (`serve/views.py`, 'auto').
    outline: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "level", Level(self.level))
        object.__setattr__(self, "content_type", ContentType(self.content_type))

    @property
    def point_id(self) -> str:
        return point_uuid(self.id)

    def embed_text(self) -> str:
        """The text the encoders see: the title and section path give a short chunk its context."""
        heading = " > ".join(p for p in (self.title, *self.section_path) if p)
        if heading and not self.text.startswith(heading):
            return f"{heading}\n{self.text}"
        return self.text


def view_of(
    level: Level,
    chunk_id: str,
    *,
    parent_id: str | None,
    children: Sequence[str] = (),
    sole: bool = False,
) -> tuple[str, str, bool]:
    """What a chunk resolves to before fusion (`serve/views.py`): (its unit in the 'summary'
    view, its unit in the 'section' view, whether that unit has a summary besides its content).
    `sole`: a section that is its document's only one; `children`: a summary's sections."""
    if level is Level.DOCUMENT:
        unit = children[0] if len(children) == 1 else chunk_id
        return unit, unit, unit != chunk_id
    if level is Level.PROPOSITION and parent_id:
        return chunk_id, parent_id, False
    return chunk_id, chunk_id, sole


Section: TypeAlias = Chunk
Proposition: TypeAlias = Chunk


@dataclass(frozen=True, slots=True, kw_only=True)
class SparseVector(_Row):
    """Token ids and weights of a sparse (lexical) vector."""

    indices: tuple[int, ...]
    values: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.indices) != len(self.values):
            raise ValueError("sparse vector indices and values differ in length")


@dataclass(frozen=True, slots=True, kw_only=True)
class Entity(_Row):
    """A concept, named entity or code symbol in the knowledge graph.

    `id` is derived from the normalised name so that every mention of the same thing merges
    into one node; `aliases` keeps the surface forms seen.
    """

    id: str
    name: str
    kind: str = "concept"
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class GraphPath(_Row):
    """The nodes and relationship types that justified including a hit."""

    nodes: tuple[str, ...]
    relationships: tuple[str, ...]
    score: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Query(_Row):
    """A search request after validation."""

    text: str
    top_k: int = 10
    profile: str | None = None
    query_type: str | None = None
    filters: dict[str, Any] = field(default_factory=dict)
    conversation_id: str | None = None
    user_id: str | None = None


_KEEP: Any = object()  # `Hit.evolve`: a field left as it is
_new = object.__new__
_set = object.__setattr__


@dataclass(frozen=True, slots=True, kw_only=True)
class Hit(_Row):
    """One ranked result."""

    id: str
    doc_id: str
    text: str
    score: float
    level: Level = Level.PROPOSITION
    source: str = ""
    title: str = ""
    section_path: tuple[str, ...] = ()
    retrievers: tuple[str, ...] = ()
    paths: tuple[GraphPath, ...] = ()
    # Sources of identical passages folded into this hit (`serve.fusion.collapse_duplicates`).
    duplicates: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "level", Level(self.level))

    def evolve(
        self,
        *,
        id: str = _KEEP,
        doc_id: str = _KEEP,
        text: str = _KEEP,
        score: float = _KEEP,
        level: Level = _KEEP,
        source: str = _KEEP,
        title: str = _KEEP,
        section_path: tuple[str, ...] = _KEEP,
        retrievers: tuple[str, ...] = _KEEP,
        paths: tuple[GraphPath, ...] = _KEEP,
        duplicates: tuple[str, ...] = _KEEP,
        metadata: dict[str, Any] = _KEEP,
    ) -> Hit:
        """`dataclasses.replace` without re-running `__post_init__`: a hit's fields are already
        typed, and a request rebuilds about a hundred hits (resolution, fusion, the page), where
        `replace`, then a loop over the fields, was the largest share of the pipeline's own
        Python time. The fields are spelled out, so a misspelled one is a `TypeError` (and a
        mypy error) and no dict of changes is built. A changed `level` must be a `Level`."""
        new = _new(Hit)
        _set(new, "id", self.id if id is _KEEP else id)
        _set(new, "doc_id", self.doc_id if doc_id is _KEEP else doc_id)
        _set(new, "text", self.text if text is _KEEP else text)
        _set(new, "score", self.score if score is _KEEP else score)
        _set(new, "level", self.level if level is _KEEP else level)
        _set(new, "source", self.source if source is _KEEP else source)
        _set(new, "title", self.title if title is _KEEP else title)
        _set(new, "section_path", self.section_path if section_path is _KEEP else section_path)
        _set(new, "retrievers", self.retrievers if retrievers is _KEEP else retrievers)
        _set(new, "paths", self.paths if paths is _KEEP else paths)
        _set(new, "duplicates", self.duplicates if duplicates is _KEEP else duplicates)
        _set(new, "metadata", self.metadata if metadata is _KEEP else metadata)
        return new
