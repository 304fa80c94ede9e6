from __future__ import annotations

from rayweave.cluster.settings import IngestSettings
from rayweave.cluster.types import ContentType
from rayweave.models.tokens import TokenizerCounter

from ..code_samples import generate
from .conftest import checked, make


class TestCodePlan:
    def test_code_document(self, minilm: TokenizerCounter) -> None:
        gen = generate("python", [2, 60, 3, 1, 1])
        doc = make(gen.code, ContentType.CODE, title="gen.py", language="python")
        s = IngestSettings(section_min_tokens=60, section_max_tokens=150)
        cd = checked(doc, minilm, s)
        for name, (fs, fe) in gen.functions.items():
            whole = [c for c in cd.sections if c.start_char <= fs and fe <= c.end_char]
            if not whole:
                assert minilm.count_tokens([gen.code[fs:fe]])[0] > 150
                parts = [c for c in cd.sections if c.start_char < fe and fs < c.end_char]
                assert all(c.section_path[-1] == name for c in parts)
        assert all(
            c.content_type == ContentType.CODE and c.language == "python" for c in cd.sections
        )
        assert "compute_0" in cd.summary.defined_symbols
        assert "pkg.helpers" in cd.summary.dependencies
        sec = next(c for c in cd.sections if "compute_0" in c.defined_symbols)
        emb = cd.embed_texts[cd.chunks.index(sec)]
        assert "compute 0" in emb or "compute_0" in emb
        assert cd.summary.text.startswith("gen.py\nGenerated module.")
        assert (
            "def compute_0(a, b): Compute the compute_0 value from both inputs." in cd.summary.text
        )
