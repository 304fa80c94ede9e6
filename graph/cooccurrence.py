"""Edges from co-occurrence: entities that keep appearing together are RELATED_TO, and chunk
keywords that keep appearing together form topics that documents BELONG_TO.

Co-occurrence is counted per unit (a section with its propositions, or a lone chunk) and scored
by normalised pointwise mutual information, so a pair is related when it co-occurs more often
than the two names' frequencies predict, not merely often.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from itertools import combinations, repeat
from operator import itemgetter
from typing import TypeVar

import numpy as np

from rayweave.cluster.settings import GraphSettings
from rayweave.cluster.types import Chunk, Level, stable_id
from rayweave.graph.edges import chunk_ref
from rayweave.graph.names import is_informative, normalize_name
from rayweave.graph.schema import (
    EdgeColumns,
    EdgeRow,
    EdgeSource,
    NodeLabel,
    NodeRef,
    RelType,
    TopicRow,
)
from rayweave.graph.tallies import take, take_each

_MAX_UNIT_ENTITIES = 64
_Pair = TypeVar("_Pair")


def corpus_scale(count: int) -> float:
    """The corpus size that frequency statistics divide by: `count` rounded up to a step of
    2**(1/4) (19%). NPMI and frequency fractions then move when the corpus grows or shrinks by
    a step, not with every document: an update rewrites the co-occurrence weights once per
    step instead of each time, and a fresh ingest of the same documents takes the same step.
    Within a step the scale is at most 19% above the count: log-odds shift by at most 0.17."""
    if count <= 0:
        return 0.0
    return float(2.0 ** (math.ceil(4 * math.log2(count) - 1e-9) / 4))


def npmi(joint: int, a: int, b: int, total: float) -> float:
    """Normalised pointwise mutual information in [-1, 1] from co-occurrence counts."""
    if joint <= 0 or total <= 0:
        return -1.0
    p_ab = joint / total
    if p_ab >= 1.0:
        return 1.0
    pmi = math.log(p_ab / ((a / total) * (b / total)))
    return max(-1.0, min(1.0, pmi / -math.log(p_ab)))


@dataclass(slots=True)
class PairCounts:
    """Co-occurrence tallies over sets of names (units, or documents' keywords): how many sets,
    how many hold each name, how many hold each pair. Tallies of disjoint shares of a corpus
    add up to the corpus's (`merge`)."""

    sets: int = 0
    df: Counter[str] = field(default_factory=Counter)
    joint: Counter[tuple[str, str]] = field(default_factory=Counter)

    def count_sets(self, sets: Iterable[AbstractSet[str]]) -> None:
        for names in sets:
            self.sets += 1
            self.df.update(names)

    def count_pairs(self, sets: Iterable[AbstractSet[str]]) -> None:
        # `Counter.update` counts an iterable in C: 0.74 s against 1.15 s for a loop of `+= 1`
        # over the 3.2M pairs of 10k documents' units.
        for names in sets:
            self.joint.update(combinations(sorted(names), 2))

    def merge(self, other: PairCounts) -> None:
        self.sets += other.sets
        self.df.update(other.df)
        self.joint.update(other.joint)

    def count(self, sets: Sequence[AbstractSet[str]]) -> None:
        """`count_sets` and `count_pairs`."""
        self.count_sets(sets)
        self.count_pairs(sets)

    def uncount(self, sets: Iterable[AbstractSet[str]]) -> None:
        """Take back what `count` counted of these sets: the counts of the other sets remain,
        with no name or pair left at 0 (as if these had never been counted)."""
        for names in sets:
            self.sets -= 1
            take_each(self.df, names)
            take_each(self.joint, combinations(sorted(names), 2))

    def unmerge(self, other: PairCounts) -> None:
        """Take back a tally merged earlier (see `uncount`)."""
        self.sets -= other.sets
        take(self.df, other.df)
        take(self.joint, other.joint)


def chunk_units(
    chunks: Sequence[Chunk], *, has_sections: bool | None = None
) -> dict[NodeRef, NodeRef]:
    """Map each chunk to its co-occurrence unit: its section (propositions roll up to their parent
    section), else itself; document summaries form no unit (they repeat their sections).
    `has_sections`: whether the corpus holds any section (default: whether `chunks` do)."""
    by_id = {c.id: c for c in chunks}
    if has_sections is None:
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


def unit_entities(edges: Iterable[EdgeRow], units: Mapping[NodeRef, NodeRef]) -> list[set[str]]:
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


def related_edges(counts: PairCounts, settings: GraphSettings) -> EdgeColumns:
    """RELATED_TO between entities that co-occur in at least `related_min_support` units with a
    normalised PMI of at least `related_min_npmi`; the strongest `related_max_per_entity` per
    entity.

    Weight and confidence are the NPMI damped by support (count / (count + 1)), below 1; the
    NPMI itself is not kept (nothing reads it, and 10k documents keep 250k of these edges). Each
    edge is stored once, from the smaller id to the larger; traversals follow it both ways.
    Scored and ordered as arrays of name ranks: 10k documents make 1.5M co-occurring pairs, over
    which a loop of `npmi` calls and a sort of tuples took most of this step. Handed on as
    columns (`EdgeColumns`): an `EdgeRow` each took half of what was left. An upkeep keeps them
    by delta instead (`graph/related_delta.py`).
    """
    return scored_related(counts, settings).columns()


RelatedOf = Callable[[PairCounts, GraphSettings], EdgeColumns]
"""How a pass scores RELATED_TO of its units' counts: `related_edges`, or by delta from the last
pass's (`graph/related_delta.py`)."""


@dataclass(frozen=True, slots=True)
class ScoredRelated:
    """The kept RELATED_TO pairs as name ranks (`a` < `b`), strongest first."""

    names: list[str]  # sorted: a name's rank orders as the name does
    a: np.ndarray
    b: np.ndarray
    strength: np.ndarray
    joint: np.ndarray

    def columns(self) -> EdgeColumns:
        name = self.names.__getitem__
        return related_columns(
            list(map(name, self.a.tolist())),
            list(map(name, self.b.tolist())),
            list(map(round, self.strength.tolist(), repeat(6))),  # as `EdgeAccumulator` stores
            self.joint.astype(np.int64).tolist(),
        )


def scored_related(counts: PairCounts, settings: GraphSettings) -> ScoredRelated:
    """`related_edges`'s pairs, before they are made columns."""
    total = corpus_scale(counts.sets)
    names = sorted(counts.df)
    if total == 0:
        none = np.zeros(0, dtype=np.int64)
        return ScoredRelated(names, none, none, np.zeros(0), np.zeros(0))
    rank = {name: i for i, name in enumerate(names)}.__getitem__
    # Mapped in C (`map`, `fromiter`) over every pair: a generator per array took 0.7 s of the
    # 1.8 s this step took at 10k documents.
    keys = list(counts.joint)
    joint = np.fromiter(counts.joint.values(), dtype=np.float64, count=len(keys))
    a = np.fromiter(map(rank, map(itemgetter(0), keys)), dtype=np.int64, count=len(keys))
    b = np.fromiter(map(rank, map(itemgetter(1), keys)), dtype=np.int64, count=len(keys))
    df = np.fromiter(map(counts.df.__getitem__, names), dtype=np.float64, count=len(names))
    support = joint >= settings.related_min_support
    a, b, joint = a[support], b[support], joint[support]
    ok, strength = related_strength(joint, df[a], df[b], total, settings)
    a, b, joint, strength = a[ok], b[ok], joint[ok], strength[ok]
    order = np.lexsort((b, a, -strength))  # strongest first, ties by the names
    kept = order[_capped(a[order].tolist(), b[order].tolist(), settings.related_max_per_entity)]
    return ScoredRelated(names, a[kept], b[kept], strength[kept], joint[kept])


def related_strength(
    joint: np.ndarray, a: np.ndarray, b: np.ndarray, total: float, settings: GraphSettings
) -> tuple[np.ndarray, np.ndarray]:
    """Which pairs of these counts (each joint count at least 1) pass `related_min_npmi`, and
    every pair's strength: the NPMI damped by support. Element by element, so a pair scores the
    same alone as among all pairs (what `graph/related_delta.py` relies on)."""
    score = _npmi_array(joint, a, b, total)
    return score >= settings.related_min_npmi, np.maximum(score, 0.0) * (joint / (joint + 1.0))


def related_columns(
    src: list[str], dst: list[str], strength: list[float], count: list[int]
) -> EdgeColumns:
    return EdgeColumns(
        rel=RelType.RELATED_TO,
        source=EdgeSource.COOCCURRENCE,
        src=src,
        dst=dst,
        weight=strength,
        confidence=strength,  # below 1, so the same
        count=count,
    )


def _capped(a: list[int], b: list[int], cap: int) -> list[int]:
    """`strongest_per_entity` over pairs of name ranks: the positions of the pairs kept. A list
    of counts indexed by rank, in one loop, where the generic version's `Counter` and generator
    took 0.5 s over 10k documents' 1.3M ranked pairs."""
    kept = [0] * (max(max(a, default=-1), max(b, default=-1)) + 1)
    out: list[int] = []
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if kept[x] < cap and kept[y] < cap:
            kept[x] += 1
            kept[y] += 1
            out.append(i)
    return out


def _npmi_array(joint: np.ndarray, a: np.ndarray, b: np.ndarray, total: float) -> np.ndarray:
    """`npmi` over arrays of counts, each joint count at least 1."""
    p_ab = joint / total
    with np.errstate(divide="ignore", invalid="ignore"):
        pmi = np.log(p_ab / ((a / total) * (b / total)))
        score = np.clip(pmi / -np.log(p_ab), -1.0, 1.0)
    return np.where(p_ab >= 1.0, 1.0, score)


def strongest_per_entity(
    ranked: Iterable[_Pair], cap: int, ends: Callable[[_Pair], tuple[Hashable, Hashable]]
) -> Iterator[_Pair]:
    """The pairs of `ranked` (strongest first) whose two `ends` each have fewer than `cap` pairs
    kept so far: every entity keeps its strongest, and a hub's fan-out is bounded."""
    kept: Counter[Hashable] = Counter()
    for pair in ranked:
        a, b = ends(pair)
        if kept[a] >= cap or kept[b] >= cap:
            continue
        kept[a] += 1
        kept[b] += 1
        yield pair


def topics_from_counts(
    counts: PairCounts,
    surface: Mapping[str, Counter[str]],
    doc_keywords: Mapping[str, set[str]],
    settings: GraphSettings,
) -> tuple[list[TopicRow], list[EdgeRow]]:
    """Topics as clusters of chunk keywords, and Document -BELONGS_TO-> Topic edges.

    Keywords seen in at least `topic_min_support` documents link to their strongest partner by
    NPMI over documents (when at least `topic_min_npmi`); the connected groups of those links are
    the topics. A document belongs to a topic with the share of the topic's keywords it has.
    `counts` holds every keyword's document frequency and the pairs of frequent ones;
    `doc_keywords` each document's frequent keywords.
    """
    topics = keyword_topics(counts, surface, settings)
    return topics, belongs_edges(topics, doc_keywords)


TopicsOf = Callable[
    [PairCounts, Mapping[str, Counter[str]], Mapping[str, set[str]], GraphSettings],
    tuple[list[TopicRow], list[EdgeRow]],
]
"""How a pass makes its topics and BELONGS_TO edges: `topics_from_counts`, or by delta from the
last pass's (`graph/topic_delta.py`), whose edges are then only those that can have changed."""


def keyword_topics(
    counts: PairCounts, surface: Mapping[str, Counter[str]], settings: GraphSettings
) -> list[TopicRow]:
    """The topics of `topics_from_counts`, by id; each lists all its keywords."""
    df = counts.df
    topics: list[TopicRow] = []
    for members in _connected_groups(_keyword_partners(counts, settings)):
        if len(members) < 2:
            continue
        ranked = sorted(members, key=lambda k: (-df[k], k))
        tid = stable_id("topic", *sorted(members))
        # The commonest surface form; ties by the form, not by which document came first.
        names = [min(surface[k].items(), key=lambda kv: (-kv[1], kv[0]))[0] for k in ranked[:3]]
        topics.append(TopicRow(id=tid, name=", ".join(names), keywords=tuple(ranked)))
    topics.sort(key=lambda t: t.id)
    return topics


def belongs_edges(
    topics: Sequence[TopicRow], doc_keywords: Mapping[str, AbstractSet[str]]
) -> list[EdgeRow]:
    """Every document's BELONGS_TO edge to each topic it shares a keyword with."""
    docs_with: dict[str, list[str]] = defaultdict(list)  # keyword -> documents, by id
    for doc_id in sorted(doc_keywords):
        for kw in doc_keywords[doc_id]:
            docs_with[kw].append(doc_id)
    edges: list[EdgeRow] = []
    for topic in topics:
        members = frozenset(topic.keywords)
        for doc_id in sorted({d for k in members for d in docs_with.get(k, ())}):
            row = belongs_edge(topic.id, members, doc_id, doc_keywords[doc_id])
            if row is not None:
                edges.append(row)
    return edges


def belongs_edge(
    tid: str, members: AbstractSet[str], doc_id: str, keywords: AbstractSet[str]
) -> EdgeRow | None:
    """The document's BELONGS_TO edge to the topic of `members` (None: no keyword shared)."""
    shared = len(keywords & members)
    if not shared:
        return None
    share = round(shared / len(members), 6)
    return EdgeRow(
        rel=RelType.BELONGS_TO,
        src=NodeRef(NodeLabel.DOCUMENT, doc_id),
        dst=NodeRef(NodeLabel.TOPIC, tid),
        weight=share,
        confidence=share,
        source=EdgeSource.KEYWORDS,
        count=shared,
    )


def document_keywords(
    chunks: Sequence[Chunk],
) -> tuple[dict[str, set[str]], dict[str, Counter[str]]]:
    """Each document's normalised keywords, and each keyword's surface forms with counts."""
    doc_keywords: dict[str, set[str]] = defaultdict(set)
    surface: dict[str, Counter[str]] = defaultdict(Counter)
    for c in chunks:
        for kw in c.keywords:
            norm = normalize_name(kw)
            if is_informative(norm):
                doc_keywords[c.doc_id].add(norm)
                surface[norm][kw.strip()] += 1
    return doc_keywords, surface


def _keyword_partners(counts: PairCounts, settings: GraphSettings) -> dict[str, tuple[float, str]]:
    """keyword -> (NPMI, partner) for each frequent keyword's strongest frequent partner."""
    total = corpus_scale(counts.sets)
    best: dict[str, tuple[float, str]] = {}
    for (a, b), n in counts.joint.items():
        if n < settings.topic_min_support:
            continue
        score = npmi(n, counts.df[a], counts.df[b], total)
        if score < settings.topic_min_npmi:
            continue
        for x, y in ((a, b), (b, a)):
            if x not in best or (score, y) > best[x]:
                best[x] = (score, y)
    return best


def _connected_groups(best: Mapping[str, tuple[float, str]]) -> list[set[str]]:
    """The connected groups of the keyword -> partner links (union-find, smallest key as root)."""
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
    return list(clusters.values())
