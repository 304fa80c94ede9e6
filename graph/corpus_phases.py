"""The corpus pass as map phases over shares of whole documents, and merges of what they count.

The entity layer depends on the whole corpus (which names are entities and how they merge, which
are too common to link, co-occurrence, topics), but almost all of its work is per chunk once a
few corpus-wide tallies are known. So it runs in phases; each maps every share alone, and the
shares' tallies merge (by key: counters add, sets unite, ranked candidates keep the best) into
what the next phase needs:

1. `tally_names`: the names a share gives, whether it holds sections, the reference targets
   its chunks name, its keywords' document frequencies. Merged into a `Lexicon`.
2. `tally_matches`: in how many units and chunks each entity is named, and what the wanted
   reference targets point at. Merged into a `Context` (the generic names, sentence rarity).
3. `share_edges`: document by document (`graph/document_edges.py`), every edge that starts at
   the document's chunks or Document node, and what it adds across documents; counted over the
   share into its `CrossTally` (unit co-occurrence, sentence pair support, keyword pairs, an
   extractor's statements).
4. `corpus_edges`: from the merged cross tallies, the edges between entities, the topics, and
   the entity rows the edges use.

`build_graph` runs the phases over one share; the cluster rebuild (`ingest/corpus_rebuild.py`)
over many, on many workers. Both give the same layer, because every merge is order-free.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol, TypeVar

from rayweave.cluster.settings import GraphSettings
from rayweave.cluster.types import Chunk, Level
from rayweave.graph.comentions import comention_edges
from rayweave.graph.cooccurrence import (
    PairCounts,
    RelatedOf,
    TopicsOf,
    chunk_units,
    document_keywords,
    related_edges,
    topics_from_counts,
)
from rayweave.graph.document_edges import (
    CrossTally,
    DocumentPart,
    Facts,
    cross_tally,
    document_part,
)
from rayweave.graph.edges import (
    EdgeAccumulator,
    TargetRank,
    add_statements,
    reference_keys,
    reference_targets,
)
from rayweave.graph.entities import (
    CollectedNames,
    EntityResolver,
    NameCandidate,
    collect_names,
    document_titles,
    merge_candidates,
    unmerge_candidates,
)
from rayweave.graph.mentions import (
    Gazetteer,
    Match,
    gazetteer,
    generic_from_counts,
    unit_frequencies,
)
from rayweave.graph.schema import (
    EdgeColumns,
    EdgeRow,
    EntityRow,
    GraphBatch,
    NodeLabel,
    NodeRef,
    RelType,
    TopicRow,
)
from rayweave.graph.share import Found, Kept, Share, by_document
from rayweave.graph.tallies import take

_V = TypeVar("_V")

# 1. Names ----------------------------------------------------------------------------------


@dataclass(slots=True)
class NameTally:
    """What phase 1 counts over a share. Every field counts, by chunk or document, so that the
    tally of a share is the sum of its documents' and can be taken back out (`unmerge`): an
    update carries the corpus's tally from the last pass, less what its documents gave then,
    plus what they give now (`graph/name_memo.py`)."""

    candidates: dict[str, NameCandidate] = field(default_factory=dict)
    sections: int = 0  # section chunks
    references: Counter[str] = field(default_factory=Counter)  # chunks naming each target
    keywords: PairCounts = field(default_factory=PairCounts)  # documents per keyword
    surfaces: dict[str, Counter[str]] = field(default_factory=dict)

    @property
    def has_sections(self) -> bool:
        return self.sections > 0

    def merge(self, other: NameTally) -> None:
        merge_candidates(self.candidates, other.candidates)
        self.sections += other.sections
        self.references.update(other.references)
        self.keywords.merge(other.keywords)
        for kw, forms in other.surfaces.items():
            self.surfaces.setdefault(kw, Counter()).update(forms)

    def unmerge(self, other: NameTally) -> None:
        """Take back a tally merged earlier; raises ValueError if `other` holds more."""
        unmerge_candidates(self.candidates, other.candidates)
        self.sections -= other.sections
        take(self.references, other.references)
        self.keywords.unmerge(other.keywords)
        for kw, forms in other.surfaces.items():
            mine = self.surfaces.get(kw)
            if mine is None:
                raise ValueError(f"keyword {kw!r} taken back but never merged")
            take(mine, forms)
            if not mine:
                del self.surfaces[kw]


def tally_names(share: Share) -> NameTally:
    return tally_names_and_kept(share)[0]


def tally_names_and_kept(share: Share) -> tuple[NameTally, Kept]:
    """The share's tally, and what phase 3 reads of it again."""
    resolver = EntityResolver()
    names = _names(resolver, share)
    doc_keywords, surfaces = document_keywords(share.chunks)
    keywords = PairCounts()
    keywords.count_sets(doc_keywords.values())
    tally = NameTally(
        candidates=dict(resolver.candidates),
        sections=sum(c.level is Level.SECTION for c in share.chunks),
        references=Counter(key for c in share.chunks for key in reference_keys((c,))),
        keywords=keywords,
        surfaces=dict(surfaces),
    )
    return tally, Kept(names=names, doc_keywords=doc_keywords)


def _names(resolver: EntityResolver, share: Share) -> CollectedNames:
    titles = document_titles(share.chunks, share.documents)
    return collect_names(resolver, share.chunks, titles, share.mentions, share.extractions)


GazetteerOf = Callable[[EntityResolver, Sequence[EntityRow], int], Gazetteer]


@dataclass(frozen=True)
class Lexicon:
    """The corpus's names: what every share resolves and matches against."""

    resolver: EntityResolver
    rows: tuple[EntityRow, ...]
    has_sections: bool
    references: frozenset[str]
    max_ngram: int
    # How the gazetteer is made: afresh, or patched from an earlier pass's
    # (`graph/gazetteer_delta.py`).
    gazetteer_of: GazetteerOf = field(default=gazetteer, compare=False, repr=False)

    def gazetteer(self) -> Gazetteer:
        return self._gazetteer

    @cached_property
    def _gazetteer(self) -> Gazetteer:  # built once: both the chunks and sentences match it
        return self.gazetteer_of(self.resolver, self.rows, self.max_ngram)

    def matcher(self) -> Callable[[str], dict[str, Match]]:
        return self.gazetteer().match

    def found(self, chunks: Sequence[Chunk]) -> dict[str, dict[str, Match]]:
        match = self.matcher()
        return {c.id: match(c.text) for c in chunks}


class NamesOf(Protocol):
    """How a pass gets its phase 1 and the lexicon of it: `FRESH_NAMES`, or from an earlier
    pass's, per document (`graph/name_memo.py`)."""

    def __call__(self, share: Share, /) -> tuple[NameTally, Kept]: ...

    def lexicon(
        self,
        names: NameTally,
        settings: GraphSettings,
        *,
        known: Mapping[str, Sequence[str]] | None = None,
    ) -> Lexicon: ...


FindMatches = Callable[[Lexicon, Sequence[Chunk]], Found]
"""How a pass gets its chunks' gazetteer matches: `Lexicon.found`, or a memo of an earlier
pass's (`graph/match_memo.py`)."""


def lexicon(
    names: NameTally,
    settings: GraphSettings,
    *,
    known: Mapping[str, Sequence[str]] | None = None,
    rows: Callable[[EntityResolver], Sequence[EntityRow]] = EntityResolver.rows,
    gazetteer_of: GazetteerOf = gazetteer,
) -> Lexicon:
    """The lexicon of `names`, which it takes over (see `EntityResolver`); `rows`: how the
    entity rows are made (`EntityResolver.rows_since` for a pass that reuses an earlier's),
    `gazetteer_of` how its gazetteer is, once asked for."""
    resolver = EntityResolver(known, candidates=names.candidates)
    return Lexicon(
        resolver=resolver,
        rows=tuple(rows(resolver)),
        has_sections=names.has_sections,
        references=frozenset(names.references),
        max_ngram=settings.gazetteer_max_ngram,
        gazetteer_of=gazetteer_of,
    )


class _FreshNames:
    """Phase 1 over every document, and its lexicon."""

    def __call__(self, share: Share, /) -> tuple[NameTally, Kept]:
        return tally_names_and_kept(share)

    def lexicon(
        self,
        names: NameTally,
        settings: GraphSettings,
        *,
        known: Mapping[str, Sequence[str]] | None = None,
    ) -> Lexicon:
        return lexicon(names, settings, known=known)


FRESH_NAMES: NamesOf = _FreshNames()


# 2. Matches --------------------------------------------------------------------------------


@dataclass(slots=True)
class MatchTally:
    units: int = 0
    unit_df: Counter[str] = field(default_factory=Counter)  # units naming each entity
    chunk_df: Counter[str] = field(default_factory=Counter)  # chunks naming each entity
    targets: dict[str, tuple[TargetRank, NodeRef]] = field(default_factory=dict)

    def merge(self, other: MatchTally) -> None:
        self.units += other.units
        self.unit_df.update(other.unit_df)
        self.chunk_df.update(other.chunk_df)
        for key, (rank, ref) in other.targets.items():
            if key not in self.targets or rank < self.targets[key][0]:
                self.targets[key] = (rank, ref)

    def take_counts(self, other: MatchTally) -> None:
        """Take back the counts of a tally merged earlier (not its targets, which keep the
        lowest rank offered and cannot be taken back)."""
        self.units -= other.units
        take(self.unit_df, other.unit_df)
        take(self.chunk_df, other.chunk_df)


def match_counts(chunks: Sequence[Chunk], found: Found, *, has_sections: bool) -> MatchTally:
    """The units and chunks naming each entity among `chunks`, whose matches `found` holds (and
    no other chunk's), without targets. Units never span documents, so the counts of whole
    documents add up to the corpus's."""
    units = chunk_units(chunks, has_sections=has_sections)
    count, unit_df = unit_frequencies(found, units)
    chunk_df = Counter(eid for ents in found.values() for eid in ents)
    return MatchTally(units=count, unit_df=unit_df, chunk_df=chunk_df)


def tally_matches(share: Share, lex: Lexicon, found: Found | None = None) -> MatchTally:
    found = lex.found(share.chunks) if found is None else found
    tally = match_counts(share.chunks, found, has_sections=lex.has_sections)
    tally.targets = reference_targets(share.chunks, share.documents, lex.references)
    return tally


TallyOf = Callable[[Share, Lexicon, Found], MatchTally]
"""How a pass counts its matches: `tally_matches`, or from an earlier pass's counts
(`graph/tally_memo.py`)."""


@dataclass(frozen=True, slots=True)
class Context:
    """The corpus-wide facts phase 3 needs besides the lexicon."""

    generic: frozenset[str]
    chunk_df: Mapping[str, int]
    targets: Mapping[str, NodeRef]
    keywords: PairCounts
    surfaces: Mapping[str, Counter[str]]
    settings: GraphSettings


def context(names: NameTally, matches: MatchTally, settings: GraphSettings) -> Context:
    return Context(
        generic=frozenset(
            generic_from_counts(matches.units, matches.unit_df, settings.gazetteer_max_df)
        ),
        chunk_df=dict(matches.chunk_df),
        targets={key: ref for key, (_, ref) in matches.targets.items()},
        keywords=names.keywords,
        surfaces=names.surfaces,
        settings=settings,
    )


# 3. Edges of a share -----------------------------------------------------------------------


def facts(lex: Lexicon, ctx: Context) -> Facts:
    """What phase 3 reads of the corpus, from phases 1 and 2 (the gazetteer built once)."""
    df, least = ctx.keywords.df, ctx.settings.topic_min_support

    def frequent(keyword: str) -> bool:
        return df[keyword] >= least

    return Facts(
        resolver=lex.resolver,
        match=lex.matcher(),
        symbols=frozenset(r.id for r in lex.rows if r.kind == "symbol"),
        generic=ctx.generic,
        targets=ctx.targets,
        frequent=frequent,
        has_sections=lex.has_sections,
        settings=ctx.settings,
    )


@dataclass(frozen=True, slots=True)
class Parts:
    """The documents' phase 3; `units`: their units' co-occurrence counts, when whoever made
    the parts has them without counting every document, `related` what scores RELATED_TO of
    those and `topics` what makes the topics (`graph/edge_memo.py`)."""

    parts: list[DocumentPart]
    units: PairCounts | None = None
    related: RelatedOf = related_edges
    topics: TopicsOf = topics_from_counts


@dataclass(frozen=True, slots=True)
class ShareEdges:
    edges: list[EdgeRow]  # every edge from the share's chunks and documents, final
    cross: CrossTally
    related: RelatedOf = related_edges  # how phase 4 scores `cross.units`
    topics: TopicsOf = topics_from_counts  # and makes the topics


PartsOf = Callable[[Share, Facts, Found, Kept], Parts]
"""How a pass gets its documents' phase 3 parts: `document_parts`, or a memo of an earlier
pass's (`graph/edge_memo.py`)."""


def document_parts(share: Share, facts: Facts, found: Found, kept: Kept) -> Parts:
    return Parts(
        [document_part(d, one, facts, found, own) for d, one, own in by_document(share, kept)]
    )


def share_edges(
    share: Share,
    lex: Lexicon,
    ctx: Context,
    found: Found | None = None,
    kept: Kept | None = None,
    *,
    parts_of: PartsOf | None = None,
) -> ShareEdges:
    """Phase 3, document by document (`graph/document_edges.py`). `found` and `kept`: the
    share's gazetteer matches and what phase 1 read off it, when an earlier phase kept them;
    `parts_of`: how the documents' parts are got (default `document_parts`; a memo leaves out
    the edges of the documents it reuses, which the store already holds)."""
    chunks = share.chunks
    found = lex.found(chunks) if found is None else found
    if kept is None:
        kept = Kept(
            names=_names(EntityResolver(), share), doc_keywords=document_keywords(chunks)[0]
        )
    made = (parts_of or document_parts)(share, facts(lex, ctx), found, kept)
    tallies = (p.tally for p in made.parts)
    return ShareEdges(
        edges=[e for p in made.parts for e in p.edges],
        cross=cross_tally(tallies, ctx.chunk_df, ctx.settings, units=made.units),
        related=made.related,
        topics=made.topics,
    )


# 4. Edges across shares --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CorpusEdges:
    edges: list[EdgeRow]  # but co-occurrence's
    related: EdgeColumns  # RELATED_TO by co-occurrence, none repeating a pair of `edges`
    topics: list[TopicRow]
    entities: list[EntityRow]  # those any edge of the corpus uses


def corpus_layer(
    cross: CrossTally,
    lex: Lexicon,
    ctx: Context,
    *,
    related_of: RelatedOf = related_edges,
    topics_of: TopicsOf = topics_from_counts,
) -> CorpusEdges:
    """Edges between entities (an extractor's statements, co-occurrence, sentences), topics with
    their documents, and the entity rows that any edge of the corpus uses (`related_of`: how
    co-occurrence is scored, `topics_of` how topics are made, by default afresh)."""
    cfg = ctx.settings
    acc = EdgeAccumulator()
    add_statements(acc, cross.statements)
    related = related_of(cross.units, cfg)
    said = {(s.id, d.id) for rel, s, d in acc.rows if rel is RelType.RELATED_TO}
    if said:  # a pair a statement names too merges with it, as a row
        related, rows = _split(related, said)
        for e in rows:
            acc.add_row(e)
    keywords = PairCounts(sets=ctx.keywords.sets, df=ctx.keywords.df, joint=cross.keyword_pairs)
    topics, belongs = topics_of(keywords, ctx.surfaces, cross.doc_keywords, cfg)
    for e in belongs:
        acc.add_row(e)
    if cfg.sentence_links:
        for e in comention_edges(cross.support, ctx.chunk_df):
            acc.rows[(e.rel, e.src, e.dst)] = e  # one rule makes these, one edge per pair
    edges = list(acc.rows.values())
    wanted = set(cross.entities) | set(related.src) | set(related.dst)
    wanted |= {ref.id for e in edges for ref in (e.src, e.dst) if ref.label is NodeLabel.ENTITY}
    entities = [r for r in lex.rows if r.id in wanted]
    return CorpusEdges(edges=edges, related=related, topics=topics, entities=entities)


def _split(
    cols: EdgeColumns, pairs: AbstractSet[tuple[str, str]]
) -> tuple[EdgeColumns, list[EdgeRow]]:
    """`cols` without `pairs`, and those as rows."""
    apart = [i for i, pair in enumerate(zip(cols.src, cols.dst, strict=True)) if pair in pairs]
    if not apart:
        return cols, []
    gone = set(apart)
    kept = [i for i in range(len(cols)) if i not in gone]
    return _select(cols, kept), _select(cols, apart).rows()


def _select(cols: EdgeColumns, at: Sequence[int]) -> EdgeColumns:
    def pick(values: Sequence[_V]) -> list[_V]:
        return [values[i] for i in at]

    return dataclasses.replace(
        cols,
        src=pick(cols.src),
        dst=pick(cols.dst),
        weight=pick(cols.weight),
        confidence=pick(cols.confidence),
        count=pick(cols.count),
    )


def corpus_edges(
    cross: CrossTally, lex: Lexicon, ctx: Context
) -> tuple[list[EdgeRow], list[TopicRow], list[EntityRow]]:
    """`corpus_layer` with every edge as a row."""
    layer = corpus_layer(cross, lex, ctx)
    return [*layer.edges, *layer.related.rows()], layer.topics, layer.entities


def build_in_one(
    share: Share,
    settings: GraphSettings,
    *,
    known: Mapping[str, Sequence[str]] | None = None,
    names_of: NamesOf | None = None,
    find: FindMatches | None = None,
    tally: TallyOf | None = None,
    parts_of: PartsOf | None = None,
    columns: bool = False,
) -> GraphBatch:
    """Every phase over one share, the gazetteer pass run once (`names_of`: phase 1 and its
    lexicon, default `FRESH_NAMES`; `find`: the gazetteer pass, default `Lexicon.found`;
    `tally`: phase 2's counts of it, default `tally_matches`; `parts_of`: see `share_edges`;
    `columns`: co-occurrence's edges as the batch's columns)."""
    names_of = names_of or FRESH_NAMES
    names, kept = names_of(share)
    lex = names_of.lexicon(names, settings, known=known)
    found = (find or Lexicon.found)(lex, share.chunks)
    ctx = context(names, (tally or tally_matches)(share, lex, found), settings)
    part = share_edges(share, lex, ctx, found, kept, parts_of=parts_of)
    layer = corpus_layer(part.cross, lex, ctx, related_of=part.related, topics_of=part.topics)
    related = (layer.related,) if columns else ()
    return GraphBatch(
        entities=tuple(layer.entities),
        topics=tuple(layer.topics),
        edges=(*part.edges, *layer.edges, *(() if columns else layer.related.rows())),
        columns=related,
    )


class _Tally(Protocol):
    def merge(self, other: Any, /) -> None: ...


_T = TypeVar("_T", bound=_Tally)


def merge_all(tallies: Iterable[_T]) -> _T:
    """One tally of a kind from many (the first absorbs the rest)."""
    it = iter(tallies)
    first = next(it)
    for t in it:
        first.merge(t)
    return first


def build_in_shares(shares: Sequence[Share], settings: GraphSettings) -> GraphBatch:
    """Every phase share by share, merging between phases: what the cluster rebuild computes,
    in one process (for tests and small corpora)."""
    names = merge_all(tally_names(s) for s in shares)
    lex = lexicon(names, settings)
    ctx = context(names, merge_all(tally_matches(s, lex) for s in shares), settings)
    parts = [share_edges(s, lex, ctx) for s in shares]
    edges, topics, entities = corpus_edges(merge_all(p.cross for p in parts), lex, ctx)
    own = [e for p in parts for e in p.edges]
    return GraphBatch(entities=tuple(entities), topics=tuple(topics), edges=(*own, *edges))
