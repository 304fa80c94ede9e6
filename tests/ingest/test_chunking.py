from __future__ import annotations

import itertools
import json
import re
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rayweave.cluster.errors import SourceError
from rayweave.cluster.settings import IngestSettings
from rayweave.cluster.types import Chunk, ContentType, Document, Level
from rayweave.ingest.chunking import chunk_document, chunk_documents
from rayweave.ingest.sentences import is_dangling, split_sentences
from rayweave.models.tokens import TokenizerCounter, WordPieceEstimate

from .code_samples import generate
from .conftest import SMALL
from .doc_strategies import markdown_doc, plain_doc
from .invariants import check_invariants

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


class TestInvariants:
    @settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(markdown_doc())
    def test_markdown(self, text: str) -> None:
        doc = make(text)
        cd = chunk_document(doc, tokens=ESTIMATE, settings=SMALL)
        check_invariants(doc, cd, SMALL, ESTIMATE)

    @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(plain_doc())
    def test_plain_text_windows(self, text: str) -> None:
        doc = make(text, ContentType.TEXT)
        cd = chunk_document(doc, tokens=ESTIMATE, settings=SMALL)
        check_invariants(doc, cd, SMALL, ESTIMATE)
        total = ESTIMATE.count_tokens([cd.text])[0]
        if total >= SMALL.section_max_tokens:
            assert all(c.token_count >= SMALL.section_min_tokens // 2 for c in cd.sections)

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(plain_doc())
    def test_dangling_sentences_stay_attached(self, text: str) -> None:
        cd = chunk_document(make(text, ContentType.TEXT), tokens=ESTIMATE, settings=SMALL)
        props = cd.propositions
        for prev, cur in itertools.pairwise(props):
            if cur.parent_id != prev.parent_id or not is_dangling(cur.text):
                continue
            # A cut before a dangling sentence is made only when it cannot move: attaching the
            # sentence to the previous proposition would break the maximum, or the cut would
            # land before another dangling sentence, or leave a fragment under the minimum.
            spans = split_sentences(cur.text)
            first_tokens = ESTIMATE.count_tokens([cur.text[spans[0][0] : spans[0][1]]])[0]
            if prev.token_count + first_tokens > SMALL.proposition_max_tokens:
                continue
            rest = cur.text[spans[1][0] :] if len(spans) > 1 else ""
            assert (
                not rest
                or is_dangling(rest)
                or ESTIMATE.count_tokens([rest])[0] < SMALL.proposition_min_tokens
            ), (prev.text, cur.text)

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(markdown_doc(), st.data())
    def test_ids_stable_and_content_derived(self, text: str, data: st.DataObject) -> None:
        doc = make(text)
        first = chunk_document(doc, tokens=ESTIMATE, settings=SMALL)
        again = chunk_document(doc, tokens=ESTIMATE, settings=SMALL)
        assert [c.to_row() for c in first.chunks] == [c.to_row() for c in again.chunks]
        assert first.embed_texts == again.embed_texts
        # Edit one sentence: its chunks get new ids, chunks whose text is unchanged keep theirs.
        sentences = [m for m in re.finditer(r"[A-Z][a-z]+ [a-z ]+[.?!]", text)]
        if not sentences:
            return
        m = data.draw(st.sampled_from(sentences))
        edited = text[: m.start()] + "Zebra " + text[m.start() :]
        second = chunk_document(make(edited), tokens=ESTIMATE, settings=SMALL)
        old = {(c.level, c.text): c.id for c in first.chunks}
        counts = Counter((c.level, c.text) for c in (*first.chunks, *second.chunks))
        for c in second.chunks:
            if (c.level, c.text) in old and counts[(c.level, c.text)] == 2:  # once in each version
                assert c.id == old[(c.level, c.text)]
        changed = [c for c in second.chunks if "Zebra" in c.text and c.level != Level.DOCUMENT]
        assert changed
        assert all(c.id not in old.values() for c in changed)


class TestContentTypes:
    def test_markdown_structure(self, minilm: TokenizerCounter, settings: IngestSettings) -> None:
        text = (
            "---\ntitle: Ferry Guide\n---\n# Ferry Guide\n\nFerry runs tasks. It retries them.\n\n"
            "## Install\n\nRun the installer. See [setup](setup.md) and `ferry.Worker`.\n\n"
            "```bash\npip install ferry-queue[redis]\n```\n\n"
            "## Errors\n\nError E1003 means the broker is down. "
            "`LeaseExpiredError: lease lost` is raised too.\n"
        )
        doc = make(text, title="Ferry Guide")
        cd = chunk_document(doc, tokens=minilm, settings=settings)
        check_invariants(doc, cd, settings, minilm)
        assert not cd.text.startswith("---")
        (section,) = cd.sections  # short document: one section
        assert section.section_path == ()  # the title heading is not repeated in paths
        assert "setup.md" in section.references
        assert "ferry.Worker" in section.references
        assert "ferry-queue" in section.dependencies
        assert {"E1003", "LeaseExpiredError"} <= set(section.error_codes)
        assert cd.summary.text.startswith("Ferry Guide\nFerry runs tasks. It retries them.")
        assert "Install; Errors" in cd.summary.text

    def test_markdown_sections_follow_headings(self, minilm: TokenizerCounter) -> None:
        body = " ".join(
            f"Sentence {i} explains the {w} option in detail." for i, w in enumerate(["a"] * 30)
        )
        text = f"# Title\n\n## Alpha\n\n{body}\n\n## Beta\n\n{body}\n\n### Beta child\n\n{body}\n"
        s = IngestSettings(section_min_tokens=100, section_max_tokens=200)
        doc = make(text, title="Title")
        cd = chunk_document(doc, tokens=minilm, settings=s)
        check_invariants(doc, cd, s, minilm)
        paths = [c.section_path for c in cd.sections]
        assert ("Alpha",) in paths
        assert ("Beta",) in paths
        assert ("Beta", "Beta child") in paths
        assert all(
            not c.text.startswith("## Beta") or c.section_path[0] == "Beta" for c in cd.sections
        )

    def test_propositions_start_at_headings(
        self, minilm: TokenizerCounter, settings: IngestSettings
    ) -> None:
        # Small headed subtrees merge into one section; a proposition that runs into the next
        # heading would be found under the wrong subject (a heading names what follows it).
        entries = [
            (
                f"## E100{i} {name}Error\n\n**Message:** `E100{i} {name}Error: the {name.lower()} "
                f"of task 01HV held by host-a:4312 expired`\n\n**Cause:** a task ran longer than "
                f"its {name.lower()} without a heartbeat: the worker died, was frozen (a "
                "stop-the-world GC, a paused VM), or CPU-bound code held the GIL so the "
                "heartbeat thread could not run.\n\n"
                f"**Fix:** raise `{name.lower()}_seconds` or call `heartbeat()` in long loops.\n"
            )
            for i, name in enumerate(["Lease", "Register", "Lock"], start=3)
        ]
        text = "# Troubleshooting\n\nSearch this page for the code in your log.\n\n" + "\n".join(
            entries
        )
        doc = make(text, title="Troubleshooting")
        cd = chunk_document(doc, tokens=minilm, settings=settings)
        check_invariants(doc, cd, settings, minilm)
        assert len(cd.sections) < len(entries)  # merged: the case that needs the rule
        for prop in cd.propositions:
            lines = [line for line in prop.text.splitlines() if line.strip()]
            assert not any(line.startswith("#") for line in lines[1:]), prop.text
        headed = [p for p in cd.propositions if p.text.startswith("## E1004")]
        assert len(headed) == 1
        assert "E1004 RegisterError:" in headed[0].text

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

    def test_rst(self, minilm: TokenizerCounter, settings: IngestSettings) -> None:
        text = (
            "Ferry CLI\n=========\n\nThe CLI manages workers.\n\n"
            "Starting\n--------\n\nUse this::\n\n"
            "    ferry worker --queues default\n\n.. code-block:: python\n\n"
            "    from ferry import Worker\n    Worker().run()\n\n"
            "See :doc:`configuration` and `the guide <https://example.com/guide>`_.\n"
        )
        doc = make(text, ContentType.RST, title="Ferry CLI")
        cd = chunk_document(
            doc,
            tokens=minilm,
            settings=IngestSettings(
                section_min_tokens=16,
                section_max_tokens=40,
                proposition_min_tokens=8,
                proposition_max_tokens=20,
            ),
        )
        check_invariants(
            doc,
            cd,
            IngestSettings(
                section_min_tokens=16,
                section_max_tokens=40,
                proposition_min_tokens=8,
                proposition_max_tokens=20,
            ),
            minilm,
        )
        refs = {r for c in cd.chunks for r in c.references}
        assert {"configuration", "https://example.com/guide"} <= refs
        assert any(c.section_path == ("Starting",) for c in cd.sections)
        assert any(
            "from ferry import Worker" in c.text and "Worker().run()" in c.text for c in cd.chunks
        )

    def test_html(self, minilm: TokenizerCounter, settings: IngestSettings) -> None:
        html = (
            "<html><head><title>Arch</title><style>p{color:red}</style></head><body>"
            "<nav><a href='/'>Home</a></nav><h1>Arch</h1><p>The broker stores <b>tasks</b>. "
            "See <a href='leases.html'>leases</a>.</p><script>alert('x')</script>"
            "<h2>Flow</h2><pre><code class='language-python'>"
            "worker.run()\nbroker.ack(t)</code></pre>"
            "<ul><li>First item.</li><li>Second item.</li></ul></body></html>"
        )
        doc = make(html, ContentType.HTML, title="Arch")
        cd = chunk_document(doc, tokens=minilm, settings=settings)
        check_invariants(doc, cd, settings, minilm)
        assert "alert" not in cd.text
        assert "color:red" not in cd.text
        assert "Home" not in cd.text
        assert "```python\nworker.run()\nbroker.ack(t)\n```" in cd.text
        assert "leases.html" in cd.sections[0].references
        assert "[leases]" not in cd.embed_texts[1]
        assert "leases" in cd.embed_texts[1]

    def test_notebook(self, minilm: TokenizerCounter, settings: IngestSettings) -> None:
        nb = {
            "nbformat": 4,
            "metadata": {"kernelspec": {"language": "python"}},
            "cells": [
                {"cell_type": "markdown", "source": ["# Tutorial\n", "We enqueue a task."]},
                {
                    "cell_type": "code",
                    "source": "import ferry\nq = ferry.Queue('x')",
                    "outputs": [{"output_type": "stream", "text": ["queued 1\n"]}],
                },
                {
                    "cell_type": "code",
                    "source": "q.get()",
                    "outputs": [
                        {
                            "output_type": "error",
                            "ename": "QueueEmpty",
                            "evalue": "no task",
                            "traceback": [
                                "\x1b[31mTraceback (most recent call last):",
                                '  File "<cell>", line 1',
                                "QueueEmpty: no task",
                            ],
                        }
                    ],
                },
            ],
        }
        doc = make(json.dumps(nb), ContentType.NOTEBOOK, title="Tutorial")
        cd = chunk_document(
            doc,
            tokens=minilm,
            settings=IngestSettings(
                section_min_tokens=16,
                section_max_tokens=32,
                proposition_min_tokens=8,
                proposition_max_tokens=16,
            ),
        )
        assert "```python\nimport ferry" in cd.text
        assert "QueueEmpty: no task" in cd.text
        assert "\x1b" not in cd.text
        assert any(c.content_type == ContentType.CODE and c.language == "python" for c in cd.chunks)
        assert "QueueEmpty" in {e for c in cd.chunks for e in c.error_codes}
        batch = chunk_documents(
            [make('{"cells": [', ContentType.NOTEBOOK, doc_id="broken")],
            tokens=minilm,
            settings=settings,
        )
        assert not batch.chunked
        assert "invalid notebook JSON" in batch.errors[0].reason
        assert batch.errors[0].path == "/corpus/broken"

    def test_code_document(self, minilm: TokenizerCounter) -> None:
        gen = generate("python", [2, 60, 3, 1, 1])
        doc = make(gen.code, ContentType.CODE, title="gen.py", language="python")
        s = IngestSettings(section_min_tokens=60, section_max_tokens=150)
        cd = chunk_document(doc, tokens=minilm, settings=s)
        check_invariants(doc, cd, s, minilm)
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

    def test_empty_documents(self, settings: IngestSettings) -> None:
        with pytest.raises(SourceError, match="empty document") as info:
            chunk_document(make("  \n\t"), tokens=ESTIMATE, settings=settings)
        assert info.value.path == "/corpus/doc-1"
        html = make("<html><script>x()</script></html>", ContentType.HTML, doc_id="h")
        batch = chunk_documents(
            [html, make("Fine text here.", ContentType.TEXT, doc_id="ok")],
            tokens=ESTIMATE,
            settings=settings,
        )
        assert [c.doc_id for c in batch.chunked] == ["ok"]
        assert batch.errors[0].path == "/corpus/h"
        assert "no text to chunk" in batch.errors[0].reason

    def test_oversize_sentence_and_code_are_cut(self, minilm: TokenizerCounter) -> None:
        s = IngestSettings(
            section_min_tokens=30,
            section_max_tokens=60,
            proposition_min_tokens=10,
            proposition_max_tokens=20,
            section_overlap_tokens=0,
        )
        run_on = "word, " * 150 + "end."
        code = "```\n" + "\n".join(f"line_{i} = {i}" for i in range(80)) + "\n```"
        doc = make(f"# T\n\n{run_on}\n\n{code}\n")
        cd = chunk_document(doc, tokens=minilm, settings=s)
        check_invariants(doc, cd, s, minilm)
        assert len(cd.sections) > 4


class TestSplittingModes:
    def test_window_overlap_is_whole_sentences(self, minilm: TokenizerCounter) -> None:
        text = " ".join(f"Fact number {i} says that the queue holds {i} tasks." for i in range(60))
        s = IngestSettings(
            section_min_tokens=60,
            section_max_tokens=120,
            section_overlap_tokens=30,
            proposition_min_tokens=20,
            proposition_max_tokens=40,
        )
        doc = make(text, ContentType.TEXT)
        cd = chunk_document(doc, tokens=minilm, settings=s)
        check_invariants(doc, cd, s, minilm)
        secs = cd.sections
        assert len(secs) >= 4
        for a, b in itertools.pairwise(secs):
            shared = cd.text[b.start_char : a.end_char] if b.start_char < a.end_char else ""
            assert shared, "windows overlap"
            assert shared.startswith("Fact")
            assert shared.endswith("tasks.")
            assert 0 < minilm.count_tokens([shared])[0] <= 30

    @pytest.mark.slow
    def test_topic_shift_with_real_embeddings(
        self, minilm: TokenizerCounter, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        from .conftest import _minilm_folder

        model = SentenceTransformer(str(_minilm_folder()), device="cpu")

        def embed(texts: list[str]) -> np.ndarray:
            return model.encode(texts, normalize_embeddings=True, batch_size=64)

        cats = [
            "Cats sleep for most of the day in warm places.",
            "A kitten learns to hunt by playing with its siblings.",
            "Domestic cats purr when they are content and relaxed.",
            "Many cats enjoy climbing trees and high shelves.",
            "The whiskers of a cat help it sense narrow spaces.",
            "Cats groom their fur with rough tongues every day.",
            "Some cat breeds have very long and silky coats.",
            "A cat flicks its tail when it is annoyed or curious.",
            "Older cats often prefer quiet corners and soft blankets.",
            "Cats land on their feet thanks to a flexible spine.",
        ]
        dbs = [
            "A relational database stores rows in indexed tables.",
            "Transactions guarantee atomic commits of several writes.",
            "The query planner picks an index to avoid full scans.",
            "Write-ahead logging makes database crashes recoverable.",
            "Replication copies the database log to standby servers.",
            "Vacuuming reclaims space from deleted table rows.",
            "Connection pools limit the number of open database sessions.",
        ]
        text = " ".join(cats[:5] + dbs + cats[5:])  # the topic changes after sentences 5 and 12
        s = IngestSettings(
            section_min_tokens=40,
            section_max_tokens=110,
            section_overlap_tokens=20,
            proposition_min_tokens=10,
            proposition_max_tokens=40,
        )
        doc = make(text, ContentType.TEXT)
        topic = chunk_document(doc, tokens=minilm, settings=s, embed=embed)
        check_invariants(doc, topic, s, minilm)
        cut_texts = [c.text for c in topic.sections]
        assert any(t.startswith(dbs[0]) for t in cut_texts), cut_texts
        assert any(t.endswith(dbs[-1]) for t in cut_texts), cut_texts
        assert all(
            not (set(t.split(". ")) & set(cats) and set(t.split(". ")) & set(dbs))
            for t in cut_texts
            if t.startswith(dbs[0])
        )

        # a failing embedder degrades to windows with a warning, it does not fail the document
        def broken(texts: list[str]) -> np.ndarray:
            raise RuntimeError("model offline")

        fallback = chunk_document(doc, tokens=minilm, settings=s, embed=broken)
        assert fallback.warnings
        assert "sliding windows used" in fallback.warnings[0]


class TestSummaries:
    def test_llm_summary_used_and_failures_fall_back(self, settings: IngestSettings) -> None:
        doc = make("# Guide\n\nFerry runs tasks on workers. Workers lease tasks.\n", title="Guide")
        llm = chunk_document(
            doc, tokens=ESTIMATE, settings=settings, summarize=lambda d: f"{d.title}: a task queue."
        )
        assert llm.summary.text == "Guide: a task queue."
        assert not llm.warnings

        def down(d: Document) -> str:
            raise TimeoutError("no answer")

        fallback = chunk_document(doc, tokens=ESTIMATE, settings=settings, summarize=down)
        assert fallback.summary.text.startswith("Guide\nFerry runs tasks")
        assert "LLM summary failed (TimeoutError" in fallback.warnings[0]

    def test_summary_respects_budget(self, minilm: TokenizerCounter) -> None:
        headings = "\n\n".join(f"## Heading number {i}\n\nBody {i}." for i in range(60))
        doc = make(f"# Big\n\nLead sentence here.\n\n{headings}\n", title="Big")
        s = IngestSettings(summary_max_tokens=40)
        cd = chunk_document(doc, tokens=minilm, settings=s)
        assert cd.summary.token_count <= 40
        assert (
            minilm.count_tokens([cd.summary.text])[0] <= 42
        )  # joins add no more than a token or two


def _chunk_row_types(chunk: Chunk) -> None:
    row = chunk.to_row()
    assert Chunk.from_row(row) == chunk


def test_rows_round_trip() -> None:
    cd = chunk_document(make("# A\n\nText one. Text two.\n"), tokens=ESTIMATE, settings=SMALL)
    for c in cd.chunks:
        _chunk_row_types(c)


def test_counter_with_special_tokens_is_corrected(minilm: TokenizerCounter) -> None:
    class WithSpecials:  # what a DenseEncoder may count: [CLS] text [SEP]
        def count_tokens(self, texts: list[str]) -> list[int]:
            return [n + 2 for n in minilm.count_tokens(texts)]

    doc = make("# T\n\n" + " ".join(f"Sentence {i} is about leases." for i in range(80)))
    plain = chunk_document(doc, tokens=minilm, settings=IngestSettings())
    special = chunk_document(doc, tokens=WithSpecials(), settings=IngestSettings())
    assert [c.to_row() for c in special.chunks] == [c.to_row() for c in plain.chunks]
