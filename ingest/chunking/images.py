"""An image document: a summary plus one section standing for the image itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rayweave.cluster.types import Chunk, ContentType, Document, Level, content_hash, stable_id
from rayweave.ingest.chunking.chunked import ChunkedDocument
from rayweave.ingest.metadata import extract_keywords

__all__ = ["image_document"]


def image_document(doc: Document) -> ChunkedDocument:
    """A summary plus one section that stands for the image itself.

    The section carries the image (its `source` is the image file, `content_type` IMAGE) for the
    CLIP encoder; its text, the caption from the file name, feeds the text encoders. Every
    document thus has the same shape: one summary with at least one section.
    """
    caption = (doc.text or doc.title).strip() or Path(doc.source).stem
    keywords = extract_keywords(caption, top_k=5)
    digest = doc.content_hash or content_hash(doc.source)
    summary_id = stable_id(doc.id, Level.DOCUMENT.value, 0, digest)
    image_id = stable_id(doc.id, Level.SECTION.value, 0, digest)
    common: dict[str, Any] = {
        "doc_id": doc.id,
        "text": caption,
        "title": doc.title,
        "source": doc.source,
        "content_type": ContentType.IMAGE,
        "language": doc.language,
        "start_char": 0,
        "end_char": len(caption),
        "keywords": keywords,
    }
    summary = Chunk(id=summary_id, level=Level.DOCUMENT, children_ids=(image_id,), **common)
    image = Chunk(id=image_id, level=Level.SECTION, parent_id=summary_id, **common)
    return ChunkedDocument(
        doc_id=doc.id,
        source=doc.source,
        text=caption,
        chunks=(summary, image),
        embed_texts=(caption, caption),
    )
