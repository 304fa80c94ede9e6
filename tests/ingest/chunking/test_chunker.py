from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings

from rayweave.cluster.errors import SourceError
from rayweave.cluster.settings import IngestSettings
from rayweave.cluster.types import Chunk, ContentType
from rayweave.ingest.chunking import chunk_document, chunk_documents
from rayweave.models.tokens import TokenizerCounter

from ..conftest import SMALL
from ..doc_strategies import markdown_doc, plain_doc
from .conftest import ESTIMATE, bounds, checked, make

FERRY_GUIDE_MD = """\
---
title: Ferry Guide
---
# Ferry Guide

Ferry runs tasks. It retries them.

## Install

Run the installer. See [setup](setup.md) and `ferry.Worker`.

```bash
pip install ferry-queue[redis]
```

## Errors

Error E1003 means the broker is down. `LeaseExpiredError: lease lost` is raised too.
"""

FERRY_CLI_RST = """\
Ferry CLI
=========

The CLI manages workers.

Starting
--------

Use this::

    ferry worker --queues default

.. code-block:: python

    from ferry import Worker
    Worker().run()

See :doc:`configuration` and `the guide <https://example.com/guide>`_.
"""


class TestInvariants:
    @settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(markdown_doc())
    def test_markdown(self, text: str) -> None:
        doc = make(text)
        checked(doc, ESTIMATE, SMALL)

    @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(plain_doc())
    def test_plain_text_windows(self, text: str) -> None:
        doc = make(text, ContentType.TEXT)
        cd = checked(doc, ESTIMATE, SMALL)
        total = ESTIMATE.count_tokens([cd.text])[0]
        if total >= SMALL.section_max_tokens:
            assert all(c.token_count >= SMALL.section_min_tokens // 2 for c in cd.sections)


class TestContentTypes:
    def test_markdown_structure(self, minilm: TokenizerCounter, settings: IngestSettings) -> None:
        doc = make(FERRY_GUIDE_MD, title="Ferry Guide")
        cd = checked(doc, minilm, settings)
        assert not cd.text.startswith("---")
        (section,) = cd.sections  # short document: one section
        assert section.section_path == ()  # the title heading is not repeated in paths
        assert "setup.md" in section.references
        assert "ferry.Worker" in section.references
        assert "ferry-queue" in section.dependencies
        assert {"E1003", "LeaseExpiredError"} <= set(section.error_codes)
        assert cd.summary.text.startswith("Ferry Guide\nFerry runs tasks. It retries them.")
        assert "Install; Errors" in cd.summary.text

    def test_rst(self, minilm: TokenizerCounter, settings: IngestSettings) -> None:
        doc = make(FERRY_CLI_RST, ContentType.RST, title="Ferry CLI")
        s = bounds((16, 40), (8, 20))
        cd = checked(doc, minilm, s)
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
        cd = checked(doc, minilm, settings)
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
            settings=bounds((16, 32), (8, 16)),
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
