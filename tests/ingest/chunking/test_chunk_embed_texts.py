from __future__ import annotations

import pytest

from rayweave.cluster.settings import IngestSettings
from rayweave.cluster.types import ContentType
from rayweave.ingest.chunking import chunk_document
from rayweave.ingest.chunking.embed_texts import span_embed_text, summary_embed_text
from rayweave.ingest.chunking.plans import Span
from rayweave.models.tokens import TokenizerCounter

from .conftest import make


class TestEmbedTexts:
    def test_code_embed_modes(self, minilm: TokenizerCounter) -> None:
        code = (
            "def writeBoolean(self, n):\n"
            '    """Writes a Boolean to the stream."""\n'
            "    self.stream.write(n)\n"
        )
        doc = make(code, ContentType.CODE, title="writeBoolean", language="python")
        raw = chunk_document(doc, tokens=minilm, settings=IngestSettings())
        assert raw.embed_texts[1] == raw.sections[0].text
        words = chunk_document(doc, tokens=minilm, settings=IngestSettings(code_embed="words"))
        assert words.embed_texts[1].startswith("python function write Boolean\nWrites a Boolean")
        assert words.embed_texts[0].startswith("write Boolean")
        assert [c.to_row() for c in words.chunks] == [
            c.to_row() for c in raw.chunks
        ]  # stored text unchanged


_PROSE = Span(0, 0, 0, (), ContentType.MARKDOWN)


class TestProseEmbedText:
    def test_header_over_text_with_links_and_tags_reduced(self) -> None:
        text = "See [the guide](g.md) and <b>bold</b> ![img](i.png)."
        out = span_embed_text(_PROSE, text, "Guide", ("Install", "Linux"), "", "words")
        assert out == "Guide > Install > Linux\nSee the guide and  bold  img."

    def test_header_not_repeated_over_its_own_heading(self) -> None:
        text = "## Guide\n\nBody."
        assert span_embed_text(_PROSE, text, "Guide", (), "", "words") == text

    def test_no_header_without_title_or_path(self) -> None:
        assert span_embed_text(_PROSE, "Body.", "", (), "", "raw") == "Body."


class TestSummaryEmbedText:
    @pytest.mark.parametrize(
        ("mode", "expected"),
        [
            ("words", "ferry.py\ndef write Boolean(self, n)"),
            ("raw", "ferry.py\ndef writeBoolean(self, n)"),
        ],
    )
    def test_code_summary_follows_the_mode(self, mode: str, expected: str) -> None:
        doc = make("x", ContentType.CODE, title="ferry.py", language="python")
        assert summary_embed_text(doc, "ferry.py\ndef writeBoolean(self, n)", mode) == expected

    def test_prose_summary_gets_the_title_once(self) -> None:
        doc = make("x", title="Ferry")
        assert summary_embed_text(doc, "Ferry\nLead.", "words") == "Ferry\nLead."
        assert summary_embed_text(doc, "An LLM says [x](y).", "words") == "Ferry\nAn LLM says x."
