from __future__ import annotations

from rayweave.cluster.settings import IngestSettings
from rayweave.cluster.types import ContentType
from rayweave.ingest.chunking import chunk_document
from rayweave.models.tokens import TokenizerCounter

from ..code_samples import generate
from .conftest import ESTIMATE, checked, make


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


class TestOutlineSummary:
    """`Chunk.outline`: a summary that is only the code's signatures keeps its own vote in dense
    search (`serve/views.py`); one with any words of the code's own does not."""

    UNDOCUMENTED = "def add_edge(graph, u, v):\n    graph.setdefault(u, set()).add(v)\n"
    DOCUMENTED = 'def add_edge(graph, u, v):\n    """Join u to v."""\n    graph[u] = v\n'

    def outline(self, text: str, *, title: str = "", llm: str | None = None) -> bool:
        doc = make(text, ContentType.CODE, title=title, language="python")
        summarize = (lambda d: llm) if llm is not None else None
        cd = chunk_document(doc, tokens=ESTIMATE, settings=IngestSettings(), summarize=summarize)
        assert all(not c.outline for c in cd.chunks if c is not cd.summary)
        return cd.summary.outline

    def test_an_undocumented_function_is_an_outline(self) -> None:
        assert self.outline(self.UNDOCUMENTED)

    def test_a_docstring_gives_the_summary_words_and_a_title_does_not(self) -> None:
        assert not self.outline(self.DOCUMENTED)
        assert not self.outline('"""Graph helpers."""\n\n' + self.UNDOCUMENTED)
        # A code title is a file name or, for a bare function, its own name: no description.
        assert self.outline(self.UNDOCUMENTED, title="graph.py")
        assert self.outline(self.UNDOCUMENTED, title="add_edge")

    def test_a_language_models_summary_is_words(self) -> None:
        assert not self.outline(self.UNDOCUMENTED, llm="Adds an edge to a graph.")
        assert self.outline(self.UNDOCUMENTED, llm="  ")  # empty answer: the outline stands

    def test_prose_is_never_an_outline(self) -> None:
        doc = make("# Title\n\nSome words here.")
        cd = chunk_document(doc, tokens=ESTIMATE, settings=IngestSettings())
        assert not any(c.outline for c in cd.chunks)
