"""Helpers for the prose/code chunker's tests: documents to chunk and size bounds."""

from __future__ import annotations

from typing import Any

from rayweave.cluster.settings import IngestSettings
from rayweave.cluster.types import ContentType, Document
from rayweave.ingest.chunking import ChunkedDocument, chunk_document
from rayweave.ingest.chunking.pieces import Piece, structure_pieces
from rayweave.ingest.structure import parse_markdown
from rayweave.models.protocols import TokenCounter
from rayweave.models.tokens import WordPieceEstimate

from ..invariants import check_invariants

ESTIMATE = WordPieceEstimate()


def make(
    text: str,
    ctype: ContentType = ContentType.MARKDOWN,
    *,
    title: str = "Doc",
    language: str | None = None,
    doc_id: str = "doc-1",
) -> Document:
    return Document(
        id=doc_id,
        source=f"/corpus/{doc_id}",
        title=title,
        content_type=ctype,
        text=text,
        language=language,
    )


def bounds(section: tuple[int, int], proposition: tuple[int, int], **extra: Any) -> IngestSettings:
    """Settings with (min, max) section and proposition sizes; `extra` sets the rest."""
    return IngestSettings(
        section_min_tokens=section[0],
        section_max_tokens=section[1],
        proposition_min_tokens=proposition[0],
        proposition_max_tokens=proposition[1],
        **extra,
    )


def markdown_pieces(text: str) -> list[Piece]:
    """The pieces of a Markdown text, counted by the word-piece estimate as the chunker does."""
    pieces = structure_pieces(parse_markdown(text))
    counts = ESTIMATE.count_tokens([text[p.start : p.end] for p in pieces])
    for p, n in zip(pieces, counts, strict=True):
        p.tokens = n
    return pieces


def checked(doc: Document, tokens: TokenCounter, settings: IngestSettings) -> ChunkedDocument:
    """`chunk_document`, with every invariant of its output checked (see `invariants`)."""
    cd = chunk_document(doc, tokens=tokens, settings=settings)
    check_invariants(doc, cd, settings, tokens)
    return cd
