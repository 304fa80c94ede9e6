"""What the encoders see for a chunk: a context header over prose, code rendered in words.

Links are reduced to their text and HTML tags dropped; code follows `ingest.code_embed`
("words" renders identifiers as words, "raw" embeds the source as it is).
"""

from __future__ import annotations

import re

from rayweave.cluster.types import ContentType, Document
from rayweave.ingest.chunking.plans import Span
from rayweave.ingest.code import code_embed_text, identifier_words

__all__ = ["span_embed_text", "summary_embed_text"]

_LINK_TEXT = re.compile(r"!?\[([^\]\n]*)\]\([^)\n]*\)")
_HTML_TAG = re.compile(r"</?[A-Za-z][^>\n]*>")


def _prose_embed_text(text: str, header: str) -> str:
    body = _HTML_TAG.sub(" ", _LINK_TEXT.sub(r"\1", text))
    if header and not body.lstrip("# ").startswith(header):
        return f"{header}\n{body}"
    return body


def _header(title: str, path: tuple[str, ...]) -> str:
    return " > ".join(p for p in (title, *path) if p)


def span_embed_text(
    span: Span, text: str, title: str, path: tuple[str, ...], code_title: str, code_mode: str
) -> str:
    """The embed text of a section or proposition whose stored text is `text`."""
    if span.unit is not None:
        if code_mode == "raw":
            return text
        hint = code_title or title
        rendered: str = code_embed_text(
            span.unit, title=hint if hint and hint != span.unit.name else ""
        )
        return rendered
    return _prose_embed_text(text, _header(title, path))


def summary_embed_text(doc: Document, summary_text: str, code_mode: str) -> str:
    if doc.content_type == ContentType.CODE:
        return identifier_words(summary_text) if code_mode == "words" else summary_text
    if summary_text.startswith(doc.title):
        return summary_text
    return _prose_embed_text(summary_text, doc.title)
