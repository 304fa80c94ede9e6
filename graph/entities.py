"""Entity names from chunks: which surface forms are entities, and how variants merge into one.

Names come from structure (titles, headings, definition sentences, code symbols, error codes)
and, when available, from an NER extractor and the LLM hook. `EntityResolver` merges the case,
punctuation, plural and `module.func` variants of a name into one entity with its aliases.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Protocol

from rayweave.cluster.types import Chunk, ContentType, Document, Entity, Level
from rayweave.graph.extraction import Extraction
from rayweave.graph.names import (
    entity_id,
    is_code_name,
    is_informative,
    normalize_name,
    short_name,
    singular,
    tokens,
)
from rayweave.graph.schema import EntityRow
from rayweave.graph.tallies import take
from rayweave.models.stopwords import FUNCTION_WORDS

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
_PARENTHETICAL = re.compile(r"\s*\([^)]*\)\s*$")
_PRONOUN_STARTS = frozenset(
    {"it", "this", "that", "these", "those", "there", "he", "she", "they", "we", "i", "you"}
)
_KIND_PRIORITY = {"symbol": 0, "module": 1, "error": 2}


def definition_subjects(text: str, max_tokens: int = 6) -> list[tuple[str, bool]]:
    """Names a definition sentence ("X is a ...", "X refers to ...") defines; the bool says
    whether it is the first sentence."""
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
        if words[0].lower() in FUNCTION_WORDS and words[0].lower() not in ("the", "a", "an"):
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


@dataclass(slots=True)
class NameCandidate:
    """What the chunks say about one normalised name. Every field counts, so that tallies of
    shares of a corpus merge, and a share's tally can be taken back out (`unmerge`)."""

    surfaces: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)
    aliases: Counter[str] = field(default_factory=Counter)
    titles: Counter[tuple[str, str]] = field(default_factory=Counter)  # (document's place, title)

    @property
    def title(self) -> tuple[str, str] | None:
        """The title of the last document by place that this name titles."""
        return max(self.titles) if self.titles else None

    def merge(self, other: NameCandidate) -> None:
        self.surfaces.update(other.surfaces)
        self.kinds.update(other.kinds)
        if other.aliases:  # most names have none: skip `Counter.update`'s own checks
            self.aliases.update(other.aliases)
        if other.titles:
            self.titles.update(other.titles)

    def unmerge(self, other: NameCandidate) -> None:
        """Take back a tally merged earlier; raises ValueError if `other` holds more."""
        take(self.surfaces, other.surfaces)
        take(self.kinds, other.kinds)
        take(self.aliases, other.aliases)
        take(self.titles, other.titles)


def merge_candidates(into: dict[str, NameCandidate], other: Mapping[str, NameCandidate]) -> None:
    for norm, cand in other.items():
        # Not `setdefault(norm, NameCandidate())`, which builds a candidate (four Counters)
        # for every name merged: 160k a pass at 10k documents, most of them already here.
        mine = into.get(norm)
        if mine is None:
            mine = into[norm] = NameCandidate()
        mine.merge(cand)


def unmerge_candidates(into: dict[str, NameCandidate], other: Mapping[str, NameCandidate]) -> None:
    """Take `other` back out of `into`. A name no tally holds any more goes, as if it had never
    been merged."""
    for norm, cand in other.items():
        mine = into.get(norm)
        if mine is None:
            raise ValueError(f"name {norm!r} taken back but never merged")
        mine.unmerge(cand)
        if not mine.surfaces:  # every name registered has a surface: none left, none merged
            del into[norm]


class Resolves(Protocol):
    """What the edge rules ask of a lexicon: the entity ids a normalised name denotes."""

    def resolve(self, norm: str) -> list[str]: ...


class EntityResolver:
    """Collects surface forms, then merges case/punctuation/plural/`module.func` variants.

    `known` maps normalised aliases already in the store to their entity ids, so an incremental
    build links to existing entities instead of minting look-alikes.
    """

    def __init__(
        self,
        known: Mapping[str, Sequence[str]] | None = None,
        *,
        candidates: dict[str, NameCandidate] | None = None,
    ) -> None:
        # `candidates` are taken as they are, not copied (61k names at 10k documents, each a
        # few Counters): whoever hands them over changes them no more while this resolves.
        self._cands: dict[str, NameCandidate] = {} if candidates is None else candidates
        self._known = {k: tuple(v) for k, v in (known or {}).items() if v}
        self._canon: dict[str, str] | None = None

    def add(
        self,
        surface: str,
        kind: str = "concept",
        *,
        aliases: Iterable[str] = (),
        title: bool = False,
        place: str = "",
    ) -> str:
        """Register a surface form; returns its normalised name ('' if it cannot be an entity).
        A name that titles several documents shows the title of the last by `place`."""
        norm: str = normalize_name(surface)
        if not is_informative(norm):
            return ""
        cand = self._cands.get(norm)
        if cand is None:
            cand = self._cands[norm] = NameCandidate()
        cand.surfaces[surface.strip()] += 1
        cand.kinds[kind] += 1
        if title:
            cand.titles[(place, surface.strip())] += 1
            bare = normalize_name(_PARENTHETICAL.sub("", surface))
            if bare and bare != norm and is_informative(bare):
                cand.aliases[bare] += 1
        for alias in aliases:
            a = normalize_name(alias)
            if a and a != norm and is_informative(a):
                cand.aliases[a] += 1
        self._canon = None
        return norm

    @property
    def candidates(self) -> Mapping[str, NameCandidate]:
        return self._cands

    @property
    def known(self) -> Mapping[str, tuple[str, ...]]:
        return self._known

    def absorb(self, candidates: Mapping[str, NameCandidate]) -> None:
        """Merge names another resolver collected (from another share of the corpus)."""
        merge_candidates(self._cands, candidates)
        self._canon = None

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
        return self.rows_since(None, None)[0]

    def moved_since(self, memo: RowMemo | None, touched: Iterable[str]) -> set[str] | None:
        """The names whose row group or forms can differ from `memo`'s (None: every name).
        `memo`: an earlier resolver's over the same candidates as they were before the names in
        `touched` changed (added, dropped or counted otherwise); besides those, the names
        whose canonical name moved."""
        if memo is None or memo.known != self._known:
            return None
        was = memo.canon
        moved = set(touched)
        moved.update(n for n, group in self._canonical_map().items() if was.get(n) != group)
        return moved

    def rows_since(
        self, memo: RowMemo | None, moved: AbstractSet[str] | None
    ) -> tuple[list[EntityRow], RowMemo]:
        """Every entity's row, and the memo of them for a later resolver. `memo` and `moved`:
        see `moved_since`; the rows of the groups that no moved name is or was in are taken
        from `memo`."""
        canon = self._canonical_map()
        grouped: dict[str, list[str]] = defaultdict(list)
        for norm, group in canon.items():
            grouped[group].append(norm)
        if memo is None or moved is None or memo.known != self._known:
            redo: AbstractSet[str] = grouped.keys()
            kept: Mapping[str, EntityRow] = {}
        else:
            was = memo.canon
            redo = {g for n in moved for g in (canon.get(n), was.get(n)) if g is not None}
            kept = memo.rows
        rows = {
            group: kept[group] if group not in redo else self._row(group, members)
            for group, members in grouped.items()
        }
        return [rows[g] for g in sorted(rows)], RowMemo(canon=canon, known=self._known, rows=rows)

    def _row(self, canon: str, members: Sequence[str]) -> EntityRow:
        known = self._known.get(canon)
        eid = known[0] if known else entity_id(canon)
        cands = [self._cands[m] for m in members]
        surfaces: Counter[str] = Counter()
        kinds: Counter[str] = Counter()
        aliases: set[str] = set(members)
        for c in cands:
            surfaces.update(c.surfaces)
            kinds.update(c.kinds)
            aliases.update(c.aliases)
        # Not the first title met: chunk order is storage order, which updates change.
        titles = [c.title[1] for c in cands if c.title is not None]
        title_surface = max(titles, key=lambda t: (surfaces[t], t)) if titles else ""
        for m in members:
            tail = short_name(m)
            if tail and is_informative(tail):
                aliases.add(tail)
        name = (
            title_surface or max(surfaces.items(), key=lambda kv: (kv[1], kv[0] == canon, kv[0]))[0]
        )
        return EntityRow(
            id=eid, name=name, kind=_pick_kind(kinds), aliases=tuple(sorted(aliases | {canon}))
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class RowMemo:
    """A resolver's rows by canonical name, with the canonical map and the known names they were
    made under (`EntityResolver.rows_since`)."""

    canon: Mapping[str, str]
    known: Mapping[str, tuple[str, ...]]
    rows: Mapping[str, EntityRow]


def _pick_kind(kinds: Counter[str]) -> str:
    specific = [k for k in kinds if k not in ("concept", "title")]
    if specific:
        return min(specific, key=lambda k: (_KIND_PRIORITY.get(k, 10), -kinds[k], k))
    return "title" if "title" in kinds else "concept"


@dataclass(frozen=True, slots=True)
class CollectedNames:
    """The normalised names the structure rules found, for the EXPLAINS edges they imply."""

    titles: dict[str, str]  # document id -> its title's name
    headings: dict[str, str]  # section chunk id -> its heading's name
    definitions: dict[str, list[tuple[str, bool]]]  # chunk id -> (defined name, first sentence)


def document_titles(
    chunks: Sequence[Chunk], documents: Sequence[Document]
) -> dict[str, tuple[str, str]]:
    """Document id -> (its place, its title): the given documents first, in their order, then
    the chunks' documents by their first chunk's id (the order the corpus pass reads them)."""
    titles = {
        d.id: (f"0:{i:012d}", d.title.strip())
        for i, d in enumerate(documents)
        if d.title and d.title.strip()
    }
    for c in sorted(chunks, key=lambda c: c.id):
        if c.doc_id not in titles and c.title.strip():
            titles[c.doc_id] = (f"1:{c.id}", c.title.strip())
    return titles


def collect_names(
    resolver: EntityResolver,
    chunks: Sequence[Chunk],
    titles: Mapping[str, tuple[str, str]],
    mentions: Mapping[str, Sequence[Entity]],
    extractions: Mapping[str, Extraction],
) -> CollectedNames:
    """Register every name the chunks give (titles, headings, definitions, code, errors, an
    extractor's entities and statements) with `resolver`."""
    title_norm: dict[str, str] = {}
    for doc_id, (place, title) in titles.items():
        norm = resolver.add(title, "title", title=True, place=place)
        if norm:
            title_norm[doc_id] = norm
    heading_norm: dict[str, str] = {}
    definitions: dict[str, list[tuple[str, bool]]] = {}
    for c in chunks:
        heading = _add_heading(resolver, c, titles.get(c.doc_id, ("", ""))[1])
        if heading:
            heading_norm[c.id] = heading
        if c.content_type is not ContentType.CODE:
            defs = [
                (resolver.add(name, "concept"), first)
                for name, first in definition_subjects(c.text)
            ]
            definitions[c.id] = [(n, first) for n, first in defs if n]
        _add_code_names(resolver, c)
        _add_extracted_names(resolver, mentions.get(c.id, ()), extractions.get(c.id))
    return CollectedNames(titles=title_norm, headings=heading_norm, definitions=definitions)


def _add_heading(resolver: EntityResolver, chunk: Chunk, title: str) -> str:
    """A section's own heading names a concept unless it is generic or repeats the title."""
    if chunk.level is not Level.SECTION or not chunk.section_path:
        return ""
    heading = chunk.section_path[-1]
    if normalize_name(heading) in GENERIC_HEADINGS or heading.strip() == title:
        return ""
    return resolver.add(heading, "concept")


def _add_code_names(resolver: EntityResolver, chunk: Chunk) -> None:
    for sym in chunk.defined_symbols:
        resolver.add(sym, "symbol")
    for dep in chunk.dependencies:
        resolver.add(
            dep, "module" if not is_code_name(dep) or "." in dep or "::" in dep else "symbol"
        )
    for err in error_names(chunk):
        resolver.add(err, "error")


def _add_extracted_names(
    resolver: EntityResolver, mentions: Iterable[Entity], extraction: Extraction | None
) -> None:
    for ent in mentions:
        resolver.add(ent.name, ent.kind or "concept", aliases=ent.aliases)
    if extraction is None:
        return
    for ent in extraction.entities:
        resolver.add(ent.name, ent.kind or "concept", aliases=ent.aliases)
    for st in extraction.statements:
        resolver.add(st.subject, "concept")
        resolver.add(st.object, "concept")
