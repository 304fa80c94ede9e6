from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from rayweave.cluster.settings import IngestSettings
from rayweave.cluster.types import ContentType, Document
from rayweave.ingest.chunking import ChunkedDocument, chunk_documents
from rayweave.ingest.readers import read_documents
from rayweave.ingest.samples import sample_corpus
from rayweave.models.tokens import TokenizerCounter

from .invariants import check_invariants

QUERIES = Path(__file__).parents[2] / "bench" / "sample_queries.json"


@pytest.fixture(scope="module")
def corpus() -> list[Document]:
    result = read_documents([sample_corpus()], IngestSettings())
    assert result.errors == []
    return result.documents


@pytest.fixture(scope="module")
def chunked(corpus: list[Document], minilm: TokenizerCounter) -> dict[str, ChunkedDocument]:
    batch = chunk_documents(corpus, tokens=minilm, settings=IngestSettings())
    assert batch.errors == []
    by_path = {doc.metadata["path"]: cd for doc, cd in zip(corpus, batch.chunked, strict=True)}
    return by_path


def rel(doc: Document) -> str:
    return str(doc.metadata["path"])


class TestSampleCorpus:
    def test_size_and_types(self, corpus: list[Document]) -> None:
        root = sample_corpus()
        size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
        assert size < 300_000
        types = Counter(d.content_type for d in corpus)
        assert types[ContentType.MARKDOWN] >= 20
        assert types[ContentType.RST] == 1
        assert types[ContentType.HTML] == 1
        assert types[ContentType.NOTEBOOK] == 1
        assert types[ContentType.IMAGE] == 1
        assert 3 <= types[ContentType.CODE] <= 7
        assert all(d.language == "python" for d in corpus if d.content_type == ContentType.CODE)

    def test_every_document_chunks_cleanly(
        self, corpus: list[Document], chunked: dict[str, ChunkedDocument], minilm: TokenizerCounter
    ) -> None:
        settings = IngestSettings()
        for doc in corpus:
            if doc.content_type != ContentType.IMAGE:
                check_invariants(doc, chunked[rel(doc)], settings, minilm)

    def test_concepts_are_linked_from_other_pages(self, corpus: list[Document]) -> None:
        links: Counter[str] = Counter()
        for doc in corpus:
            for target in set(re.findall(r"\]\(([^)#]+\.md)", doc.text)) | set(
                re.findall(r'href="([^"#]+\.md)"', doc.text)
            ):
                links[Path(target).name] += 1
        for concept in (
            "tasks.md",
            "queues.md",
            "brokers.md",
            "workers.md",
            "leases.md",
            "retries.md",
            "dead-letter-queue.md",
            "idempotency.md",
            "results.md",
        ):
            assert links[concept] >= 3, (concept, links[concept])

    def test_metadata_for_the_graph(self, chunked: dict[str, ChunkedDocument]) -> None:
        trouble = chunked["docs/troubleshooting.md"]
        codes = {code for c in trouble.chunks for code in c.error_codes}
        assert {f"E100{i}" for i in range(1, 10)} <= codes
        assert "LeaseExpiredError" in codes
        leases = chunked["docs/concepts/leases.md"]
        refs = {r for c in leases.sections for r in c.references}
        assert {"retries.md", "dead-letter-queue.md", "idempotency.md"} <= {
            Path(r).name for r in refs
        }
        install = chunked["docs/installation.md"]
        assert "ferry-queue" in install.summary.dependencies
        worker = chunked["src/ferry/worker.py"]
        defined = {d for c in worker.sections for d in c.defined_symbols}
        assert {"Worker", "Worker._heartbeat_loop", "run_until_idle"} <= defined
        deps = {d for c in worker.sections for d in c.dependencies}
        assert {"ferry.broker", "ferry.errors", "ferry.task"} <= deps
        broker = chunked["src/ferry/broker.py"]
        sec = next(c for c in broker.sections if "broker_from_url" in c.defined_symbols)
        assert {"SQLiteBroker", "RedisBroker", "MemoryBroker", "ConfigError"} <= set(sec.references)
        assert "E1001" in chunked["src/ferry/errors.py"].summary.error_codes or any(
            "BrokerUnavailableError" in c.error_codes for c in chunked["src/ferry/errors.py"].chunks
        )

    def test_html_and_notebook(self, chunked: dict[str, ChunkedDocument]) -> None:
        html = chunked["docs/architecture.html"]
        assert "window.analytics" not in html.text
        assert "Quickstart" not in html.text
        assert any("ferry:{emails}:leases" in c.text for c in html.sections)
        nb = chunked["notebooks/tutorial.ipynb"]
        assert "```python\nfrom ferry import Ferry, Worker" in nb.text  # code cells fenced as code
        assert "run_until_idle" in {r for c in nb.chunks for r in c.references}

    def test_queries_point_at_real_files(self) -> None:
        spec = json.loads(QUERIES.read_text())
        queries = spec["queries"]
        assert len(queries) >= 20
        kinds = Counter(q["type"] for q in queries)
        assert set(kinds) == {
            "how-to",
            "what-is",
            "why",
            "error",
            "code",
            "comparison",
            "multi-hop",
        }
        assert kinds["multi-hop"] >= 3
        root = sample_corpus()
        for q in queries:
            assert q["expected"], q
            for path in q["expected"]:
                assert (root / path).is_file(), path
            if q["type"] == "multi-hop":
                assert len(q["expected"]) >= 2
