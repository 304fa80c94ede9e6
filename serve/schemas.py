"""HTTP request and response models of the ingress (the public API, shown at /docs)."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rayweave.cluster.types import GraphPath, Hit, QueryType

__all__ = ["QueryType"]  # re-exported: part of the API vocabulary


class ContentScope(StrEnum):
    CODE = "code"
    DOCS = "docs"
    WEB = "web"


class Profile(StrEnum):
    """Which retrievers run: the ablation ladder of the evaluation, and the serving modes."""

    DENSE = "dense"
    SPARSE = "sparse"
    HYBRID = "hybrid"
    GRAPH = "hybrid+graph"
    FULL = "hybrid+graph+refine"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SearchFilters(_Model):
    content_type: list[str] | None = Field(
        default=None, description="markdown, rst, html, text, notebook, code, image"
    )
    language: list[str] | None = Field(default=None, description="Code language, e.g. python.")
    doc_id: list[str] | None = Field(default=None, description="Restrict to these documents.")
    source: list[str] | None = Field(default=None, description="Restrict to these source paths.")


class SearchRequest(_Model):
    query: str = Field(description="The question or search text.")
    top_k: int | None = Field(
        default=None, description="Results to return (default and bounds from settings)."
    )
    profile: Profile | None = Field(
        default=None, description="Retrieval profile; default chosen by query type."
    )
    query_type: QueryType | None = Field(default=None, description="Override the classifier.")
    level: Literal["any", "document", "section", "proposition"] = Field(
        default="any", description="Chunk level to return."
    )
    hierarchical: bool | None = Field(
        default=None,
        description="Narrow documents -> sections -> propositions (default from settings).",
    )
    filters: SearchFilters | None = None
    conversation_id: str | None = Field(default=None, max_length=128)
    user_id: str | None = Field(default=None, max_length=128)
    include_context: bool = Field(default=True, description="Assemble a reading-order context.")
    context_max_tokens: int = Field(default=2000, ge=64, le=32000)
    include_statements: bool = Field(
        default=False, description="Topic-grouped statements (graphrag-toolkit style)."
    )


class PathModel(_Model):
    nodes: list[str]
    relationships: list[str]
    score: float = 0.0

    @classmethod
    def of(cls, path: GraphPath) -> PathModel:
        return cls(nodes=list(path.nodes), relationships=list(path.relationships), score=path.score)


class ResultItem(_Model):
    id: str
    doc_id: str
    text: str
    score: float
    level: str
    source: str
    title: str
    section_path: list[str]
    retrievers: list[str]
    paths: list[PathModel]
    duplicates: list[str] = Field(
        default_factory=list,
        description="Sources of passages identical to this one, folded into it (same text, "
        "another document: a copied file, a second checkout).",
    )
    matched_levels: list[str] = Field(
        default_factory=list,
        description="Levels whose chunks matched this passage (`document` = its document's "
        "summary, `section`, `proposition`): a document's summary and its only section are one "
        "result (`serve.retrieval.document_view`).",
    )
    facts: list[str] = Field(
        default_factory=list,
        description="Extracted facts that led the graph walk here (namespaces ingested with "
        "`graph.extractor`): stated by this passage or naming an entity on its path.",
    )

    @classmethod
    def of(cls, hit: Hit) -> ResultItem:
        return cls(
            id=hit.id,
            doc_id=hit.doc_id,
            text=hit.text,
            score=round(float(hit.score), 6),
            level=hit.level.value,
            source=hit.source,
            title=hit.title,
            section_path=list(hit.section_path),
            retrievers=list(hit.retrievers),
            paths=[PathModel.of(p) for p in hit.paths],
            duplicates=list(hit.duplicates),
            matched_levels=[
                str(v) for v in hit.metadata.get("matched_levels") or (hit.level.value,)
            ],
            facts=[str(f) for f in hit.metadata.get("facts") or ()],
        )


class ContextSection(_Model):
    heading: str
    text: str
    chunk_ids: list[str]


class ContextDocument(_Model):
    doc_id: str
    title: str
    source: str
    sections: list[ContextSection]


class Context(_Model):
    documents: list[ContextDocument]
    text: str
    tokens: int


class StatementGroup(_Model):
    source: str
    topic: str
    statements: list[str]
    score: float


class SearchResponse(_Model):
    query: str
    query_type: QueryType
    content_scope: ContentScope
    profile: Profile
    results: list[ResultItem]
    context: Context | None = None
    statements: list[StatementGroup] | None = None
    degraded: list[str] = Field(
        default_factory=list, description="Retrievers dropped (failed or late)."
    )
    timings_ms: dict[str, float] = Field(default_factory=dict)


class AnswerResponse(SearchResponse):
    answer: str | None = Field(default=None, description="LLM answer when an LLM is configured.")
    answer_note: str | None = Field(
        default=None, description="Why `answer` is null, and the setting that enables answers."
    )


class ErrorResponse(_Model):
    error: str
    detail: str
