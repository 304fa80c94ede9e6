"""Ingest a generated hostile corpus: it completes, every failure names its path and reason,
every good file is searchable, injections stay data, and what was stored before survives."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from tests_support import SAMPLE_CORPUS, with_collection

from rayweave.cluster.settings import Settings
from rayweave.graph.schema import NodeLabel

from .figures import record
from .hostile_corpus import INJECTIONS, write_hostile_corpus

# Two ingests of a few hundred chunks through every model on two cores.
pytestmark = [pytest.mark.reliability, pytest.mark.integration, pytest.mark.timeout(1800)]

MUST_FAIL = (
    "binary.md",
    "binary.py",
    "one-line-50mb.txt",
    "broken.ipynb",
    "pipe.md",
    "inner.md",
    "loop-a.md",
    "dangling.md",
)


def test_hostile_corpus_is_ingested_reported_and_harmless(
    ray_stack: Settings, graph_connection: object, tmp_path: Path
) -> None:
    from rayweave.graph.store import open_graph_store
    from rayweave.ingest.pipeline import run_ingest
    from rayweave.serve.local import LocalSearch
    from rayweave.serve.schemas import SearchRequest

    settings = with_collection(ray_stack, "hostile")
    before = SAMPLE_CORPUS / "docs" / "concepts" / "leases.md"
    run_ingest(settings, [before], collection="hostile")
    corpus = write_hostile_corpus(tmp_path / "hostile")

    started = time.monotonic()
    summary = run_ingest(settings, [corpus.root], collection="hostile")
    seconds = time.monotonic() - started

    reported = {Path(e.path).name: e.reason for e in summary.errors}
    for name in MUST_FAIL:
        assert name in reported, f"{name} not reported: {sorted(reported)}"
    assert all(reason.strip() for reason in reported.values())
    assert "MB" in reported["one-line-50mb.txt"]

    graph = open_graph_store(settings, namespace="hostile")
    try:
        stored = {
            Path(str(r["source"])).name
            for r in graph.read("MATCH (d:Document {ns: $ns}) RETURN d.source AS source")
        }
        # Injections are data: stored verbatim, never executed (everything else is still there).
        texts = graph.read(
            "MATCH (s:Section {ns: $ns}) WHERE s.text CONTAINS $needle RETURN count(s) AS n",
            {"needle": INJECTIONS[1]},
        )
        counts = graph.counts()
    finally:
        graph.close()
    assert texts[0]["n"] >= 1
    assert counts.node(NodeLabel.DOCUMENT) == len(stored)
    silent = [p.name for p in corpus.hostile if p.name not in reported and p.name not in stored]
    assert silent == [], f"neither stored nor reported: {silent}"
    assert before.name in stored, "a document stored before the hostile run was lost"

    search = LocalSearch(settings, collection="hostile")
    try:
        for path, query in {**corpus.good, before: "What is a lease?"}.items():
            found = asyncio.run(search.service.search(SearchRequest(query=query, top_k=5)))
            sources = [r.source for r in found.results]
            assert str(path) in sources or any(s.endswith(path.name) for s in sources), (
                query,
                sources,
            )
    finally:
        search.close()

    record(
        test="hostile_corpus",
        files_tried=corpus.files_tried,
        ingested=len(stored) - 1,
        failures_reported=len(reported),
        good_files_searchable=len(corpus.good),
        data_lost=0,
        seconds=round(seconds, 1),
    )
