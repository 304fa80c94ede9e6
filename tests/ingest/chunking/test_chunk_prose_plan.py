from __future__ import annotations

from rayweave.cluster.settings import IngestSettings
from rayweave.cluster.types import ContentType, Level
from rayweave.ingest.chunking import chunk_document
from rayweave.models.tokens import TokenizerCounter

from .conftest import make


class TestProsePlan:
    def test_code_fence_kept_whole(
        self, minilm: TokenizerCounter, settings: IngestSettings
    ) -> None:
        code = "\n".join(
            f"    value_{i} = compute(value_{i - 1}, factor={i})" for i in range(1, 12)
        )
        text = (
            "# T\n\nIntro line one. Intro line two.\n\n```python\ndef run():\n"
            + code
            + "\n```\n\nAfter.\n"
        )
        cd = chunk_document(make(text), tokens=minilm, settings=settings)
        fences = [c for c in cd.chunks if "```python" in c.text]
        assert all(c.text.count("```") in (2, 3, 4) for c in fences)
        assert (
            any(
                c.level == Level.PROPOSITION
                and c.content_type == ContentType.CODE
                and c.language == "python"
                for c in cd.chunks
            )
            or len(cd.sections) == 1
        )
