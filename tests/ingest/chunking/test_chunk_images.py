from __future__ import annotations

from typing import Any

import pytest

from rayweave.cluster.settings import IngestSettings
from rayweave.cluster.types import ContentType, Document, Level
from rayweave.ingest.chunking import chunk_document
from rayweave.ingest.chunking.images import image_document

from .conftest import ESTIMATE


class TestImages:
    def test_image(self, settings: IngestSettings) -> None:
        doc = Document(
            id="img",
            source="/c/queue_diagram.png",
            title="queue diagram",
            content_type=ContentType.IMAGE,
            text="queue diagram",
            language="png",
        )
        cd = chunk_document(doc, tokens=ESTIMATE, settings=settings)
        summary, image = cd.chunks
        assert summary.level == Level.DOCUMENT
        assert summary.children_ids == (image.id,)
        assert image.level == Level.SECTION
        assert image.parent_id == summary.id
        assert image.content_type == ContentType.IMAGE
        assert image.source == "/c/queue_diagram.png"
        assert cd.embed_texts == ("queue diagram", "queue diagram")


def _image(text: str = "", title: str = "", **kw: Any) -> Document:
    fields: dict[str, Any] = {"id": "img", "source": "/c/queue_diagram.png", "language": "png"}
    fields.update(kw)
    return Document(title=title, content_type=ContentType.IMAGE, text=text, **fields)


class TestImageDocument:
    @pytest.mark.parametrize(
        ("text", "title", "caption"),
        [
            (" a broker diagram ", "title", "a broker diagram"),
            ("", " queue diagram ", "queue diagram"),
            ("", "  ", "queue_diagram"),
        ],
    )
    def test_caption_from_text_then_title_then_file_name(
        self, text: str, title: str, caption: str
    ) -> None:
        cd = image_document(_image(text, title))
        assert cd.text == caption
        assert cd.embed_texts == (caption, caption)
        for c in cd.chunks:
            assert c.text == caption
            assert (c.start_char, c.end_char) == (0, len(caption))
            assert c.content_type == ContentType.IMAGE
            assert c.language == "png"

    def test_ids_stable_and_derived_from_document_and_content(self) -> None:
        first = image_document(_image("queue diagram"))
        summary, image = first.chunks
        assert summary.id != image.id
        assert [c.id for c in image_document(_image("queue diagram")).chunks] == [
            summary.id,
            image.id,
        ]
        # the caption does not enter the id: the image's bytes (or, unknown, its path) do
        assert image_document(_image("renamed")).chunks[1].id == image.id
        hashed = image_document(_image("queue diagram", content_hash="abc")).chunks
        other = image_document(_image("queue diagram", id="img-2")).chunks
        assert not {c.id for c in (*hashed, *other)} & {summary.id, image.id}
        assert summary.keywords
