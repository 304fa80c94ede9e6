"""The entry points: chunk one document, or many with failures collected as `ReadError`s."""

from __future__ import annotations

from collections.abc import Sequence

from rayweave.cluster.errors import SourceError
from rayweave.cluster.settings import IngestSettings
from rayweave.cluster.types import ContentType, Document
from rayweave.ingest.chunking.assembly import assemble
from rayweave.ingest.chunking.chunked import ChunkBatch, ChunkedDocument, Embed, Summarize
from rayweave.ingest.chunking.code_plan import plan_code
from rayweave.ingest.chunking.images import image_document
from rayweave.ingest.chunking.prose_plan import plan_prose
from rayweave.ingest.chunking.summary import document_summary
from rayweave.ingest.readers import ReadError
from rayweave.models.protocols import TokenCounter

__all__ = ["chunk_document", "chunk_documents"]


class _WithoutSpecials:
    """A counter whose counts include special tokens ([CLS], [SEP]), minus that constant.

    Piece counts are added up into chunk counts, which only works without the per-text extras.
    """

    def __init__(self, inner: TokenCounter, extra: int) -> None:
        self.inner = inner
        self.extra = extra

    @property
    def max_tokens(self) -> int:
        return self.inner.max_tokens

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [max(0, n - self.extra) for n in self.inner.count_tokens(texts)]


def _additive(tokens: TokenCounter) -> TokenCounter:
    if isinstance(tokens, _WithoutSpecials):
        return tokens
    extra = int(tokens.count_tokens([""])[0])
    return _WithoutSpecials(tokens, extra) if extra > 0 else tokens


def _check(settings: IngestSettings) -> None:
    if settings.section_min_tokens > settings.section_max_tokens:
        raise ValueError("ingest.section_min_tokens must not exceed ingest.section_max_tokens")
    if settings.proposition_min_tokens > settings.proposition_max_tokens:
        raise ValueError(
            "ingest.proposition_min_tokens must not exceed ingest.proposition_max_tokens"
        )


def chunk_document(
    doc: Document,
    *,
    tokens: TokenCounter,
    settings: IngestSettings,
    embed: Embed | None = None,
    summarize: Summarize | None = None,
) -> ChunkedDocument:
    """Chunk one document on all three levels; an empty or unparsable document raises `SourceError`.

    `tokens` counts with the embedding model's tokenizer (counts that include special tokens are
    corrected; `TokenizerCounter` is the fast choice). `embed` (texts -> vectors) enables
    topic-shift splitting of long heading-less regions; `summarize` replaces the extractive
    summary (a failing call falls back to it and leaves a warning).
    """
    _check(settings)
    if doc.content_type == ContentType.IMAGE:
        return image_document(doc)
    tokens = _additive(tokens)
    if not doc.text.strip():
        raise SourceError(
            f"{doc.source or doc.id}: empty document (no text)", path=doc.source or doc.id
        )
    try:
        if doc.content_type == ContentType.CODE:
            plan = plan_code(doc, tokens, settings)
        else:
            plan = plan_prose(doc, tokens, settings, embed)
    except SourceError as exc:
        if exc.path is None:
            raise SourceError(f"{doc.source}: {exc}", path=doc.source) from exc
        raise
    summary = document_summary(doc, plan, tokens, settings, summarize)
    return assemble(
        doc, plan, summary.text, summary.tokens, settings.code_embed, outline=summary.outline
    )


def chunk_documents(
    docs: Sequence[Document],
    *,
    tokens: TokenCounter,
    settings: IngestSettings,
    embed: Embed | None = None,
    summarize: Summarize | None = None,
) -> ChunkBatch:
    """Chunk many documents; a failing one becomes a `ReadError` (path, reason), the rest go on."""
    batch = ChunkBatch()
    tokens = _additive(tokens)
    for doc in docs:
        try:
            batch.chunked.append(
                chunk_document(
                    doc, tokens=tokens, settings=settings, embed=embed, summarize=summarize
                )
            )
        except SourceError as exc:
            where = exc.path or doc.source or doc.id
            reason = str(exc).removeprefix(f"{where}: ")
            batch.errors.append(ReadError(path=where, reason=reason))
        except (ValueError, RecursionError, UnicodeError) as exc:  # parser failures on odd input
            batch.errors.append(
                ReadError(
                    path=doc.source or doc.id, reason=f"cannot chunk: {type(exc).__name__}: {exc}"
                )
            )
    return batch
