"""A `GraphExtractor` over a chat model: HippoRAG's named entities, then OpenIE triples.

Each text costs two calls (`graph.extraction_prompts`); an endpoint gets up to `concurrency` texts
in flight from a thread pool, a local model the whole batch at once, decoded `batch_size`
conversations per `generate` call (`models.llm.LocalCausalLM.complete_many`).
Whatever goes wrong with one text (the endpoint's errors after its retries, a timeout, an empty
or unreadable answer) becomes that text's `Extraction(error=...)` naming the step and the cause,
so an ingest counts it and goes on. `build_extractor` turns the `graph.extractor` setting into
one; `file:` and `rules` extractors are the caller's to build.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from typing import Literal, Protocol, TypeVar

from rayweave.cluster.errors import ConfigError, ModelError
from rayweave.cluster.types import Entity
from rayweave.graph.extraction import Extraction, Statement
from rayweave.graph.extraction_prompts import (
    DEFAULT_LIMITS,
    MalformedAnswer,
    ParsedEntities,
    ParsedTriples,
    ParseLimits,
    Step,
    entity_messages,
    parse_entities,
    parse_triples,
    triple_messages,
)
from rayweave.graph.names import entity_id, normalize_name
from rayweave.models.llm import (
    OPENAI_PREFIX,
    BatchChatModel,
    Completion,
    Messages,
    ResponseFormat,
    UsageChatModel,
    parse_openai_ref,
)
from rayweave.models.precision import ExecutionPlan

log = logging.getLogger(__name__)

ExtractorKind = Literal["openai", "local", "file", "rules"]
_KINDS: dict[str, ExtractorKind] = {"openai": "openai", "local": "local", "file": "file"}
VALID_FORMS = (
    "'openai:<base_url>#<model>', 'local:<model ref>' (a folder, hub id, .gguf file or "
    "package:<module>/<path>), 'file:<path>' or 'rules'"
)
_T = TypeVar("_T")


class ChatCompleter(Protocol):
    """What the extractor needs of a model: `models.llm`'s clients, or any test double."""

    def complete(
        self, messages: Messages, *, max_tokens: int = 256, temperature: float = 0.0
    ) -> str: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtractionStats:
    """Counts for a bench: texts and failed texts, model calls and failed calls, token usage
    (summed over the `usage_calls` whose endpoint reported it), triples the parser dropped, and
    wall time spent in `extract`."""

    texts: int = 0
    failures: int = 0
    calls: int = 0
    failed_calls: int = 0
    usage_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    dropped_triples: int = 0
    elapsed_s: float = 0.0

    def __add__(self, other: ExtractionStats) -> ExtractionStats:
        return ExtractionStats(
            **{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)}
        )

    @property
    def tokens_per_s(self) -> float:
        """Prompt plus completion tokens per second of `extract` wall time (0 when unknown)."""
        total = self.prompt_tokens + self.completion_tokens
        return total / self.elapsed_s if self.elapsed_s > 0 else 0.0


class _StepFailed(Exception):
    """Internal: one step of one text failed; the message becomes `Extraction.error`."""


def _call_failure(step: Step, exc: Exception) -> str:
    """The failed texts' message for a model call that raised. Any error of the model's own (a
    CUDA OOM, a client library's) fails the texts of that call only."""
    if isinstance(exc, ModelError):
        return f"{step} step: model call failed: {exc}"
    log.warning("LLM extraction %s step raised", step, exc_info=exc)
    return f"{step} step: model call raised {type(exc).__name__}: {exc}"


def parse_extractor_spec(spec: str) -> tuple[ExtractorKind, str]:
    """`graph.extractor` -> (kind, target): `openai:<url>#<model>` -> ('openai', '<url>#<model>'),
    `local:<ref>` -> ('local', '<ref>'), `file:<path>` -> ('file', '<path>'), `rules` ->
    ('rules', ''). A bare model reference (a path, a `.gguf` file, a hub id, `package:...`) is
    'local'; any other `scheme:` prefix raises `ConfigError` naming the valid forms."""
    text = spec.strip()
    if not text:
        raise ConfigError(f"empty extractor setting; valid forms: {VALID_FORMS}")
    if text == "rules":
        return "rules", ""
    prefix, sep, rest = text.partition(":")
    kind = _KINDS.get(prefix) if sep else None
    if kind is not None:
        target = rest.strip()
        if not target:
            raise ConfigError(f"extractor {spec!r} is malformed; valid forms: {VALID_FORMS}")
        if kind == "openai":
            parse_openai_ref(OPENAI_PREFIX + target)  # raises ConfigError on a bad URL or model
        return kind, target
    # `package:` is a model reference; one letter is a Windows drive.
    if sep and prefix != "package" and prefix.isalpha() and len(prefix) > 1:
        raise ConfigError(f"unknown extractor {spec!r}; valid forms: {VALID_FORMS}")
    return "local", text


def extraction_of(
    entities: ParsedEntities, triples: ParsedTriples, *, confidence: float = 0.7
) -> tuple[Extraction, int]:
    """The `Extraction` of both steps' answers, and how many triples could not be kept (a part
    with nothing left after name normalisation). Step-1 entities keep the model's type (else
    'concept'); triple subjects and objects not among them join as concepts; surface forms that
    normalise to one name become one entity with the others as aliases."""
    names: dict[str, tuple[str, str, list[str]]] = {}

    def add(surface: str, norm: str, kind: str) -> None:
        if norm not in names:
            names[norm] = (surface, kind, [])
        elif surface != names[norm][0] and surface not in names[norm][2]:
            names[norm][2].append(surface)

    for ent in entities.entities:
        if norm := normalize_name(ent.name):
            add(ent.name, norm, ent.kind or "concept")
    statements: list[Statement] = []
    dropped = 0
    for s, p, o in triples.triples:
        s_norm, o_norm = normalize_name(s), normalize_name(o)
        if not (s_norm and o_norm):
            dropped += 1
            continue
        add(s, s_norm, "concept")
        add(o, o_norm, "concept")
        statements.append(
            Statement(
                subject=s,
                predicate=p,
                object=o,
                confidence=confidence,
                topic=triples.topics.get((s, p, o)),
            )
        )
    rows = tuple(
        Entity(id=entity_id(norm), name=name, kind=kind, aliases=tuple(aliases))
        for norm, (name, kind, aliases) in names.items()
    )
    return Extraction(entities=rows, statements=tuple(statements)), dropped


class LLMExtractor:
    """HippoRAG's two-step extraction over `chat` (see the module docstring). `stats` adds up
    every `extract` call; `response_format='json'` asks endpoints for JSON mode; `topics` asks
    for triples grouped by topic, kept on their statements."""

    def __init__(
        self,
        chat: ChatCompleter,
        *,
        concurrency: int = 4,
        max_tokens: int = 512,
        temperature: float = 0.0,
        response_format: ResponseFormat = "text",
        confidence: float = 0.7,
        limits: ParseLimits = DEFAULT_LIMITS,
        topics: bool = False,
    ) -> None:
        if concurrency < 1:
            raise ConfigError(f"extractor concurrency must be at least 1, got {concurrency}")
        self.chat = chat
        self.concurrency = concurrency
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.response_format: ResponseFormat = response_format
        self.confidence = confidence
        self.limits = limits
        self.topics = topics
        self._stats = ExtractionStats()
        self._lock = threading.Lock()

    @property
    def stats(self) -> ExtractionStats:
        return self._stats

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        """One `Extraction` per text, in order; never raises for a text's failure."""
        start = time.perf_counter()
        workers = min(self.concurrency, len(texts))
        if isinstance(self.chat, BatchChatModel):
            results = self._extract_batched(self.chat, texts)
        elif workers <= 1:
            results = [self.extract_one(t) for t in texts]
        else:
            with ThreadPoolExecutor(workers, thread_name_prefix="llm-extract") as pool:
                results = list(pool.map(self.extract_one, texts))
        extractions = [ext for ext, _ in results]
        total = sum((st for _, st in results), ExtractionStats())
        with self._lock:
            self._stats += total + ExtractionStats(elapsed_s=time.perf_counter() - start)
        return extractions

    def extract_one(self, text: str) -> tuple[Extraction, ExtractionStats]:
        """One text's extraction and its own counts (not added to `stats`)."""
        tally: list[ExtractionStats] = []
        if not text.strip():
            return Extraction(), ExtractionStats(texts=1)
        try:
            entities = self._step("entities", entity_messages(text), parse_entities, tally)
            triples = self._step(
                "triples",
                triple_messages(text, entities.names, topics=self.topics),
                parse_triples,
                tally,
            )
        except _StepFailed as exc:
            return Extraction(error=str(exc)), sum(tally, ExtractionStats(texts=1, failures=1))
        return self._assembled(entities, triples, tally)

    def _extract_batched(
        self, chat: BatchChatModel, texts: Sequence[str]
    ) -> list[tuple[Extraction, ExtractionStats]]:
        """`extract_one` for every text, each step one `complete_many` over the texts still
        going: the entity step for all, then the triple step for those whose entities came."""
        tallies: list[list[ExtractionStats]] = [[] for _ in texts]
        failed: dict[int, str] = {}
        live = [i for i, text in enumerate(texts) if text.strip()]
        entities = self._batch_step(
            chat,
            "entities",
            {i: entity_messages(texts[i]) for i in live},
            parse_entities,
            tallies,
            failed,
        )
        triples = self._batch_step(
            chat,
            "triples",
            {
                i: triple_messages(texts[i], named.names, topics=self.topics)
                for i, named in entities.items()
            },
            parse_triples,
            tallies,
            failed,
        )
        results: list[tuple[Extraction, ExtractionStats]] = []
        for i in range(len(texts)):
            if i in failed:
                failure = ExtractionStats(texts=1, failures=1)
                results.append((Extraction(error=failed[i]), sum(tallies[i], failure)))
            elif i in triples:
                results.append(self._assembled(entities[i], triples[i], tallies[i]))
            else:
                results.append((Extraction(), ExtractionStats(texts=1)))
        return results

    def _batch_step(
        self,
        chat: BatchChatModel,
        step: Step,
        conversations: dict[int, Messages],
        parse: Callable[[str, ParseLimits], _T],
        tallies: list[list[ExtractionStats]],
        failed: dict[int, str],
    ) -> dict[int, _T]:
        """One step for many texts (keyed by their index); a failed call fails every text in it."""
        if not conversations:
            return {}
        keys = list(conversations)
        try:
            completions = chat.complete_many(
                [conversations[i] for i in keys],
                max_tokens=self.max_tokens,
                temperature=self.temperature,
            )
        except Exception as exc:  # noqa: BLE001  (any model error fails this call's texts only)
            message = _call_failure(step, exc)
            for i in keys:
                tallies[i].append(ExtractionStats(calls=1, failed_calls=1))
                failed[i] = message
            return {}
        parsed: dict[int, _T] = {}
        for i, completion in zip(keys, completions, strict=True):
            try:
                parsed[i] = self._parsed(step, completion, parse, tallies[i])
            except _StepFailed as exc:
                failed[i] = str(exc)
        return parsed

    def _assembled(
        self, entities: ParsedEntities, triples: ParsedTriples, tally: list[ExtractionStats]
    ) -> tuple[Extraction, ExtractionStats]:
        extraction, unnamed = extraction_of(entities, triples, confidence=self.confidence)
        dropped = ExtractionStats(texts=1, dropped_triples=triples.dropped + unnamed)
        return extraction, sum(tally, dropped)

    def _step(
        self,
        step: Step,
        messages: Messages,
        parse: Callable[[str, ParseLimits], _T],
        tally: list[ExtractionStats],
    ) -> _T:
        """One call and its parse; failures raise `_StepFailed` naming the step and the cause."""
        try:
            completion = self._complete(messages)
        except Exception as exc:
            tally.append(ExtractionStats(calls=1, failed_calls=1))
            raise _StepFailed(_call_failure(step, exc)) from exc
        return self._parsed(step, completion, parse, tally)

    def _parsed(
        self,
        step: Step,
        completion: Completion,
        parse: Callable[[str, ParseLimits], _T],
        tally: list[ExtractionStats],
    ) -> _T:
        """Count one answered call and read it; an empty or unreadable answer raises
        `_StepFailed`."""
        reported = completion.prompt_tokens is not None or completion.completion_tokens is not None
        tally.append(
            ExtractionStats(
                calls=1,
                usage_calls=int(reported),
                prompt_tokens=completion.prompt_tokens or 0,
                completion_tokens=completion.completion_tokens or 0,
            )
        )
        if not completion.text.strip():
            raise _StepFailed(f"{step} step: the model gave an empty answer")
        try:
            return parse(completion.text, self.limits)
        except MalformedAnswer as exc:
            raise _StepFailed(f"{step} step: malformed answer: {exc}") from exc

    def _complete(self, messages: Messages) -> Completion:
        if isinstance(self.chat, UsageChatModel):
            return self.chat.complete_with_usage(
                messages,
                max_tokens=self.max_tokens,
                temperature=self.temperature,
                response_format=self.response_format,
            )
        text = self.chat.complete(
            messages, max_tokens=self.max_tokens, temperature=self.temperature
        )
        return Completion(text=text)

    def close(self) -> None:
        """Close the model's connection pool, when it has one."""
        close = getattr(self.chat, "close", None)
        if callable(close):
            close()


def build_extractor(
    spec: str,
    *,
    api_key: str | None = None,
    concurrency: int = 8,
    timeout_s: float = 60.0,
    retries: int = 3,
    max_tokens: int = 512,
    plan: ExecutionPlan | None = None,
    response_format: ResponseFormat = "text",
    topics: bool = False,
    batch_size: int = 1,
) -> LLMExtractor:
    """The language-model extractor `spec` (`graph.extractor`) names. `openai:` gets an
    `OpenAIChatModel` with `concurrency` requests in flight; `local:` loads the causal LM once,
    on `plan` (None: the GPU in fp16 when present, else the CPU in fp32), and decodes `batch_size`
    texts per step together; `topics`: triples grouped by topic. `file:` and `rules` raise
    `ConfigError`: they need no model and the caller builds them.
    """
    from rayweave.models.llm import OpenAIChatModel, load_local_causal_lm

    kind, target = parse_extractor_spec(spec)
    if kind == "openai":
        endpoint = parse_openai_ref(OPENAI_PREFIX + target)
        chat = OpenAIChatModel(
            base_url=endpoint.base_url,
            model=endpoint.model,
            api_key=api_key,
            timeout_s=timeout_s,
            retries=retries,
        )
        return LLMExtractor(
            chat,
            concurrency=concurrency,
            max_tokens=max_tokens,
            response_format=response_format,
            topics=topics,
        )
    if kind == "local":
        if plan is None:
            from rayweave.models.precision import plan_execution

            plan = plan_execution(device="auto", precision="fp16")
        return LLMExtractor(
            load_local_causal_lm(target, plan, batch_size=batch_size),
            concurrency=1,
            max_tokens=max_tokens,
            response_format=response_format,
            topics=topics,
        )
    raise ConfigError(
        f"extractor {spec!r} is a {kind!r} extractor: it needs no language model and is built by "
        "the caller (build_extractor takes 'openai:' and 'local:' only)"
    )
