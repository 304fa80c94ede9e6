"""Pure functions from chunks (and optional extractor output) to the rows `GraphStore` writes.

No model is required: structure comes from chunk fields, entities from titles, headings,
definition sentences, code symbols, error codes and a gazetteer pass; an NER extractor's
mentions and an LLM's statements, when available, only add to that.

The gazetteer pass is what makes multi-hop ("bridge") retrieval work: every chunk MENTIONS each
known entity whose name occurs in its text, even when NER missed it. On HotpotQA the bridge
entities are other documents' titles, and a document EXPLAINS the entity its title names, so
`chunk -MENTIONS-> entity <-EXPLAINS- document` is the hop a question needs.

Every inferred edge carries a confidence in [0, 1] and the rule (`EdgeSource`) that made it.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from rayweave.cluster.settings import GraphSettings
from rayweave.cluster.types import Chunk, ContentType, Document, Entity, Level, stable_id
from rayweave.graph.names import (
    STOPWORDS,
    entity_id,
    first_words,
    is_code_name,
    is_informative,
    name_ngrams,
    normalize_name,
    short_name,
    singular,
    tokens,
)
from rayweave.graph.schema import (
    EdgeRow,
    EdgeSource,
    EntityRow,
    GraphBatch,
    NodeLabel,
    NodeRef,
    RelType,
    TopicRow,
)

# -- the optional LLM hook -------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Statement:
    """A standalone assertion an LLM extracted from a chunk: `subject -predicate-> object`."""

    subject: str
    predicate: str
    object: str
    confidence: float = 0.7


@dataclass(frozen=True, slots=True, kw_only=True)
class Extraction:
    entities: tuple[Entity, ...] = ()
    statements: tuple[Statement, ...] = ()


@runtime_checkable
class GraphExtractor(Protocol):
    """An optional (LLM) extractor: one `Extraction` per text. Never required by the builders."""

    def extract(self, texts: Sequence[str]) -> list[Extraction]: ...


def run_extractor(extractor: GraphExtractor, chunks: Sequence[Chunk]) -> dict[str, Extraction]:
    """Extractions keyed by chunk id, ready for `build_graph(extractions=...)`."""
    results = extractor.extract([c.text for c in chunks])
    if len(results) != len(chunks):
        raise ValueError(f"extractor returned {len(results)} results for {len(chunks)} texts")
    return {c.id: r for c, r in zip(chunks, results, strict=True)}


# -- confidences of the rules ----------------------------------------------------------------

CONF_TITLE = 0.95
CONF_HEADING = 0.8
CONF_DEFINITION_FIRST = 0.75
CONF_DEFINITION = 0.6
CONF_EXTRACTOR = 0.7
CONF_GAZETTEER_MULTI = 0.75
CONF_GAZETTEER_SINGLE = 0.55
CONF_DEFINES = 0.95
CONF_USES_DEPENDENCY = 0.9
CONF_USES_REFERENCE = 0.7
CONF_REFERENCE_LINK = 0.9
CONF_SOLVES = 0.8
CONF_ERROR_MENTION = 0.7

GENERIC_HEADINGS: frozenset[str] = frozenset(
    [
        "overview",
        "introduction",
        "intro",
        "summary",
        "example",
        "examples",
        "usage",
        "installation",
        "install",
        "notes",
        "note",
        "references",
        "reference",
        "see",
        "also",
        "conclusion",
        "contents",
        "table",
        "of",
        "contents",
        "getting",
        "started",
        "background",
        "prerequisites",
        "requirements",
        "description",
        "details",
        "faq",
        "appendix",
        "changelog",
        "license",
        "contributing",
        "setup",
        "quickstart",
        "quick",
        "start",
        "next",
        "steps",
        "what",
        "next",
        "related",
        "tip",
        "tips",
        "warning",
        "caveats",
    ]
) | {"see also", "table of contents", "getting started", "quick start", "next steps"}

_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'`(\[])")
_DEFINITION_COPULA = re.compile(
    r"^(?P<name>[^\n.;:!?]{1,80}?)\s*(?:\([^)]{0,120}\)\s*)?,?\s+"
    r"(?:is|are|was|were)\s+(?:an?|the|one of the|one of)\s",
)
_DEFINITION_VERB = re.compile(
    r"^(?P<name>[^\n.;:!?]{1,80}?)\s*(?:\([^)]{0,120}\)\s*)?,?\s+"
    r"(?:refers to|means|denotes|stands for|is defined as|is used to|is used for)\s",
)
_ERROR_NAME = re.compile(r"\b[A-Z][A-Za-z0-9]*(?:Error|Exception)\b")
_ERROR_CODE = re.compile(r"\b(?:E|ERR|ERROR)[-_]?\d{2,5}\b")
_FIX_CUES = re.compile(
    r"\b(?:fix(?:e[sd])?|solution|solve[sd]?|resolve[sd]?|workaround|to avoid|make sure|ensure|"
    r"instead|upgrade|downgrade|try|reinstall|set\s+\S+\s+to)\b",
    re.IGNORECASE,
)
_PARENTHETICAL = re.compile(r"\s*\([^)]*\)\s*$")
_PRONOUN_STARTS = frozenset(
    {"it", "this", "that", "these", "those", "there", "he", "she", "they", "we", "i", "you"}
)
_KIND_PRIORITY = {"symbol": 0, "module": 1, "error": 2}
_MAX_UNIT_ENTITIES = 64


def chunk_ref(chunk: Chunk) -> NodeRef:
    """The node a chunk is stored as (a `Level.DOCUMENT` chunk lives on its Document node)."""
    if chunk.level is Level.DOCUMENT:
        return NodeRef(NodeLabel.DOCUMENT, chunk.doc_id)
    label = NodeLabel.SECTION if chunk.level is Level.SECTION else NodeLabel.PROPOSITION
    return NodeRef(label, chunk.id)


def definition_subjects(text: str, max_tokens: int = 6) -> list[tuple[str, bool]]:
    """Names a definition sentence ("X is a ...", "X refers to ...") defines; bool = first sentence."""
    found: list[tuple[str, bool]] = []
    for i, sentence in enumerate(_SENTENCE_SPLIT.split(text.strip())[:20]):
        sentence = sentence.strip()
        match = _DEFINITION_COPULA.match(sentence) or _DEFINITION_VERB.match(sentence)
        if not match:
            continue
        # "Later, a handle refers to ...": the subject follows the last comma.
        name = match.group("name").rsplit(",", 1)[-1].strip(" \"'`*_")
        words = tokens(name)
        if not words or len(words) > max_tokens or words[0].lower() in _PRONOUN_STARTS:
            continue
        if words[0].lower() in STOPWORDS and words[0].lower() not in ("the", "a", "an"):
            continue
        found.append((name, i == 0))
    return found


def error_names(chunk: Chunk) -> list[str]:
    """Error codes and exception names of a chunk: its metadata plus what its text shows."""
    return list(
        dict.fromkeys(
            [*chunk.error_codes, *_ERROR_NAME.findall(chunk.text), *_ERROR_CODE.findall(chunk.text)]
        )
    )


def explains_fix(text: str) -> bool:
    return bool(_FIX_CUES.search(text))


def npmi(joint: int, a: int, b: int, total: int) -> float:
    """Normalised pointwise mutual information in [-1, 1] from co-occurrence counts."""
    if joint <= 0 or total <= 0:
        return -1.0
    p_ab = joint / total
    if p_ab >= 1.0:
        return 1.0
    pmi = math.log(p_ab / ((a / total) * (b / total)))
    return max(-1.0, min(1.0, pmi / -math.log(p_ab)))


def mention_weight(count: int) -> float:
    """Diminishing returns on repeated mentions: 1 -> 0.5, 2 -> 0.67, 3 -> 0.75."""
    return count / (count + 1.0)


# -- entity resolution -----------------------------------------------------------------------


@dataclass(slots=True)
class _Candidate:
    surfaces: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)
    aliases: set[str] = field(default_factory=set)
    is_title: bool = False
    title_surface: str = ""
    description: str = ""


class EntityResolver:
    """Collects surface forms, then merges case/punctuation/plural/`module.func` variants.

    `known` maps normalised aliases already in the store to their entity ids, so an incremental
    build links to existing entities instead of minting look-alikes.
    """

    def __init__(self, known: Mapping[str, Sequence[str]] | None = None) -> None:
        self._cands: dict[str, _Candidate] = defaultdict(_Candidate)
        self._known = {k: tuple(v) for k, v in (known or {}).items() if v}
        self._canon: dict[str, str] | None = None

    def add(
        self,
        surface: str,
        kind: str = "concept",
        *,
        aliases: Iterable[str] = (),
        title: bool = False,
    ) -> str:
        """Register a surface form; returns its normalised name ('' if it cannot be an entity)."""
        norm = normalize_name(surface)
        if not is_informative(norm):
            return ""
        cand = self._cands[norm]
        cand.surfaces[surface.strip()] += 1
        cand.kinds[kind] += 1
        if title:
            cand.is_title = True
            cand.title_surface = surface.strip()
            bare = normalize_name(_PARENTHETICAL.sub("", surface))
            if bare and bare != norm and is_informative(bare):
                cand.aliases.add(bare)
        for alias in aliases:
            a = normalize_name(alias)
            if a and a != norm and is_informative(a):
                cand.aliases.add(a)
        self._canon = None
        return norm

    def _canonical_map(self) -> dict[str, str]:
        """norm -> canonical norm after merging plurals into singulars and short code names into
        their unique qualified name."""
        if self._canon is not None:
            return self._canon
        norms = set(self._cands)
        canon = {n: n for n in norms}
        for n in norms:
            one = singular(n)
            if one != n and one in norms:
                canon[n] = one
        tails: dict[str, list[str]] = defaultdict(list)
        for n in norms:
            tail = short_name(n)
            if tail:
                tails[tail].append(n)
        for tail, qualified in tails.items():
            if tail in norms and len(qualified) == 1:
                canon[tail] = canon[qualified[0]]
        # Follow chains (plural tail -> tail -> qualified).
        for n in norms:
            seen = {n}
            while canon[n] != n and canon[canon[n]] != canon[n] and canon[n] not in seen:
                seen.add(canon[n])
                canon[n] = canon[canon[n]]
        self._canon = canon
        return canon

    def resolve(self, norm: str) -> list[str]:
        """Entity ids a normalised name denotes (one, or several when an alias is ambiguous)."""
        if not norm:
            return []
        canon = self._canonical_map().get(norm)
        if canon is not None:
            known = self._known.get(canon)
            return [known[0]] if known else [entity_id(canon)]
        if norm in self._known:
            return list(self._known[norm])
        return []

    def gazetteer(self) -> dict[str, list[str]]:
        """Every matchable normalised form -> entity ids (aliases and singulars included)."""
        out: dict[str, list[str]] = {k: list(v) for k, v in self._known.items()}
        for norm, cand in self._cands.items():
            ids = self.resolve(norm)
            for form in {norm, singular(norm), *cand.aliases}:
                bucket = out.setdefault(form, [])
                bucket.extend(i for i in ids if i not in bucket)
        return out

    def rows(self) -> list[EntityRow]:
        grouped: dict[str, list[str]] = defaultdict(list)
        for norm in self._cands:
            grouped[self._canonical_map()[norm]].append(norm)
        rows = []
        for canon, members in sorted(grouped.items()):
            known = self._known.get(canon)
            eid = known[0] if known else entity_id(canon)
            cands = [self._cands[m] for m in members]
            surfaces: Counter[str] = Counter()
            kinds: Counter[str] = Counter()
            aliases: set[str] = set(members)
            title_surface = ""
            for c in cands:
                surfaces.update(c.surfaces)
                kinds.update(c.kinds)
                aliases |= c.aliases
                title_surface = title_surface or c.title_surface
            for m in members:
                tail = short_name(m)
                if tail and is_informative(tail):
                    aliases.add(tail)
            name = (
                title_surface
                or max(surfaces.items(), key=lambda kv: (kv[1], kv[0] == canon, kv[0]))[0]
            )
            rows.append(
                EntityRow(
                    id=eid,
                    name=name,
                    kind=_pick_kind(kinds),
                    aliases=tuple(sorted(aliases | {canon})),
                )
            )
        return rows


def _pick_kind(kinds: Counter[str]) -> str:
    specific = [k for k in kinds if k not in ("concept", "title")]
    if specific:
        return min(specific, key=lambda k: (_KIND_PRIORITY.get(k, 10), -kinds[k], k))
    return "title" if "title" in kinds else "concept"


# -- the builder -----------------------------------------------------------------------------


def stronger_source(
    new: EdgeSource, new_conf: float, old: EdgeSource, old_conf: float
) -> EdgeSource:
    """The rule an edge is labelled with when two agree: the more confident one, except that a
    gazetteer match never takes the label from a rule that introduces the entity, and always
    yields it (orphan deletion keeps entities that something other than the gazetteer names)."""
    if (new is EdgeSource.GAZETTEER) != (old is EdgeSource.GAZETTEER):
        return old if new is EdgeSource.GAZETTEER else new
    return new if new_conf > old_conf else old


@dataclass(slots=True)
class _EdgeAcc:
    """Merges candidate edges per (rel, src, dst): one rule repeated keeps its highest confidence,
    different rules combine by noisy-OR; the edge is credited to its most confident rule (see
    `stronger_source`) and keeps the largest count any rule saw."""

    rows: dict[tuple[RelType, NodeRef, NodeRef], EdgeRow] = field(default_factory=dict)

    def add(
        self,
        rel: RelType,
        src: NodeRef,
        dst: NodeRef,
        *,
        confidence: float,
        source: EdgeSource,
        weight: float | None = None,
        count: int = 1,
        props: Mapping[str, str | int | float | bool | None] | None = None,
    ) -> None:
        if src == dst:
            return
        key = (rel, src, dst)
        old = self.rows.get(key)
        count = max(count, old.count if old else 0)
        if old is None or old.source is source:
            conf = max(confidence, old.confidence if old else 0.0)
        else:
            # Two independent rules agreeing are stronger than either (noisy-OR).
            conf = 1.0 - (1.0 - confidence) * (1.0 - old.confidence)
        src_rule = (
            stronger_source(source, confidence, old.source, old.confidence) if old else source
        )
        w = weight if weight is not None else conf
        if old is not None:
            w = max(w, old.weight)
        self.rows[key] = EdgeRow(
            rel=rel,
            src=src,
            dst=dst,
            weight=round(min(1.0, w), 6),
            confidence=round(min(1.0, conf), 6),
            source=src_rule,
            count=count,
            props=dict(props or (old.props if old else {})),
        )


def build_graph(
    chunks: Sequence[Chunk],
    mentions: Mapping[str, Sequence[Entity]] | None = None,
    *,
    documents: Sequence[Document] = (),
    known: Mapping[str, Sequence[str]] | None = None,
    extractions: Mapping[str, Extraction] | None = None,
    settings: GraphSettings | None = None,
) -> GraphBatch:
    """Entities, topics and every inferred edge for `chunks` (see module docstring).

    `mentions` maps chunk ids to an extractor's entities (their ids are provisional and ignored);
    `known` maps alias forms to ids of entities stored elsewhere, which the build then reuses
    (the corpus pass builds from every chunk and passes none); `extractions` is the optional LLM
    hook's output. Structure edges (CHUNK_OF/HAS_CHILD/NEXT) are written by
    `GraphStore.write_chunks` from the chunk fields and are not repeated here.
    """
    cfg = settings or GraphSettings()
    mentions = mentions or {}
    extractions = extractions or {}
    resolver = EntityResolver(known)
    acc = _EdgeAcc()
    by_id = {c.id: c for c in chunks}
    titles = _document_titles(chunks, documents)

    # 1. Names from structure: titles and headings (EXPLAINS), definitions, code, errors.
    title_norm: dict[str, str] = {}
    for doc_id, title in titles.items():
        norm = resolver.add(title, "title", title=True)
        if norm:
            title_norm[doc_id] = norm
    heading_norm: dict[str, str] = {}
    definitions: dict[str, list[tuple[str, bool]]] = {}
    for c in chunks:
        if c.level is Level.SECTION and c.section_path:
            heading = c.section_path[-1]
            if normalize_name(heading) not in GENERIC_HEADINGS and heading.strip() != titles.get(
                c.doc_id, ""
            ):
                norm = resolver.add(heading, "concept")
                if norm:
                    heading_norm[c.id] = norm
        if c.content_type is not ContentType.CODE:
            defs = [
                (resolver.add(name, "concept"), first)
                for name, first in definition_subjects(c.text)
            ]
            definitions[c.id] = [(n, first) for n, first in defs if n]
        for sym in c.defined_symbols:
            resolver.add(sym, "symbol")
        for dep in c.dependencies:
            resolver.add(
                dep, "module" if not is_code_name(dep) or "." in dep or "::" in dep else "symbol"
            )
        for err in error_names(c):
            resolver.add(err, "error")
        for ent in mentions.get(c.id, ()):
            resolver.add(ent.name, ent.kind or "concept", aliases=ent.aliases)
        ext = extractions.get(c.id)
        if ext is not None:
            for ent in ext.entities:
                resolver.add(ent.name, ent.kind or "concept", aliases=ent.aliases)
            for st in ext.statements:
                resolver.add(st.subject, "concept")
                resolver.add(st.object, "concept")

    # 2. EXPLAINS from titles, headings and definitions.
    for c in chunks:
        ref = chunk_ref(c)
        if c.level is Level.DOCUMENT and c.doc_id in title_norm:
            for eid in resolver.resolve(title_norm[c.doc_id]):
                acc.add(
                    RelType.EXPLAINS,
                    ref,
                    _entity(eid),
                    confidence=CONF_TITLE,
                    source=EdgeSource.TITLE,
                )
        if c.id in heading_norm:
            for eid in resolver.resolve(heading_norm[c.id]):
                acc.add(
                    RelType.EXPLAINS,
                    ref,
                    _entity(eid),
                    confidence=CONF_HEADING,
                    source=EdgeSource.HEADING,
                )
        for norm, first in definitions.get(c.id, ()):
            conf = CONF_DEFINITION_FIRST if first else CONF_DEFINITION
            for eid in resolver.resolve(norm):
                acc.add(
                    RelType.EXPLAINS,
                    ref,
                    _entity(eid),
                    confidence=conf,
                    source=EdgeSource.DEFINITION,
                )
    for doc_id, norm in title_norm.items():
        # Documents without a Level.DOCUMENT chunk still explain their title.
        for eid in resolver.resolve(norm):
            acc.add(
                RelType.EXPLAINS,
                NodeRef(NodeLabel.DOCUMENT, doc_id),
                _entity(eid),
                confidence=CONF_TITLE,
                source=EdgeSource.TITLE,
            )

    # 3. MENTIONS: extractor output plus the gazetteer pass.
    gazetteer = resolver.gazetteer()
    entity_rows = resolver.rows()
    cased = _proper_single_tokens(entity_rows)
    units = _units(chunks, by_id)
    starts = first_words(gazetteer)
    found = {
        c.id: _gazetteer_matches(c.text, gazetteer, cased, cfg.gazetteer_max_ngram, starts)
        for c in chunks
    }
    generic = _generic_entities(found, units, cfg.gazetteer_max_df)
    for c in chunks:
        ref = chunk_ref(c)
        counts: Counter[str] = Counter()
        for ent in mentions.get(c.id, ()):
            for eid in resolver.resolve(normalize_name(ent.name)):
                counts[eid] += 1
        ext = extractions.get(c.id)
        if ext is not None:
            for ent in ext.entities:
                for eid in resolver.resolve(normalize_name(ent.name)):
                    counts[eid] += 1
        for eid, n in counts.items():
            acc.add(
                RelType.MENTIONS,
                ref,
                _entity(eid),
                confidence=CONF_EXTRACTOR,
                source=EdgeSource.EXTRACTOR,
                weight=mention_weight(n),
                count=n,
            )
        for eid, (n, multi, ambiguity) in found[c.id].items():
            if eid in generic and eid not in counts:
                continue
            conf = (CONF_GAZETTEER_MULTI if multi else CONF_GAZETTEER_SINGLE) / ambiguity
            acc.add(
                RelType.MENTIONS,
                ref,
                _entity(eid),
                confidence=conf,
                source=EdgeSource.GAZETTEER,
                weight=mention_weight(n),
                count=n,
            )

    # 4. Code: DEFINES, USES, REFERENCES.
    refs = _reference_targets(chunks, documents)
    symbol_ids = {r.id for r in entity_rows if r.kind == "symbol"}
    for c in chunks:
        ref = chunk_ref(c)
        defined: set[str] = set()
        for sym in c.defined_symbols:
            for eid in resolver.resolve(normalize_name(sym)):
                defined.add(eid)
                acc.add(
                    RelType.DEFINES,
                    ref,
                    _entity(eid),
                    confidence=CONF_DEFINES,
                    source=EdgeSource.CODE,
                )
        for dep in c.dependencies:
            for eid in resolver.resolve(normalize_name(dep)):
                acc.add(
                    RelType.USES,
                    ref,
                    _entity(eid),
                    confidence=CONF_USES_DEPENDENCY,
                    source=EdgeSource.CODE,
                )
        for target in c.references:
            hit = refs.get(target) or refs.get(target.rstrip("/").rsplit("/", 1)[-1])
            if hit is not None and hit != ref:
                acc.add(
                    RelType.REFERENCES,
                    ref,
                    hit,
                    confidence=CONF_REFERENCE_LINK,
                    source=EdgeSource.LINK,
                )
            elif is_code_name(target):
                for eid in resolver.resolve(normalize_name(target)):
                    if eid not in defined:
                        acc.add(
                            RelType.USES,
                            ref,
                            _entity(eid),
                            confidence=CONF_USES_REFERENCE,
                            source=EdgeSource.CODE,
                        )
        if c.content_type is ContentType.CODE:
            for eid in found[c.id]:
                if eid in symbol_ids and eid not in defined:
                    acc.add(
                        RelType.USES,
                        ref,
                        _entity(eid),
                        confidence=CONF_USES_REFERENCE,
                        source=EdgeSource.CODE,
                    )

    # 5. Errors: SOLVES where the chunk explains a fix, else MENTIONS.
    for c in chunks:
        names = error_names(c)
        if not names:
            continue
        ref = chunk_ref(c)
        # Code that catches an error does not explain how to fix it; prose with fix cues does.
        fix = c.content_type is not ContentType.CODE and explains_fix(c.text)
        for err in names:
            for eid in resolver.resolve(normalize_name(err)):
                if fix:
                    acc.add(
                        RelType.SOLVES,
                        ref,
                        _entity(eid),
                        confidence=CONF_SOLVES,
                        source=EdgeSource.ERROR,
                    )
                else:
                    acc.add(
                        RelType.MENTIONS,
                        ref,
                        _entity(eid),
                        confidence=CONF_ERROR_MENTION,
                        source=EdgeSource.ERROR,
                    )

    # 6. LLM statements: RELATED_TO between subject and object.
    for c in chunks:
        ext = extractions.get(c.id)
        if ext is None:
            continue
        for st in ext.statements:
            for s in resolver.resolve(normalize_name(st.subject)):
                for o in resolver.resolve(normalize_name(st.object)):
                    a, b = sorted((s, o))
                    acc.add(
                        RelType.RELATED_TO,
                        _entity(a),
                        _entity(b),
                        confidence=max(0.0, min(1.0, st.confidence)),
                        source=EdgeSource.LLM,
                        props={"predicate": st.predicate},
                    )

    # 7. RELATED_TO by co-occurrence, topics from keywords.
    entity_edges = [
        e
        for e in acc.rows.values()
        if e.dst.label is NodeLabel.ENTITY and e.src.label is not NodeLabel.ENTITY
    ]
    related = related_edges(_unit_entities(entity_edges, units), cfg)
    topics, belongs = topic_rows(chunks, cfg)
    for e in (*related, *belongs):
        acc.add(
            e.rel,
            e.src,
            e.dst,
            confidence=e.confidence,
            source=e.source,
            weight=e.weight,
            count=e.count,
        )

    # Only entities some edge uses: a name nothing links to would be an orphan node.
    wanted = {e.dst.id for e in acc.rows.values() if e.dst.label is NodeLabel.ENTITY}
    wanted |= {e.src.id for e in acc.rows.values() if e.src.label is NodeLabel.ENTITY}
    entities = tuple(r for r in entity_rows if r.id in wanted)
    return GraphBatch(entities=entities, topics=tuple(topics), edges=tuple(acc.rows.values()))


def _entity(eid: str) -> NodeRef:
    return NodeRef(NodeLabel.ENTITY, eid)


def _document_titles(chunks: Sequence[Chunk], documents: Sequence[Document]) -> dict[str, str]:
    titles = {d.id: d.title.strip() for d in documents if d.title and d.title.strip()}
    for c in chunks:
        if c.doc_id not in titles and c.title.strip():
            titles[c.doc_id] = c.title.strip()
    return titles


def _proper_single_tokens(rows: Iterable[EntityRow]) -> set[str]:
    """Single-word names that only count when capitalised in text ("Mercury", not "mercury")."""
    out: set[str] = set()
    for row in rows:
        surface = row.name.strip()
        if (
            " " not in surface
            and surface[:1].isupper()
            and not is_code_name(surface)
            and not surface.isupper()
        ):
            out.update(a for a in row.aliases if " " not in a)
    return out


def _gazetteer_matches(
    text: str,
    gazetteer: Mapping[str, Sequence[str]],
    cased: set[str],
    max_len: int,
    starts: AbstractSet[str],
) -> dict[str, tuple[int, bool, int]]:
    """entity id -> (occurrences, multi-token match, ambiguity) for the longest non-overlapping
    gazetteer names in `text`."""
    raw = tokens(text)
    spans: list[tuple[int, int, str]] = []  # (start, length, norm)
    for start, length, norm in name_ngrams(text, max_len, starts=starts):
        if norm not in gazetteer:
            continue
        if length == 1 and norm in cased and not raw[start][:1].isupper():
            continue
        if length == 1 and (len(norm) < 3 or norm in STOPWORDS):
            continue
        spans.append((start, length, norm))
    spans.sort(key=lambda s: (-s[1], s[0]))
    taken = [False] * len(raw)
    out: dict[str, tuple[int, bool, int]] = {}
    for start, length, norm in spans:
        if any(taken[start : start + length]):
            continue
        for i in range(start, start + length):
            taken[i] = True
        ids = gazetteer[norm]
        for eid in ids:
            n, multi, amb = out.get(eid, (0, False, len(ids)))
            out[eid] = (n + 1, multi or length > 1, min(amb, len(ids)))
    return out


def _units(chunks: Sequence[Chunk], by_id: Mapping[str, Chunk]) -> dict[NodeRef, NodeRef]:
    """Map each chunk to its co-occurrence unit: its section (propositions roll up to their parent
    section), else itself; document summaries form no unit (they repeat their sections)."""
    has_sections = any(c.level is Level.SECTION for c in chunks)
    out: dict[NodeRef, NodeRef] = {}
    for c in chunks:
        if c.level is Level.DOCUMENT:
            if not has_sections and not any(
                x.doc_id == c.doc_id and x.level is not Level.DOCUMENT for x in chunks
            ):
                out[chunk_ref(c)] = chunk_ref(c)
            continue
        if (
            c.level is Level.PROPOSITION
            and c.parent_id in by_id
            and by_id[c.parent_id].level is Level.SECTION
        ):
            out[chunk_ref(c)] = chunk_ref(by_id[c.parent_id])
        else:
            out[chunk_ref(c)] = chunk_ref(c)
    return out


def _generic_entities(
    found: Mapping[str, Mapping[str, tuple[int, bool, int]]],
    units: Mapping[NodeRef, NodeRef],
    max_df: float,
) -> set[str]:
    unit_of_chunk = {ref.id: unit for ref, unit in units.items()}
    total = len(set(units.values()))
    if total < 50:
        return set()
    seen: dict[str, set[NodeRef]] = defaultdict(set)
    for cid, ents in found.items():
        unit = unit_of_chunk.get(cid)
        if unit is not None:
            for eid in ents:
                seen[eid].add(unit)
    return {eid for eid, us in seen.items() if len(us) / total > max_df}


def _unit_entities(edges: Iterable[EdgeRow], units: Mapping[NodeRef, NodeRef]) -> list[set[str]]:
    per_unit: dict[NodeRef, Counter[str]] = defaultdict(Counter)
    for e in edges:
        unit = units.get(e.src)
        if unit is None and e.src.label is NodeLabel.DOCUMENT:
            unit = e.src
        if unit is None:
            continue
        per_unit[unit][e.dst.id] += max(1, e.count)
    out = []
    for counts in per_unit.values():
        out.append({eid for eid, _ in counts.most_common(_MAX_UNIT_ENTITIES)})
    return out


def related_edges(units: Sequence[set[str]], settings: GraphSettings) -> list[EdgeRow]:
    """RELATED_TO between entities that co-occur in at least `related_min_support` units with a
    normalised PMI of at least `related_min_npmi`; the strongest `related_max_per_entity` per entity.

    Weight and confidence are the NPMI damped by support (count / (count + 1)). Each edge is
    stored once, from the smaller id to the larger; traversals follow it both ways.
    """
    total = len(units)
    if total == 0:
        return []
    df: Counter[str] = Counter()
    joint: Counter[tuple[str, str]] = Counter()
    for ents in units:
        ordered = sorted(ents)
        df.update(ordered)
        for i, a in enumerate(ordered):
            for b in ordered[i + 1 :]:
                joint[(a, b)] += 1
    scored: list[tuple[float, str, str, int, float]] = []
    for (a, b), n in joint.items():
        if n < settings.related_min_support:
            continue
        score = npmi(n, df[a], df[b], total)
        if score < settings.related_min_npmi:
            continue
        strength = max(0.0, score) * (n / (n + 1.0))
        scored.append((strength, a, b, n, score))
    scored.sort(key=lambda s: (-s[0], s[1], s[2]))
    kept: Counter[str] = Counter()
    out = []
    for strength, a, b, n, score in scored:
        if kept[a] >= settings.related_max_per_entity or kept[b] >= settings.related_max_per_entity:
            continue
        kept[a] += 1
        kept[b] += 1
        out.append(
            EdgeRow(
                rel=RelType.RELATED_TO,
                src=_entity(a),
                dst=_entity(b),
                weight=round(strength, 6),
                confidence=round(min(1.0, strength), 6),
                source=EdgeSource.COOCCURRENCE,
                count=n,
                props={"npmi": round(score, 6)},
            )
        )
    return out


def topic_rows(
    chunks: Sequence[Chunk], settings: GraphSettings
) -> tuple[list[TopicRow], list[EdgeRow]]:
    """Topics as clusters of chunk keywords, and Document -BELONGS_TO-> Topic edges.

    Keywords seen in at least `topic_min_support` documents link to their strongest partner by
    NPMI over documents (when at least `topic_min_npmi`); the connected groups of those links are
    the topics. A document belongs to a topic with the share of the topic's keywords it has.
    """
    doc_keywords: dict[str, set[str]] = defaultdict(set)
    surface: dict[str, Counter[str]] = defaultdict(Counter)
    for c in chunks:
        for kw in c.keywords:
            norm = normalize_name(kw)
            if is_informative(norm):
                doc_keywords[c.doc_id].add(norm)
                surface[norm][kw.strip()] += 1
    total = len(doc_keywords)
    df: Counter[str] = Counter()
    for kws in doc_keywords.values():
        df.update(kws)
    frequent = {k for k, n in df.items() if n >= settings.topic_min_support}
    joint: Counter[tuple[str, str]] = Counter()
    for kws in doc_keywords.values():
        ordered = sorted(kws & frequent)
        for i, a in enumerate(ordered):
            for b in ordered[i + 1 :]:
                joint[(a, b)] += 1
    best: dict[str, tuple[float, str]] = {}
    for (a, b), n in joint.items():
        if n < settings.topic_min_support:
            continue
        score = npmi(n, df[a], df[b], total)
        if score < settings.topic_min_npmi:
            continue
        for x, y in ((a, b), (b, a)):
            if x not in best or (score, y) > best[x]:
                best[x] = (score, y)
    parent = {k: k for k in best}

    def find(k: str) -> str:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for a, (_, b) in best.items():
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    clusters: dict[str, set[str]] = defaultdict(set)
    for k in best:
        clusters[find(k)].add(k)
    topics: list[TopicRow] = []
    edges: list[EdgeRow] = []
    for members in clusters.values():
        if len(members) < 2:
            continue
        ranked = sorted(members, key=lambda k: (-df[k], k))
        tid = stable_id("topic", *sorted(members))
        names = [surface[k].most_common(1)[0][0] for k in ranked[:3]]
        topics.append(TopicRow(id=tid, name=", ".join(names), keywords=tuple(ranked)))
        for doc_id, kws in sorted(doc_keywords.items()):
            share = len(kws & members) / len(members)
            if share > 0:
                edges.append(
                    EdgeRow(
                        rel=RelType.BELONGS_TO,
                        src=NodeRef(NodeLabel.DOCUMENT, doc_id),
                        dst=NodeRef(NodeLabel.TOPIC, tid),
                        weight=round(share, 6),
                        confidence=round(share, 6),
                        source=EdgeSource.KEYWORDS,
                        count=len(kws & members),
                    )
                )
    topics.sort(key=lambda t: t.id)
    return topics, edges


def _reference_targets(
    chunks: Sequence[Chunk], documents: Sequence[Document]
) -> dict[str, NodeRef]:
    """What a `Chunk.references` entry can point at: chunk ids, doc ids, sources and their file names."""
    out: dict[str, NodeRef] = {}
    for d in documents:
        ref = NodeRef(NodeLabel.DOCUMENT, d.id)
        out.setdefault(d.id, ref)
        if d.source:
            out.setdefault(d.source, ref)
            out.setdefault(d.source.rstrip("/").rsplit("/", 1)[-1], ref)
    for c in chunks:
        out[c.id] = chunk_ref(c)
        out.setdefault(c.doc_id, NodeRef(NodeLabel.DOCUMENT, c.doc_id))
        if c.source:
            out.setdefault(c.source, NodeRef(NodeLabel.DOCUMENT, c.doc_id))
            out.setdefault(
                c.source.rstrip("/").rsplit("/", 1)[-1], NodeRef(NodeLabel.DOCUMENT, c.doc_id)
            )
    return out
