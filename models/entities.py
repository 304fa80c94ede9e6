"""Entities mentioned in prose: spaCy named entities and noun chunks, or cheap rules without spaCy.

Each text yields a list of `Entity(id, name, kind)` with a *provisional* id (the case-folded,
whitespace-normalised surface form); the graph builders resolve aliases and assign canonical ids.
Kinds are spaCy's NER labels in lower case (`org`, `person`, `product`, ...), `concept` for noun
phrases and capitalised terms, and `symbol` for code-like tokens in prose (`get_user_name`,
`np.linalg.norm`, backticked spans). Code itself is handled by `rayweave.ingest.code`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from rayweave.cluster.errors import MissingExtraError, ModelError
from rayweave.cluster.types import Entity
from rayweave.models.resolve import resolve_model

log = logging.getLogger(__name__)

# Numbers, dates and amounts are attributes, not things to link documents through.
NUMERIC_LABELS = frozenset({"CARDINAL", "ORDINAL", "DATE", "TIME", "PERCENT", "MONEY", "QUANTITY"})
_MAX_CHARS = 100_000  # a section is far smaller; this only bounds pathological inputs
_MAX_PHRASE_TOKENS = 6

_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "this",
        "that",
        "these",
        "those",
        "it",
        "its",
        "they",
        "them",
        "their",
        "we",
        "our",
        "you",
        "your",
        "he",
        "she",
        "his",
        "her",
        "i",
        "me",
        "my",
        "which",
        "who",
        "whom",
        "whose",
        "what",
        "there",
        "here",
        "some",
        "any",
        "each",
        "every",
        "all",
        "both",
        "either",
        "neither",
        "no",
        "not",
        "one",
        "other",
        "such",
        "same",
        "own",
        "more",
        "most",
        "many",
        "much",
        "few",
        "several",
        "something",
        "anything",
        "nothing",
        "everything",
    ]
)
_LEADING_DROP_POS = {"DET", "PRON", "PUNCT", "CCONJ", "ADP", "PART", "SYM"}
_BACKTICKED = re.compile(r"`([^`\n]{1,80})`")
_IDENTIFIER = re.compile(
    r"\b(?:[A-Za-z_][A-Za-z0-9_]*\.)+[A-Za-z_][A-Za-z0-9_]*\b"  # dotted.path
    r"|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b"  # snake_case
    r"|\b[a-z]+[A-Z][A-Za-z0-9]*\b"  # camelCase
    r"|\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b"  # CamelCase
)
_ACRONYM = re.compile(r"\b[A-Z][A-Z0-9]{1,7}s?\b")
_CAPITALISED_RUN = re.compile(r"\b[A-Z][\w-]*(?:\s+(?:of\s+|de\s+|the\s+)?[A-Z][\w-]*)+")
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+|\n\s*)$")


def entity_id(name: str) -> str:
    """The provisional id: case-folded with whitespace collapsed."""
    return " ".join(name.split()).casefold()


def _clean(surface: str) -> str:
    text = " ".join(surface.replace("`", " ").split())
    text = re.sub(r"'s$|’s$", "", text)
    text = re.sub(r"^(?:the|a|an)\s+", "", text, flags=re.IGNORECASE)
    return text.strip(" .,;:!?\"'()[]{}")


class _Collector:
    """Per-text entities in first-seen order; a stronger kind replaces a weaker one for one id."""

    _RANK: ClassVar[dict[str, int]] = {"concept": 0, "symbol": 1}

    def __init__(self) -> None:
        self.items: dict[str, Entity] = {}

    def add(self, surface: str, kind: str) -> None:
        name = _clean(surface)
        if len(name) < 2 or not any(c.isalnum() for c in name):
            return
        if name.casefold() in _STOP:
            return
        key = entity_id(name)
        old = self.items.get(key)
        if old is None or self._RANK.get(kind, 2) > self._RANK.get(old.kind, 2):
            self.items[key] = Entity(id=key, name=name, kind=kind)

    def result(self) -> list[Entity]:
        return list(self.items.values())


def _add_symbols(text: str, out: _Collector) -> None:
    for match in _BACKTICKED.finditer(text):
        out.add(match.group(1), "symbol")
    for match in _IDENTIFIER.finditer(text):
        out.add(match.group(0), "symbol")


class RuleEntityExtractor:
    """No model: code-like identifiers, acronyms and runs of capitalised words.

    Meant for `ner=None` and for non-English text: it finds the proper nouns and symbols that
    link technical documents, at a fraction of spaCy's cost, with no labels beyond concept/symbol.
    """

    def extract(self, texts: Sequence[str], *, language: str | None = None) -> list[list[Entity]]:
        if isinstance(texts, str):
            raise TypeError("expected a sequence of texts, got one string; wrap it in a list")
        return [self._extract_one(t[:_MAX_CHARS]) for t in texts]

    @staticmethod
    def _extract_one(text: str) -> list[Entity]:
        out = _Collector()
        _add_symbols(text, out)
        covered: list[tuple[int, int]] = []
        for match in _CAPITALISED_RUN.finditer(text):
            out.add(match.group(0), "concept")
            covered.append(match.span())

        def inside(start: int) -> bool:
            return any(a <= start < b for a, b in covered)

        for match in _ACRONYM.finditer(text):
            if not inside(match.start()):
                out.add(match.group(0), "concept")
        # A lone capitalised word counts only mid-sentence (sentence-initial ones are ordinary
        # words).
        for match in re.finditer(r"\b[A-Z][a-z][\w-]+\b", text):
            if not inside(match.start()) and not _SENTENCE_START.search(text[: match.start()]):
                out.add(match.group(0), "concept")
        return out.result()


_LONG_TOKEN = re.compile(r"\S{64,}")


def ner_text(text: str) -> str:
    """What the NER pipeline sees: at most `_MAX_CHARS`, and no whitespace-free run of 64+
    characters. Such runs hold no entities, and spaCy's tokenizer peels affixes off them one
    character at a time: a 64 KB run of '#' took minutes."""
    return _LONG_TOKEN.sub(" ", text[:_MAX_CHARS])


class SpacyEntityExtractor:
    """spaCy NER (minus numeric labels) plus cleaned noun chunks, plus code-like symbols."""

    def __init__(
        self,
        nlp: Any,
        *,
        skip_labels: Iterable[str] = NUMERIC_LABELS,
        batch_size: int = 64,
        fallback: RuleEntityExtractor | None = None,
    ) -> None:
        self.nlp = nlp
        self.skip_labels = frozenset(skip_labels)
        self.batch_size = batch_size
        self.fallback = fallback or RuleEntityExtractor()
        self.has_parser = "parser" in nlp.pipe_names

    def extract(self, texts: Sequence[str], *, language: str | None = None) -> list[list[Entity]]:
        """`language` is the texts' natural language when known; the English pipeline is not
        applied to another language (rules are), since its labels would be noise there."""
        if isinstance(texts, str):
            raise TypeError("expected a sequence of texts, got one string; wrap it in a list")
        if language is not None and not language.lower().startswith("en"):
            return self.fallback.extract(texts, language=language)
        docs = self.nlp.pipe((ner_text(t) for t in texts), batch_size=self.batch_size)
        return [self._from_doc(doc) for doc in docs]

    def _from_doc(self, doc: Any) -> list[Entity]:
        out = _Collector()
        for ent in doc.ents:
            if ent.label_ not in self.skip_labels:
                out.add(ent.text, ent.label_.lower())
        if self.has_parser:
            for chunk in doc.noun_chunks:
                tokens = list(chunk)
                while tokens and (tokens[0].pos_ in _LEADING_DROP_POS or tokens[0].lower_ in _STOP):
                    tokens.pop(0)
                while tokens and tokens[-1].pos_ == "PUNCT":
                    tokens.pop()
                if (
                    not tokens
                    or len(tokens) > _MAX_PHRASE_TOKENS
                    or all(t.pos_ == "PRON" for t in tokens)
                ):
                    continue
                out.add(doc[tokens[0].i : tokens[-1].i + 1].text, "concept")
        _add_symbols(doc.text, out)
        return out.result()


def load_spacy_extractor(ref: str, *, batch_size: int = 64) -> SpacyEntityExtractor:
    """Load a spaCy pipeline (installed package name, folder, or `package:` reference) without
    its lemmatizer, which entity and noun-chunk extraction do not use."""
    try:
        import spacy
    except ImportError as exc:
        raise MissingExtraError("spacy", purpose="entity extraction") from exc
    target = ref
    if ref.startswith("package:") or "/" in ref or ref.startswith(("~", ".")):
        path = resolve_model(ref).path
        target = str(path)
    try:
        nlp = spacy.load(target, exclude=["lemmatizer"])
    except Exception as exc:
        raise ModelError(f"cannot load spaCy pipeline {ref!r}: {exc}") from exc
    missing = {"ner", "parser"} - set(nlp.pipe_names)
    if missing:
        log.warning(
            "spaCy pipeline %s lacks %s: fewer entities will be found", ref, sorted(missing)
        )
    return SpacyEntityExtractor(nlp, batch_size=batch_size)
