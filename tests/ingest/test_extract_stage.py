"""The graph extractor at ingest, end to end on the session's real stack: a real local HTTP server
speaking the OpenAI chat API (a test double of the language model, not of our code), the Ray Data
stage and its cache in the graph store, relation edges, the facts collection, and the fact-seeded
walk answering a query."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from rayweave.cluster.settings import Settings
from rayweave.cluster.vectors.service import vector_store_for
from rayweave.graph.extraction_prompts import TOPIC_TRIPLES_SYSTEM, topics_json
from rayweave.graph.facts import facts_collection
from rayweave.graph.schema import EdgeSource
from rayweave.graph.store import open_graph_store
from rayweave.ingest.pipeline import run_ingest
from rayweave.serve.local import LocalSearch
from rayweave.serve.schemas import Profile, SearchRequest, SearchResponse
from tests.graph.openai_double import (
    OpenAIDouble,
    Reply,
    openai_double_fixture,  # noqa: F401  (registers the `openai_double` fixture)
)

pytestmark = pytest.mark.integration

DOCS = {
    "lovelace.md": "# Ada Lovelace\n\nAda Lovelace wrote the first published program for the "
    "Analytical Engine, a machine that Charles Babbage designed in London.\n",
    "babbage.md": "# Charles Babbage\n\nCharles Babbage was an English mathematician. He was "
    "born in Walworth, a district of the city of Southwark.\n",
    "broken.md": "# Broken answer\n\nQuasar Widgets makes a gadget that the model cannot parse.\n",
}


def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    for name, text in DOCS.items():
        (root / name).write_text(text)
    return root


def script(double: OpenAIDouble) -> None:
    double.on(
        "Ada Lovelace wrote",
        entities=["Ada Lovelace", "Analytical Engine", "Charles Babbage", "London"],
        triples=[
            ["Ada Lovelace", "wrote the first program for", "Analytical Engine"],
            ["Charles Babbage", "designed", "Analytical Engine"],
        ],
    )
    double.on(
        "Charles Babbage was",
        entities=["Charles Babbage", "Walworth", "Southwark"],
        triples=[
            ["Charles Babbage", "was born in", "Walworth"],
            ["Walworth", "is in", "Southwark"],
        ],
    )
    double.on("Quasar Widgets", entities=Reply(content="{not json"))


def extracting(settings: Settings, double: OpenAIDouble) -> Settings:
    graph = settings.graph.model_copy(
        update={"extractor": double.spec, "extractor_timeout_s": 10.0, "extractor_retries": 0}
    )
    return settings.model_copy(update={"graph": graph})


def search(
    settings: Settings, collection: str, query: str, *, statements: bool = False
) -> SearchResponse:
    """The graph profile's top 3 through the local service."""
    local = LocalSearch(settings, collection=collection)
    try:
        request = SearchRequest(
            query=query, top_k=3, profile=Profile.GRAPH, include_statements=statements
        )
        return asyncio.run(local.service.search(request))
    finally:
        local.close()


def test_extraction_at_ingest_is_cached_stored_and_seeds_the_walk(
    ray_stack: Settings, graph_connection: object, tmp_path: Path, openai_double: OpenAIDouble
) -> None:
    script(openai_double)
    settings = extracting(ray_stack, openai_double)
    collection = f"t{uuid.uuid4().hex[:10]}"
    root = corpus(tmp_path)

    summary = run_ingest(settings, [root], collection=collection)
    assert summary.documents_inserted == 3
    assert summary.documents_failed == 0
    tally = summary.extraction
    assert tally is not None
    assert (tally.extracted, tally.failed, tally.cached) == (2, 1, 0)
    assert tally.facts == 4
    assert tally.errors[0].startswith("chunk ")
    assert "1 failed" in summary.render()
    calls = openai_double.count()
    assert calls == 5  # two steps for each good passage, one failed first step

    graph = open_graph_store(settings, namespace=collection)
    try:
        rows = graph.read(
            "MATCH (a:Entity {ns: $ns})-[r:RELATED_TO]->(b:Entity {ns: $ns}) "
            "WHERE r.source = $source RETURN a.name AS a, r.predicate AS p, b.name AS b",
            {"source": EdgeSource.LLM.value},
        )
    finally:
        graph.close()
    relations = {(r["a"].lower(), r["p"], r["b"].lower()) for r in rows}
    assert ("charles babbage", "was born in", "walworth") in relations
    facts = vector_store_for(settings, facts_collection(collection))
    assert facts.count() == 4

    # Unchanged documents are skipped; a fresh namespace of the same texts reads the cache.
    again = run_ingest(settings, [root], collection=collection)
    assert again.documents_skipped == 3
    other = f"t{uuid.uuid4().hex[:10]}"
    fresh = run_ingest(settings, [root], collection=other)
    assert fresh.extraction is not None
    assert fresh.extraction.cached == 2
    assert openai_double.count() == calls + 1  # only the failed passage is asked again

    response = search(settings, collection, "Where was the designer of the Analytical Engine born?")
    results = response.results
    assert any("Walworth" in r.text for r in results[:2]), [r.text[:60] for r in results]
    assert any("graph-facts" in r.retrievers for r in results)
    assert any(r.facts for r in results)


def test_topics_travel_from_the_model_to_the_statement_groups(
    ray_stack: Settings, graph_connection: object, tmp_path: Path, openai_double: OpenAIDouble
) -> None:
    openai_double.on(
        "Charles Babbage was",
        entities=["Charles Babbage", "Walworth", "Southwark"],
        triples=Reply(
            content=topics_json(
                [
                    ("Babbage's birth", [["Charles Babbage", "was born in", "Walworth"]]),
                    ("Southwark", [["Walworth", "is a district of", "Southwark"]]),
                ]
            )
        ),
    )
    settings = extracting(ray_stack, openai_double)
    settings = settings.model_copy(
        update={"graph": settings.graph.model_copy(update={"extractor_topics": True})}
    )
    collection = f"t{uuid.uuid4().hex[:10]}"
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "babbage.md").write_text(DOCS["babbage.md"])
    summary = run_ingest(settings, [root], collection=collection)
    assert summary.extraction is not None
    assert summary.extraction.facts == 2
    asked = [r for r in openai_double.requests if r.step == "triples"]
    assert asked
    assert all(r.body["messages"][0]["content"] == TOPIC_TRIPLES_SYSTEM for r in asked)
    facts = vector_store_for(settings, facts_collection(collection))
    topics = {p.payload["text"]: p.payload["topic"] for p in facts.scroll(limit=10)[0]}
    assert topics == {
        "Charles Babbage was born in Walworth": "Babbage's birth",
        "Walworth is a district of Southwark": "Southwark",
    }

    response = search(settings, collection, "Where was Charles Babbage born?", statements=True)
    assert response.statements is not None
    grouped = {g.topic: g.statements for g in response.statements}
    assert "Charles Babbage was born in Walworth" in grouped.get("Babbage's birth", []), grouped
