"""`rayweave graph export-extractions` round trip on the session stack: a namespace ingested with a
language-model extractor (a real local OpenAI-compatible server answering from a script) is
exported by the command line to HippoRAG's OpenIE format, and `file:` extraction of that file gives
the same statements for the same chunk texts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from tests_support import REPO

from rayweave.cluster.settings import Settings
from rayweave.cluster.vectors.service import vector_store_for
from rayweave.graph.facts import facts_collection
from rayweave.graph.openie_file import FileExtractor
from rayweave.graph.store import open_graph_store
from rayweave.ingest.pipeline import run_ingest
from tests.graph.openai_double import (
    OpenAIDouble,
    openai_double_fixture,  # noqa: F401  (registers the `openai_double` fixture)
)

pytestmark = pytest.mark.integration

DOCS = {
    "lovelace.md": "# Ada Lovelace\n\nAda Lovelace wrote the first published program for the "
    "Analytical Engine, a machine that Charles Babbage designed in London.\n",
    "babbage.md": "# Charles Babbage\n\nCharles Babbage was an English mathematician. He was "
    "born in Walworth, a district of the city of Southwark.\n",
    "plain.md": "# Notes\n\nKeep the Analytical Engine notes near the Difference Engine notes.\n",
}


def cli(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    """`rayweave ...` as a user runs it, against the session's graph server."""
    env = {
        **os.environ,
        "RAYWEAVE_HOME": str(settings.home),
        "RAYWEAVE_GRAPH__EMBEDDED_PORT": str(settings.graph.embedded_port),
        "RAYWEAVE_GRAPH__EMBEDDED_HTTP_PORT": str(settings.graph.embedded_http_port),
        "RAYWEAVE_GRAPH__EMBEDDED_HEAP_MB": str(settings.graph.embedded_heap_mb),
        "NO_COLOR": "1",
        "COLUMNS": "200",
    }
    return subprocess.run(
        [str(Path(sys.executable).parent / "rayweave"), *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def drop(settings: Settings, collection: str) -> None:
    graph = open_graph_store(settings, namespace=collection)
    try:
        graph.drop_namespace()
    finally:
        graph.close()
    vector_store_for(settings, collection).drop()
    vector_store_for(settings, facts_collection(collection)).drop()


def test_export_then_file_extraction_gives_the_same_statements(
    ray_stack: Settings, graph_connection: object, tmp_path: Path, openai_double: OpenAIDouble
) -> None:
    openai_double.on(
        "Ada Lovelace wrote",
        entities=["Ada Lovelace", "Analytical Engine", "Charles Babbage", "London"],
        triples=[
            ["Ada Lovelace", "wrote the first program for", "Analytical Engine"],
            ["Charles Babbage", "designed", "Analytical Engine"],
        ],
    )
    openai_double.on(
        "Charles Babbage was",
        entities=["Charles Babbage", "Walworth", "Southwark"],
        triples=[
            ["Charles Babbage", "was born in", "Walworth"],
            ["Walworth", "is in", "Southwark"],
        ],
    )
    # "plain.md" gets the double's default reply: its capitalised words chained.
    graph_settings = ray_stack.graph.model_copy(
        update={
            "extractor": openai_double.spec,
            "extractor_timeout_s": 10.0,
            "extractor_retries": 0,
        }
    )
    settings = ray_stack.model_copy(update={"graph": graph_settings})
    root = tmp_path / "corpus"
    root.mkdir()
    for name, text in DOCS.items():
        (root / name).write_text(text)
    collection = f"t{uuid.uuid4().hex[:10]}"
    try:
        summary = run_ingest(settings, [root], collection=collection)
        assert summary.extraction is not None
        assert summary.extraction.failed == 0
        graph = open_graph_store(settings, namespace=collection)
        try:
            stored = graph.chunk_extractions()
            chunks, _ = graph.chunks_and_mentions()
        finally:
            graph.close()
        assert len(stored) == 3
        texts = {c.id: c.text for c in chunks if c.id in stored}

        path = tmp_path / "out" / "openie.json"
        done = cli(ray_stack, "graph", "export-extractions", str(path), "--collection", collection)
        assert done.returncode == 0, done.stderr
        assert f"wrote 3 passages ({summary.extraction.facts} triples)" in done.stdout
        assert collection in done.stdout
        document = json.loads(path.read_text(encoding="utf-8"))
        assert {d["passage"] for d in document["docs"]} == set(texts.values())

        extractor = FileExtractor(path)
        ids = list(texts)
        again = dict(zip(ids, extractor.extract([texts[i] for i in ids]), strict=True))
        for chunk_id, original in stored.items():
            read = again[chunk_id]
            triples = [(s.subject, s.predicate, s.object) for s in read.statements]
            assert triples == [(s.subject, s.predicate, s.object) for s in original.statements]
            assert {e.name for e in read.entities} == {e.name for e in original.entities}
        report = extractor.report()
        assert (report.matched_exact, report.chunks_unmatched) == (3, 0)
        lovelace = next(x for i, x in again.items() if "Ada Lovelace wrote" in texts[i])
        assert lovelace.statements[1].text == "Charles Babbage designed Analytical Engine"
    finally:
        drop(settings, collection)


def test_export_of_a_namespace_without_extractions_says_so(
    ray_stack: Settings, graph_connection: object, tmp_path: Path
) -> None:
    path = tmp_path / "none.json"
    empty = f"t{uuid.uuid4().hex[:10]}"
    done = cli(ray_stack, "graph", "export-extractions", str(path), "--collection", empty)
    assert done.returncode == 2
    assert "keeps no extractions" in done.stderr
    assert not path.exists()
