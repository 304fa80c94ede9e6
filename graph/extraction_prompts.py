"""The language-model extractor's prompts and a tolerant reader of its answers.

Two steps, as in HippoRAG: named entities first (`{"named_entities": [...]}`), then OpenIE
triples over the passage and those entities (`{"triples": [[s, p, o], ...]}`), each with one
worked example. Asked for topics (`graph.extractor_topics`), step 2 groups its triples as
graphrag-toolkit does (`{"topics": [{"topic": ..., "triples": [...]}]}`); the reader takes either
shape from any model, and a topic given per triple (a fourth string, a `"topic"` key) too.
Passages sit between `<passage>` tags rather than in a ``` fence, since chunks of documentation
often hold fenced code themselves.

Models, small ones above all, wrap JSON in fences, add chatter, run out of tokens mid-list,
return dicts instead of lists or leave parts empty. The parsers take what is usable, count what
is not, and raise `MalformedAnswer` only when nothing usable is there.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from rayweave.cluster.errors import ModelError

PROMPT_VERSION = "hipporag-2step-v1"
"""Part of an extraction's cache key: change it whenever a prompt changes what models answer."""
TOPIC_PROMPT_VERSION = "hipporag-2step-topics-v1"
"""The same for the prompt that groups triples by topic."""

Step = Literal["entities", "triples"]
Message = dict[str, str]
Triple = tuple[str, str, str]

ENTITY_KEY = "named_entities"
TRIPLE_KEY = "triples"
TOPIC_KEY = "topics"

ENTITY_SYSTEM = """You list the named entities of a passage.
Named entities are the proper names in it: people, organisations, places, products, software \
projects, libraries, services, APIs, file formats, standards, versions and dates.
Answer with one JSON object of the form {"named_entities": ["...", "..."]} and nothing else."""

TRIPLES_SYSTEM = """You turn a passage into a small knowledge graph.
You get the passage and the named entities already found in it. Answer with one JSON object of \
the form {"triples": [["subject", "predicate", "object"], ...]} and nothing else.
Rules:
- Every triple is a list of exactly three non-empty strings.
- Each triple names at least one of the listed entities, and preferably two.
- Replace pronouns and phrases such as "it" or "the library" with the names they stand for.
- Keep predicates short verb phrases taken from the passage."""

TOPIC_TRIPLES_SYSTEM = (
    TRIPLES_SYSTEM.replace(
        '{"triples": [["subject", "predicate", "object"], ...]}',
        '{"topics": [{"topic": "...", "triples": [["subject", "predicate", "object"], ...]}, ...]}',
    ).replace("a small knowledge graph.", "a small knowledge graph, grouped by topic.")
    + "\n- A topic is a short noun phrase naming what its triples are about: one per aspect of "
    "the passage, each triple under one topic."
)

_PASSAGE_FRAME = "<passage>\n{passage}\n</passage>"
_TRIPLES_FRAME = (
    "Read the passage and the named entities found in it, then give its triples.\n\n"
    "<passage>\n{passage}\n</passage>\n\n{entities}"
)

EXAMPLE_PASSAGE = """Qdrant
Qdrant is an open-source vector database written in Rust. Its first public release came out \
in 2021, built by a team in Berlin. Qdrant keeps dense and sparse vectors side by side, and \
through its Python client both LangChain and LlamaIndex can use it as a retriever."""

EXAMPLE_ENTITIES = ("Qdrant", "Rust", "2021", "Berlin", "Python", "LangChain", "LlamaIndex")

EXAMPLE_TRIPLES: tuple[Triple, ...] = (
    ("Qdrant", "is", "open-source vector database"),
    ("Qdrant", "is written in", "Rust"),
    ("Qdrant", "was first released in", "2021"),
    ("Qdrant", "was built in", "Berlin"),
    ("Qdrant", "keeps", "dense vectors"),
    ("Qdrant", "keeps", "sparse vectors"),
    ("Qdrant", "has a client in", "Python"),
    ("LangChain", "uses as a retriever", "Qdrant"),
    ("LlamaIndex", "uses as a retriever", "Qdrant"),
)

EXAMPLE_TOPICS: tuple[tuple[str, tuple[Triple, ...]], ...] = (
    ("Qdrant's origins", EXAMPLE_TRIPLES[:4]),
    ("Qdrant's vectors", EXAMPLE_TRIPLES[4:6]),
    ("Qdrant's integrations", EXAMPLE_TRIPLES[6:]),
)


def entities_json(names: Sequence[str]) -> str:
    """The step-1 answer format, also how step 2 is told the entities."""
    return json.dumps({ENTITY_KEY: list(names)}, ensure_ascii=False)


def triples_json(triples: Sequence[Sequence[str]]) -> str:
    return json.dumps({TRIPLE_KEY: [list(t) for t in triples]}, ensure_ascii=False)


def topics_json(groups: Sequence[tuple[str, Sequence[Sequence[str]]]]) -> str:
    """The grouped step-2 answer format."""
    return json.dumps(
        {TOPIC_KEY: [{"topic": t, TRIPLE_KEY: [list(x) for x in ts]} for t, ts in groups]},
        ensure_ascii=False,
    )


def entity_messages(passage: str) -> list[Message]:
    """Step 1: system rules, the worked example, then the passage."""
    return [
        {"role": "system", "content": ENTITY_SYSTEM},
        {"role": "user", "content": _PASSAGE_FRAME.format(passage=EXAMPLE_PASSAGE)},
        {"role": "assistant", "content": entities_json(EXAMPLE_ENTITIES)},
        {"role": "user", "content": _PASSAGE_FRAME.format(passage=passage)},
    ]


def triple_messages(
    passage: str, entities: Sequence[str], *, topics: bool = False
) -> list[Message]:
    """Step 2: system rules, the worked example, then the passage with its step-1 entities
    (`topics`: the triples grouped by topic)."""
    example = _TRIPLES_FRAME.format(
        passage=EXAMPLE_PASSAGE, entities=entities_json(EXAMPLE_ENTITIES)
    )
    system, answer = (
        (TOPIC_TRIPLES_SYSTEM, topics_json(EXAMPLE_TOPICS))
        if topics
        else (TRIPLES_SYSTEM, triples_json(EXAMPLE_TRIPLES))
    )
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": example},
        {"role": "assistant", "content": answer},
        {
            "role": "user",
            "content": _TRIPLES_FRAME.format(passage=passage, entities=entities_json(entities)),
        },
    ]


def passage_of(content: str) -> str:
    """The passage inside a step's user message (what an endpoint double keys its answers on);
    the whole content when it has no `<passage>` tags."""
    start = content.find("<passage>\n")
    end = content.rfind("\n</passage>")
    if start < 0 or end < start:
        return content
    return content[start + len("<passage>\n") : end]


class MalformedAnswer(ModelError):
    """A model ran but its answer holds nothing usable for the step; the message quotes the start
    of it. A `ModelError`, so callers that handle model failures handle this one too."""


@dataclass(frozen=True, slots=True)
class ParseLimits:
    """Bounds on what one answer may contribute: a runaway or looping model cannot flood the
    graph with hundreds of names or paragraph-long 'entities'."""

    max_items: int = 64
    max_chars: int = 100


DEFAULT_LIMITS = ParseLimits()


@dataclass(frozen=True, slots=True, kw_only=True)
class NamedEntity:
    name: str
    kind: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedEntities:
    entities: tuple[NamedEntity, ...]
    dropped: int = 0
    salvaged: bool = False

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(e.name for e in self.entities)


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedTriples:
    """`topics`: the topic the model put a triple under, where it gave one. `dropped`: triples
    left out (wrong arity or shape, empty parts, subject equal to object, duplicates are not
    counted, over the item limit). `salvaged`: the JSON was cut short and the complete triples
    before the cut were kept."""

    triples: tuple[Triple, ...]
    topics: Mapping[Triple, str] = field(default_factory=dict)
    dropped: int = 0
    salvaged: bool = False


_FENCE_OPEN = re.compile(r"^\s*```[A-Za-z0-9_-]*[ \t]*\n?")
_FENCE_CLOSE = re.compile(r"\n?```\s*$")
_SPACES = re.compile(r"\s+")
_KIND = re.compile(r"[^a-z0-9]+")
_DECODER = json.JSONDecoder()
_T = TypeVar("_T")

_SUBJECT_KEYS = ("subject", "head", "source", "s")
_PREDICATE_KEYS = ("predicate", "relation", "relationship", "p")
_OBJECT_KEYS = ("object", "tail", "target", "o")
_NAME_KEYS = ("name", "entity", "text")
_TYPE_KEYS = ("type", "kind", "label")


def strip_fences(text: str) -> str:
    """The body of the first ``` fenced block (or of an unclosed one a token limit cut), else the
    text unchanged."""
    start = text.find("```")
    if start < 0:
        return text.strip()
    body = _FENCE_OPEN.sub("", text[start:], count=1)
    end = body.find("```")
    return (body if end < 0 else body[:end]).strip()


def _decoded(text: str, opener: str) -> Iterator[tuple[Any, int, int]]:
    """(value, start, end) of every JSON value that decodes from an `opener` position."""
    pos = text.find(opener)
    while pos >= 0:
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except ValueError:
            pass
        else:
            yield value, pos, end
        pos = text.find(opener, pos + 1)


def find_json_object(text: str, key: str | None = None) -> dict[str, Any] | None:
    """The first JSON object in `text` that has `key` (any object when `key` is None), skipping
    chatter before and after it; None when there is none."""
    for value, _, _ in _decoded(text, "{"):
        if isinstance(value, dict) and (key is None or key in value):
            return value
    return None


def _salvage(text: str, key: str) -> list[Any] | None:
    """The complete items of a `"key": [...]` list cut short (a token limit mid-answer)."""
    found = re.search(rf'"{re.escape(key)}"\s*:\s*\[', text)
    if found is None:
        return None
    items: list[Any] = []
    pos = found.end()
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        try:
            value, pos = _DECODER.raw_decode(text, pos)
        except ValueError:
            return items
        items.append(value)


def _items(answer: str, key: str) -> tuple[list[Any], bool]:
    """The answer's `key` list and whether it was salvaged from a cut-short answer. The fenced
    body is read first, then the whole answer (the JSON may sit outside an echoed code fence)."""
    if not answer.strip():
        raise MalformedAnswer("empty answer")
    bodies = dict.fromkeys((strip_fences(answer), answer.strip()))
    for body in bodies:
        obj = find_json_object(body, key)
        if obj is None:
            continue
        value = obj[key]
        if not isinstance(value, list):
            raise MalformedAnswer(
                f'"{key}" is a {type(value).__name__}, not a list: {_quote(body)}'
            )
        return value, False
    for body in bodies:
        if body.startswith("["):  # a bare list, the wrapping object left out
            with contextlib.suppress(ValueError):
                value, _ = _DECODER.raw_decode(body)
                if isinstance(value, list):
                    return value, False
        salvaged = _salvage(body, key)
        if salvaged:
            return salvaged, True
    if find_json_object(answer) is not None:
        raise MalformedAnswer(f'JSON object without a "{key}" list: {_quote(answer)}')
    raise MalformedAnswer(f"no JSON object in the answer: {_quote(answer)}")


def _quote(text: str, limit: int = 120) -> str:
    flat = _SPACES.sub(" ", text).strip()
    return repr(flat if len(flat) <= limit else flat[:limit] + "…")


def clean_part(value: object, max_chars: int) -> str:
    """One name or predicate: scalars as text, whitespace collapsed, cut at a word boundary to
    `max_chars`; '' when unusable (empty, a container, null, a boolean)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return ""
    text = _SPACES.sub(" ", str(value)).strip().strip("\"'`")
    if len(text) > max_chars:
        cut = text[: max_chars + 1].rsplit(" ", 1)[0]
        text = (cut if 0 < len(cut) <= max_chars else text[:max_chars]).rstrip(" ,;:")
    return text.strip()


def clean_kind(value: object) -> str | None:
    """A model-given entity type as a kind (`Person` -> `person`, `Software Library` ->
    `software_library`); None when absent or unusable."""
    if not isinstance(value, str):
        return None
    kind = _KIND.sub("_", value.strip().lower()).strip("_")[:32]
    return kind or None


def _first(item: Mapping[str, Any], keys: Sequence[str]) -> object:
    return next((item[k] for k in keys if k in item), None)


def _entity_of(item: object, limits: ParseLimits) -> NamedEntity | None:
    if isinstance(item, Mapping):
        name = clean_part(_first(item, _NAME_KEYS), limits.max_chars)
        return NamedEntity(name=name, kind=clean_kind(_first(item, _TYPE_KEYS))) if name else None
    name = clean_part(item, limits.max_chars)
    return NamedEntity(name=name) if name else None


def _triple_of(tagged: object, limits: ParseLimits) -> tuple[Triple, str] | None:
    """A (triple, topic) from an (item, its group's topic) pair; '' for no topic."""
    item, topic = tagged if isinstance(tagged, tuple) else (None, "")
    if isinstance(item, Mapping):
        raw: Sequence[object] = [
            _first(item, keys) for keys in (_SUBJECT_KEYS, _PREDICATE_KEYS, _OBJECT_KEYS)
        ]
        own: object = item.get("topic")
    elif isinstance(item, list | tuple) and len(item) in (3, 4):
        raw, own = item[:3], item[3] if len(item) == 4 else None
    else:
        return None
    s, p, o = (clean_part(part, limits.max_chars) for part in raw)
    if not (s and p and o) or s.casefold() == o.casefold():
        return None
    return (s, p, o), clean_part(own, limits.max_chars) or str(topic)


def _groups(value: object) -> list[tuple[object, object]]:
    """(topic, triples) of a "topics" value: a list of `{"topic", "triples"}`, or a mapping."""
    if isinstance(value, Mapping):
        return list(value.items())
    if isinstance(value, list):
        return [(g.get("topic"), g.get(TRIPLE_KEY)) for g in value if isinstance(g, Mapping)]
    return []


def _grouped(answer: str, limits: ParseLimits) -> list[tuple[object, str]] | None:
    """The triples of a grouped answer (`{"topics": [{"topic", "triples"}]}` or `{"topics":
    {topic: [...]}}`), each with its group's topic; None when the answer is not grouped."""
    for body in dict.fromkeys((strip_fences(answer), answer.strip())):
        obj = find_json_object(body, TOPIC_KEY)
        if obj is None or TRIPLE_KEY in obj:
            continue
        items = [
            (item, clean_part(topic, limits.max_chars))
            for topic, triples in _groups(obj[TOPIC_KEY])
            if isinstance(triples, list)
            for item in triples
        ]
        if items:
            return items
    return None


def _collect(
    items: Sequence[object],
    read: Callable[[object, ParseLimits], _T | None],
    key: Callable[[_T], object],
    limits: ParseLimits,
) -> tuple[tuple[_T, ...], int]:
    """Items `read` accepts, first of each `key` kept, at most `limits.max_items`; and how many
    were dropped (unreadable or over the limit; duplicates are not counted)."""
    kept: dict[object, _T] = {}
    dropped = 0
    for item in items:
        value = read(item, limits)
        if value is None:
            dropped += 1
            continue
        k = key(value)
        if k in kept:
            continue
        if len(kept) >= limits.max_items:
            dropped += 1
            continue
        kept[k] = value
    return tuple(kept.values()), dropped


def parse_entities(answer: str, limits: ParseLimits = DEFAULT_LIMITS) -> ParsedEntities:
    """Step 1's answer: names (strings, numbers, or `{"name", "type"}` dicts), deduplicated
    case-insensitively in first-seen order. Raises `MalformedAnswer`."""
    items, salvaged = _items(answer, ENTITY_KEY)
    entities, dropped = _collect(items, _entity_of, lambda e: e.name.casefold(), limits)
    return ParsedEntities(entities=entities, dropped=dropped, salvaged=salvaged)


def parse_triples(answer: str, limits: ParseLimits = DEFAULT_LIMITS) -> ParsedTriples:
    """Step 2's answer: `[s, p, o]` lists or `{"subject", "predicate", "object"}` dicts, flat
    or grouped by topic, deduplicated case-insensitively in first-seen order (a repeat's topic
    is the first one's). Raises `MalformedAnswer`."""
    items: Sequence[object] | None = _grouped(answer, limits)
    salvaged = False
    if items is None:
        flat, salvaged = _items(answer, TRIPLE_KEY)
        items = [(item, "") for item in flat]
    kept, dropped = _collect(
        items, _triple_of, lambda t: tuple(part.casefold() for part in t[0]), limits
    )
    return ParsedTriples(
        triples=tuple(t for t, _ in kept),
        topics={t: topic for t, topic in kept if topic},
        dropped=dropped,
        salvaged=salvaged,
    )
