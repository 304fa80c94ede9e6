"""`rayweave bench extract`: its deterministic OpenAI-compatible server, the figures it computes,
the corpus it draws chunks from, and one small end-to-end run on the session stack."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from tests_support import BEIR_FIXTURES

from rayweave.bench.extract import (
    GOAL_RATIO,
    IngestCost,
    IngestRun,
    Throughput,
    cost_spread,
    load_bench_corpus,
    measure_throughput,
    run_extract_bench,
    run_order,
    with_extractor,
)
from rayweave.bench.extract_server import (
    PREDICATE,
    ExtractionServer,
    ServerTally,
    passage_entities,
    token_count,
)
from rayweave.bench.table import format_table
from rayweave.cluster.errors import InputError
from rayweave.cluster.settings import Settings
from rayweave.cluster.types import ContentType
from rayweave.graph.extraction_prompts import (
    entity_messages,
    parse_entities,
    parse_triples,
    triple_messages,
)
from rayweave.graph.llm_extraction import ExtractionStats, build_extractor

PASSAGE = (
    "Ray Serve\nRay Serve runs on Ray. Anyscale maintains it in San Francisco, "
    "and Ray Data feeds it batches."
)
ENTITIES = ["Ray Serve", "Ray", "Anyscale", "San Francisco", "Ray Data"]


@pytest.fixture
def server() -> Iterator[ExtractionServer]:
    with ExtractionServer(answer_ms=0, model="bench-test") as srv:
        yield srv


def chat(server: ExtractionServer, messages: list[dict[str, str]]) -> httpx.Response:
    return httpx.post(
        f"{server.base_url}/chat/completions",
        json={"model": server.model, "messages": messages},
        timeout=10,
    )


class TestServer:
    def test_entities_are_the_capitalised_words(self) -> None:
        assert passage_entities(PASSAGE) == ENTITIES
        assert passage_entities("no names here") == []
        assert len(passage_entities(" ".join(f"Name{i} x" for i in range(20)))) == 8

    def test_answers_both_steps_deterministically_with_usage(
        self, server: ExtractionServer
    ) -> None:
        first = chat(server, entity_messages(PASSAGE))
        assert first.status_code == 200
        body = first.json()
        content = body["choices"][0]["message"]["content"]
        assert parse_entities(content).names == tuple(ENTITIES)
        assert body["usage"]["completion_tokens"] == token_count(content)
        prompt = sum(token_count(m["content"]) for m in entity_messages(PASSAGE))
        assert body["usage"]["prompt_tokens"] == prompt
        again = chat(server, entity_messages(PASSAGE)).json()["choices"][0]["message"]["content"]
        assert again == content

        triples = chat(server, triple_messages(PASSAGE, ENTITIES)).json()
        parsed = parse_triples(triples["choices"][0]["message"]["content"]).triples
        assert parsed == (
            ("Ray Serve", PREDICATE, "Ray"),
            ("Ray", PREDICATE, "Anyscale"),
            ("Anyscale", PREDICATE, "San Francisco"),
            ("San Francisco", PREDICATE, "Ray Data"),
        )
        tally = server.tally()
        assert (tally.requests, tally.entity_requests, tally.triple_requests) == (3, 2, 1)
        assert tally.prompt_tokens > tally.completion_tokens > 0

    def test_bad_requests_are_answered_and_counted(self, server: ExtractionServer) -> None:
        wrong = httpx.post(f"{server.base_url}/embeddings", json={}, timeout=10)
        assert wrong.status_code == 404
        empty = httpx.post(f"{server.base_url}/chat/completions", json={"x": 1}, timeout=10)
        assert empty.status_code == 400
        assert server.tally().bad_requests == 1
        assert server.tally().requests == 0

    def test_the_extractor_reads_its_answers(self, server: ExtractionServer) -> None:
        extractor = build_extractor(server.spec, concurrency=2, retries=0)
        try:
            (found,) = extractor.extract([PASSAGE])
        finally:
            extractor.close()
        assert found.error is None
        assert next(s.text for s in found.statements) == f"Ray Serve {PREDICATE} Ray"
        assert extractor.stats.calls == 2
        sent = server.tally()
        assert extractor.stats.prompt_tokens == sent.prompt_tokens
        assert extractor.stats.completion_tokens == sent.completion_tokens

    def test_requests_overlap_and_busy_time_is_counted(self) -> None:
        with ExtractionServer(answer_ms=150) as slow:
            before = slow.tally()
            with ThreadPoolExecutor(4) as pool:
                codes = list(pool.map(lambda _: chat(slow, entity_messages(PASSAGE)), range(4)))
            during = slow.tally() - before
        assert [r.status_code for r in codes] == [200] * 4
        assert during.requests == 4
        assert during.max_in_flight > 1
        assert during.busy_s > 0

    def test_tallies_subtract(self) -> None:
        later = ServerTally(requests=10, triple_requests=5, busy_s=3.0, max_in_flight=8)
        earlier = ServerTally(requests=4, triple_requests=2, busy_s=1.0, max_in_flight=3)
        diff = later - earlier
        assert (diff.requests, diff.triple_requests, diff.busy_s) == (6, 3, 2.0)
        assert diff.max_in_flight == 8


# -- the figures ----------------------------------------------------------------------------------


def run(name: str, seconds: float, *, requests: int = 0, busy_s: float = 0.0) -> IngestRun:
    return IngestRun(
        run=name,
        documents=10,
        chunks=40,
        extraction_chunks=20 if requests or name.startswith("(c)") else 0,
        cached=20 if name.startswith("(c)") else 0,
        failed=0,
        facts=30,
        requests=requests,
        busy_s=busy_s,
        seconds=seconds,
    )


class TestFigures:
    def test_throughput_rates(self) -> None:
        stats = ExtractionStats(
            texts=40,
            failures=1,
            calls=80,
            failed_calls=2,
            usage_calls=78,
            prompt_tokens=8000,
            completion_tokens=1000,
        )
        t = Throughput.of("bench server", 8, stats, 4.0)
        assert (t.chunks_per_s, t.requests_per_s) == (10.0, 20.0)
        assert (t.prompt_tokens_per_s, t.completion_tokens_per_s) == (2000.0, 250.0)
        assert (t.failures, t.failed_requests, t.concurrency) == (1, 2, 8)
        assert "chunks/s" in format_table([t])
        assert json.loads(json.dumps(t.to_dict()))["requests_per_s"] == 20.0
        idle = Throughput.of("x", 8, ExtractionStats(), 0.0)
        assert idle.chunks_per_s == 0.0
        assert idle.cells()["prompt tok/s"] is None  # no usage reported: not measured

    def test_ingest_cost_against_the_answer_time(self) -> None:
        cost = IngestCost(
            plain=run("(a) no extractor", 30.0),
            extracting=run("(b) extractor", 42.0, requests=800, busy_s=6.0),
            cached=run("(c) re-ingest, cached", 31.0),
            answer_ms=100.0,
            concurrency=8,
        )
        assert cost.answer_s == 10.0  # 800 x 0.1 s / 8
        assert cost.serial_answer_s == 80.0
        assert cost.measured_answer_s == 6.0
        assert cost.extraction_s == 12.0
        assert cost.ratio == pytest.approx(1.2)
        assert cost.meets_goal
        assert cost.measured_ratio == 2.0
        assert cost.saved_s == 11.0
        assert cost.wait_ratio == pytest.approx(1.1)
        assert cost.cache_overhead_s == 1.0
        figures = {f.metric: f.value for f in cost.figures("c")}
        assert figures["(b - a) / answer time"] == pytest.approx(1.2)
        assert figures["LLM requests of the re-ingest (c)"] == 0
        assert "goal <= 1.2" in format_table(cost.figures("c"))
        data = json.loads(json.dumps(cost.to_dict()))
        assert data["goal_ratio"] == GOAL_RATIO
        assert data["meets_goal"] is True
        assert data["extracting"]["requests"] == 800
        assert "LLM requests" in format_table([cost.plain, cost.extracting, cost.cached])

    def test_rounds_alternate_and_summarise_as_median_and_range(self) -> None:
        assert run_order(1) == ("plain", "llm", "cached")
        assert run_order(2) == ("llm", "cached", "plain")
        costs = [
            IngestCost(
                plain=run("(a)", 30.0),
                extracting=run("(b)", 30.0 + extra, requests=800),
                cached=run("(c)", 31.0),
                answer_ms=100.0,
                concurrency=8,
            )
            for extra in (11.0, 14.0, 12.0)
        ]
        spread = {s.metric: s for s in cost_spread(costs)}
        ratio = spread["(b - a) / answer time"]
        assert (ratio.rounds, ratio.median, ratio.low, ratio.high) == (3, 1.2, 1.1, 1.4)
        assert spread["LLM requests of the re-ingests (c)"].high == 0
        assert "median" in format_table(list(spread.values()))
        none = IngestCost(
            plain=run("(a)", 30.0),
            extracting=run("(b)", 31.0),
            cached=run("(c)", 31.0),
            answer_ms=50.0,
            concurrency=8,
        )
        (empty,) = [s for s in cost_spread([none]) if s.metric == "(b - a) / answer time"]
        assert empty.rounds == 0
        assert json.loads(json.dumps(empty.to_dict()))["median"] is None

    def test_no_requests_is_no_ratio(self) -> None:
        cost = IngestCost(
            plain=run("(a)", 30.0),
            extracting=run("(b)", 31.0),
            cached=run("(c)", 31.0),
            answer_ms=50.0,
            concurrency=8,
        )
        assert cost.answer_s == 0.0
        assert math.isnan(cost.ratio)
        assert not cost.meets_goal
        assert json.loads(json.dumps(cost.to_dict()))["ratio"] is None


# -- the corpus -----------------------------------------------------------------------------------


class TestCorpus:
    def test_sample_corpus_chunks_and_their_documents(self, tmp_path: Path) -> None:
        settings = Settings(home=tmp_path)
        corpus = load_bench_corpus(settings, beir=None, chunks=3)
        assert corpus.name == "sample_corpus"
        assert len(corpus.texts) == 3
        assert 1 <= len(corpus.documents) <= 3
        assert all(d.content_type is not ContentType.IMAGE for d in corpus.documents)
        folder = corpus.write(tmp_path / "copy")
        copied = sorted(p.relative_to(folder) for p in folder.rglob("*") if p.is_file())
        assert len(copied) == len(corpus.documents)
        assert Path("README.md") in copied

    def test_beir_subset(self, tmp_path: Path) -> None:
        corpus = load_bench_corpus(
            Settings(home=tmp_path), beir=BEIR_FIXTURES / "hotpotqa-dev", chunks=5
        )
        assert corpus.beir
        assert len(corpus.texts) == 5
        folder = corpus.write(tmp_path / "sub")
        lines = (folder / "corpus.jsonl").read_text().splitlines()
        assert [json.loads(line)["_id"] for line in lines] == [d.id for d in corpus.documents]

    def test_bad_inputs(self, tmp_path: Path) -> None:
        settings = Settings(home=tmp_path)
        with pytest.raises(InputError, match="chunks"):
            load_bench_corpus(settings, beir=None, chunks=0)
        with pytest.raises(InputError, match="corpus"):
            load_bench_corpus(settings, beir=tmp_path / "missing", chunks=5)
        with pytest.raises(InputError, match="openai:"):
            measure_throughput(settings, "rules", ["x"], label="rules")


def test_throughput_against_the_server(server: ExtractionServer, tmp_path: Path) -> None:
    texts = [PASSAGE, "Qdrant is written in Rust by a team in Berlin.", "nothing capitalised"]
    settings = Settings(home=tmp_path)
    t = measure_throughput(settings, server.spec, texts, label="bench")
    assert (t.chunks, t.requests, t.failures) == (3, 6, 0)
    assert t.concurrency == settings.graph.extractor_concurrency
    sent = server.tally()
    assert sent.requests == 6
    assert (t.prompt_tokens, t.completion_tokens) == (sent.prompt_tokens, sent.completion_tokens)
    assert with_extractor(settings, server.spec).graph.extractor == server.spec
    assert with_extractor(settings, None).graph.extractor is None


# -- end to end on the session stack --------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.integration
def test_bench_run_on_a_few_chunks(
    ray_stack: Settings, graph_connection: object, tmp_path: Path
) -> None:
    from rayweave.graph.store import open_graph_store

    graph = open_graph_store(ray_stack, namespace="bench-extract-check")
    try:
        cached_before = graph.cached_extraction_count()
    finally:
        graph.close()
    out = tmp_path / "extract.json"
    result = run_extract_bench(ray_stack, chunks=3, answer_ms=10, json_path=out)

    assert result.throughput.chunks == 3
    assert result.throughput.requests == 6
    assert result.throughput.failures == 0
    (cost,) = result.costs
    assert cost.plain.requests == 0
    assert cost.plain.extraction_chunks == 0
    units = cost.extracting.extraction_chunks
    assert units >= 3
    assert cost.extracting.failed == 0
    assert cost.extracting.requests == 2 * units
    assert cost.cached.requests == 0  # every answer from the cache
    assert cost.cached.cached == units
    assert cost.cached.facts == cost.extracting.facts > 0
    assert cost.answer_s > 0
    data = json.loads(out.read_text())
    assert data["ingest"][0]["cached"]["requests"] == 0
    assert data["ingest_spread"][0]["rounds"] == 1
    assert data["warmup_s"] > 0  # one document ingested untimed first, its answers counted too
    assert data["server"]["requests"] > 6 + 2 * units

    graph = open_graph_store(ray_stack, namespace="bench-extract-check")
    try:
        assert graph.cached_extraction_count() == cached_before  # its answers forgotten
        left = graph.read("MATCH (n) WHERE n.ns STARTS WITH 'bench-extract-' RETURN count(n) AS n")
    finally:
        graph.close()
    assert left[0]["n"] == 0
