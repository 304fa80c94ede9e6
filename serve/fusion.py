"""Rank fusion: pure functions over ranked lists of hits, plus aggregation to coarser units.

Reciprocal rank fusion (Cormack, Clarke and Büttcher, SIGIR 2009) scores a hit by
`sum_l w_l / (k + rank_l)`: it needs no score calibration between retrievers, and `k` (60 in
the paper) damps the advantage of the very top ranks. Weights matter: on code search an equally
weighted weak lexical list drags dense MRR down by a quarter (shared data README), so profiles
give each list its own weight.

Weighted score fusion min-max normalises each list's scores and sums them with weights; it keeps
score gaps that RRF discards, at the price of trusting each retriever's score scale. Distribution-
based score fusion (DBSF, as Qdrant offers it) normalises each list by its mean +- 3 standard
deviations instead, so that one outlying score does not squash the rest of its list.

Lists arrive resolved to one unit per passage (`serve/views.py`); fusion merges the evidence
(which levels and chunks matched) of a unit's hits from every list.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Protocol

from rayweave.cluster.settings import RetrievalSettings
from rayweave.cluster.types import GraphPath, Hit
from rayweave.serve.views import LIST_RANK, MATCHED_IDS, MATCHED_LEVELS, merged_evidence

FusionMethod = Literal["rrf", "weighted", "dbsf"]


class FusionPlan(Protocol):
    """What fusion reads of a request's plan (`serve.search.RetrievalPlan`)."""

    @property
    def weights(self) -> Mapping[str, float]: ...

    @property
    def anchor_top(self) -> int: ...


Scored = tuple[dict[str, list[Hit]], dict[str, list[float]]]
"""Each list deduplicated, and what each of its hits adds to the hit's fused score."""


def _rrf_scored(lists: Mapping[str, Sequence[Hit]], weights: Mapping[str, float], k: int) -> Scored:
    if k < 0:
        raise ValueError("rrf k must be >= 0")
    deduped = {name: _dedup(hits) for name, hits in lists.items()}
    contributions = {
        name: [
            weights.get(name, 1.0) / (k + int(h.metadata.get(LIST_RANK, rank)))
            for rank, h in enumerate(hits, start=1)
        ]
        for name, hits in deduped.items()
    }
    return deduped, contributions


def _score_scored(
    lists: Mapping[str, Sequence[Hit]],
    weights: Mapping[str, float],
    limits: Callable[[list[float]], tuple[float, float]],
) -> Scored:
    """Each list's scores mapped onto [0, 1] between its `limits`, times its weight."""
    contributions: dict[str, list[float]] = {}
    deduped = {name: _dedup(hits) for name, hits in lists.items()}
    for name, hits in deduped.items():
        if not hits:
            contributions[name] = []
            continue
        values = [h.score for h in hits]
        lo, hi = limits(values)
        span = hi - lo
        w = weights.get(name, 1.0)
        contributions[name] = [
            w * (min(max((v - lo) / span, 0.0), 1.0) if span > 0 else 1.0) for v in values
        ]
    return deduped, contributions


def _min_max(values: list[float]) -> tuple[float, float]:
    return min(values), max(values)


def _three_sigma(values: list[float]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    return mean - 3 * sd, mean + 3 * sd


def _scored(
    lists: Mapping[str, Sequence[Hit]],
    method: FusionMethod,
    weights: Mapping[str, float] | None,
    k: int,
) -> Scored:
    if method == "rrf":
        return _rrf_scored(lists, weights or {}, k)
    if method == "weighted":
        return _score_scored(lists, weights or {}, _min_max)
    if method == "dbsf":
        return _score_scored(lists, weights or {}, _three_sigma)
    raise ValueError(f"unknown fusion method {method!r}; valid: 'rrf', 'weighted', 'dbsf'")


def _ranking(scored: Scored) -> list[tuple[str, float]]:
    """(id, fused score), best first; equal scores by id."""
    deduped, contributions = scored
    scores: dict[str, float] = {}
    for name, hits in deduped.items():
        for hit, value in zip(hits, contributions[name], strict=True):
            scores[hit.id] = scores.get(hit.id, 0.0) + value
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def _accumulate(scored: Scored) -> list[Hit]:
    deduped, _ = scored
    found: dict[str, list[tuple[str, Hit]]] = {}  # id -> (list, its hit) in list order
    for name, hits in deduped.items():
        for hit in hits:
            found.setdefault(hit.id, []).append((name, hit))
    fused = []
    for i, s in _ranking(scored):
        entries = found[i]
        name, first = entries[0]
        if len(entries) == 1:  # found by one list: most candidates, and the cheap case
            own = first.retrievers
            retrievers = tuple(dict.fromkeys((*own, name))) if own else (name,)
            paths = tuple(dict.fromkeys(first.paths)) if len(first.paths) > 1 else first.paths
            fused.append(first.evolve(score=s, retrievers=retrievers, paths=paths))
            continue
        retrievers = tuple(dict.fromkeys(r for name, h in entries for r in (*h.retrievers, name)))
        paths = tuple(dict.fromkeys(p for _, h in entries for p in h.paths))
        evidence = _evidence(first, [h for _, h in entries])
        fused.append(first.evolve(score=s, retrievers=retrievers, paths=paths, metadata=evidence))
    return fused


def _evidence(first: Hit, hits: list[Hit]) -> dict[str, Any]:
    """The first list's metadata, with what every list's hit says matched (a hit kept as found
    names only itself)."""
    if len(hits) == 1 or not any(MATCHED_LEVELS in h.metadata for h in hits):
        return first.metadata
    return {**first.metadata, **merged_evidence(hits)}


def reciprocal_rank_fusion(
    lists: Mapping[str, Sequence[Hit]], *, weights: Mapping[str, float] | None = None, k: int = 60
) -> list[Hit]:
    """Fuse ranked lists by weighted reciprocal rank; lists missing from `weights` weigh 1."""
    return _accumulate(_rrf_scored(lists, weights or {}, k))


def weighted_score_fusion(
    lists: Mapping[str, Sequence[Hit]], *, weights: Mapping[str, float] | None = None
) -> list[Hit]:
    """Sum of min-max-normalised scores times weights. A constant list counts 1 per hit."""
    return _accumulate(_score_scored(lists, weights or {}, _min_max))


def fuse(
    lists: Mapping[str, Sequence[Hit]],
    *,
    method: FusionMethod = "rrf",
    weights: Mapping[str, float] | None = None,
    k: int = 60,
) -> list[Hit]:
    return _accumulate(_scored(lists, method, weights, k))


def _dedup(hits: Sequence[Hit]) -> list[Hit]:
    """Keep each id's best (first) rank within one list."""
    seen: set[str] = set()
    out = []
    for h in hits:
        if h.id not in seen:
            seen.add(h.id)
            out.append(h)
    return out


def aggregate(
    hits: Sequence[Hit], *, by: Literal["doc_id", "section"] = "doc_id", decay: float = 0.5
) -> list[Hit]:
    """Collapse chunk hits to one hit per document (or section): the best chunk represents it,
    scored `best + decay * sum(others)` so that several matching chunks lift their document
    without letting a long document win on volume alone (decay applies geometrically by rank).
    """
    groups: dict[str, list[Hit]] = {}
    for h in hits:
        key = h.doc_id if by == "doc_id" else (h.metadata.get("section_id") or h.id)
        groups.setdefault(str(key), []).append(h)
    out = []
    for members in groups.values():
        members.sort(key=lambda h: -h.score)
        score = sum(m.score * (decay**i) for i, m in enumerate(members))
        best = members[0]
        retrievers = tuple(dict.fromkeys(r for m in members for r in m.retrievers))
        out.append(best.evolve(score=score, retrievers=retrievers))
    out.sort(key=lambda h: (-h.score, h.id))
    return out


def split_per_document(
    hits: Sequence[Hit], *, max_per_document: int
) -> tuple[list[Hit], list[Hit]]:
    """(each document's first `max_per_document` hits, the rest), both in order; 0 = no cap."""
    if max_per_document <= 0:
        return list(hits), []
    seen: dict[str, int] = {}
    head: list[Hit] = []
    tail: list[Hit] = []
    for h in hits:
        seen[h.doc_id] = seen.get(h.doc_id, 0) + 1
        (head if seen[h.doc_id] <= max_per_document else tail).append(h)
    return head, tail


def cap_per_document(hits: Sequence[Hit], *, max_per_document: int) -> list[Hit]:
    """Move each document's hits beyond the first `max_per_document` below every other hit,
    keeping relative order; scores are capped so that the list stays sorted."""
    if max_per_document <= 0:
        return list(hits)
    head, tail = split_per_document(hits, max_per_document=max_per_document)
    out: list[Hit] = []
    for h in head + tail:
        if out and h.score > out[-1].score:
            h = h.evolve(score=out[-1].score)
        out.append(h)
    return out


def collapse_duplicates(hits: Sequence[Hit]) -> list[Hit]:
    """Fold hits whose text (whitespace aside) equals an earlier hit's into it, and passages
    that hold, or are held by, an earlier kept passage in each document they occur in.

    Copies of one passage in several documents (a vendored file, the same corpus ingested from
    two checkouts) would otherwise fill the page with one answer; the kept, best-ranked hit
    names the copies' sources so nothing is hidden. The level does not matter: a function that
    is both a section and its only proposition says the same thing twice, and a method ranked
    above (or below) the class section that holds it shows the same first lines twice. Copies
    are grouped before containment is judged, so the outcome does not depend on which copy of
    a passage ranked first (near-tied copies swap places from run to run). Order and scores are
    kept.
    """
    groups: dict[str, list[Hit]] = {}
    order: list[str | int] = []  # text keys, or the position of a textless hit (images)
    for i, h in enumerate(hits):
        key = " ".join(h.text.split())
        if not key:
            order.append(i)
        elif key not in groups:
            groups[key] = [h]
            order.append(key)
        else:
            groups[key].append(h)

    out: list[Hit] = []
    held: dict[str, list[str]] = {}  # document -> kept texts it holds
    for entry in order:
        if isinstance(entry, int):
            out.append(hits[entry])
            continue
        copies = groups[entry]
        docs = list(dict.fromkeys(c.doc_id for c in copies))
        if all(any(entry in k or k in entry for k in held.get(d, ())) for d in docs):
            continue
        for d in docs:
            held.setdefault(d, []).append(entry)
        first = copies[0]
        others = [
            s
            for c in copies
            if c.doc_id != first.doc_id
            for s in (c.source or c.doc_id, *c.duplicates)
        ]
        out.append(first.evolve(duplicates=tuple(dict.fromkeys((*first.duplicates, *others)))))
    return out


VECTOR_LISTS = frozenset({"dense", "sparse", "hierarchical"})
# The graph's first bridge hop from each seed: read by `promote_linked`, never fused as a vote.
LINKS = "bridge-links"
# The graph walk when facts seeded it (`serve/graph_retriever.py`); `fact_ranking` decides.
FACT_WALK = "graph-facts"
# Marks the facts (and the walk they seeded) of a namespace with fewer facts per section than
# `serve.retrieval.fact_walk_min_facts` (`serve/fact_search.py`): an 'auto' ranking then fuses.
SPARSE_FACTS = "sparse_facts"


def walk_first(walk: Sequence[Hit], fused: Sequence[Hit]) -> list[Hit]:
    """The walk's ranking, then the fused hits it left out: with facts for seeds the walk is the
    ranking (its restart already holds the top vector passages at a small weight), and fusing
    it again with the vector lists would count the dense signal twice (HippoRAG 2)."""
    ids = {h.id for h in walk}
    rest = [h for h in fused if h.id not in ids]
    return _raised(list(walk), rest[0].score if rest else 0.0) + rest


def _raised(head: Sequence[Hit], floor: float) -> list[Hit]:
    """`head` with scores raised just enough to stay sorted above `floor` (clients read scores
    as a ranking)."""
    out: list[Hit] = []
    for h in reversed(head):
        floor = max(h.score, floor)
        out.append(h.evolve(score=floor))
    return out[::-1]


def anchored_fusion(
    lists: Mapping[str, Sequence[Hit]],
    *,
    anchor_top: int,
    method: FusionMethod = "rrf",
    weights: Mapping[str, float] | None = None,
    k: int = 60,
) -> list[Hit]:
    """Fuse every list, but let the top `anchor_top` hits of the vector lists alone lead.

    Graph and web lists are recall devices: they find passages the question does not resemble,
    yet under RRF a short graph list's rank 1 outvotes a dense rank 1, and the best single answer
    is the vector lists' to give (the README's evaluation measures both effects). Anchoring keeps
    the vector lists' best answer first and lets the other lists reorder what follows.
    """
    fused = fuse(lists, method=method, weights=weights, k=k)
    vector = {name: hits for name, hits in lists.items() if name in VECTOR_LISTS}
    if anchor_top <= 0 or not vector or len(vector) == len(lists):
        return fused
    by_id = {h.id: h for h in fused}
    # The vector lists' own order is needed for its first few ids only: no hits are built.
    lead = [by_id[i] for i, _ in _ranking(_scored(vector, method, weights, k))[:anchor_top]]
    ids = {h.id for h in lead}
    rest = [h for h in fused if h.id not in ids]
    # Leaders keep their fused provenance.
    return _raised(lead, rest[0].score if rest else 0.0) + rest


def promote_linked(
    fused: Sequence[Hit], links: Sequence[Hit], *, lead: int, depth: int, limit: int
) -> list[Hit]:
    """Move the documents that the first `lead` hits link to up behind them.

    A multi-hop question's second passage rarely resembles the question (it answers the part the
    first passage leaves open), so vector and graph votes rank it anywhere in the first page or
    two; the first passage's own link to it is the sharper evidence. `links` are hits whose first
    path node is the linking chunk (`bridge_links`); only documents among the first `depth`
    documents after the leaders qualify, at most `limit` of them, in their fused order (the
    README's evaluation gives what it adds on each dev set).
    """
    if lead <= 0 or limit <= 0 or not links or len(fused) <= lead:
        return list(fused)
    leaders = fused[:lead]
    # A link starts from the chunk that matched (a summary, a proposition), not its unit.
    leader_ids = {i for h in leaders for i in (h.id, *(h.metadata.get(MATCHED_IDS) or ()))}
    linked: dict[str, GraphPath] = {}
    for hit in links:
        for path in hit.paths:
            if path.nodes and path.nodes[0] in leader_ids:
                linked.setdefault(hit.doc_id, path)
    lead_docs = {h.doc_id for h in leaders}
    seen = set(lead_docs)
    promoted: list[Hit] = []
    for h in fused[lead:]:
        if h.doc_id in seen:
            continue
        if len(seen) - len(lead_docs) >= depth or len(promoted) >= limit:
            break
        seen.add(h.doc_id)
        if h.doc_id in linked:
            retrievers = tuple(dict.fromkeys((*h.retrievers, LINKS)))
            paths = tuple(dict.fromkeys((*h.paths, linked[h.doc_id])))
            promoted.append(h.evolve(retrievers=retrievers, paths=paths))
    if not promoted:
        return list(fused)
    moved = {h.id for h in promoted}
    rest = [h for h in fused[lead:] if h.id not in moved]
    head = _raised([*leaders, *promoted], rest[0].score if rest else 0.0)
    return head + rest


def fact_ranking_for(
    mode: Literal["auto", "walk", "fused"], extractor: str | None
) -> Literal["walk", "fused"]:
    """`serve.retrieval.fact_ranking` with 'auto' decided by what made the facts: a language
    model's (or a file of one's) are precise enough to rank by, HippoRAG 2's premise; the spaCy
    rules' are not, and only vote."""
    if mode != "auto":
        return mode
    if extractor is None or extractor.strip() == "rules":
        return "fused"
    return "walk"


class FusionRanker:
    """The `Fuser` of the search pipeline: the plan's weights and anchor, the configured method;
    `extractor` (`graph.extractor`) decides an 'auto' `fact_ranking`."""

    def __init__(self, settings: RetrievalSettings, *, extractor: str | None = None) -> None:
        self.method: FusionMethod = settings.fusion
        self.k = settings.rrf_k
        self.link_promote = settings.link_promote
        self.link_depth = settings.link_depth
        self.fact_ranking = fact_ranking_for(settings.fact_ranking, extractor)
        self.by_coverage = settings.fact_ranking == "auto"

    def walk_ranks(self, walk: Sequence[Hit]) -> bool:
        """Whether this fact-seeded walk is the ranking: 'walk', unless 'auto' chose it and the
        namespace's facts are too sparse to reach most passages."""
        if self.fact_ranking != "walk":
            return False
        return not (self.by_coverage and any(h.metadata.get(SPARSE_FACTS) for h in walk))

    async def fuse(self, lists: Mapping[str, Sequence[Hit]], plan: FusionPlan) -> list[Hit]:
        walk = lists.get(FACT_WALK)
        voting = {name: hits for name, hits in lists.items() if name not in (LINKS, FACT_WALK)}
        if walk is not None and self.walk_ranks(walk):
            fused = anchored_fusion(
                voting, anchor_top=0, method=self.method, weights=plan.weights, k=self.k
            )
            return walk_first(walk, fused)
        if walk is not None:
            voting["graph-expand"] = walk
        fused = anchored_fusion(
            voting, anchor_top=plan.anchor_top, method=self.method, weights=plan.weights, k=self.k
        )
        return promote_linked(
            fused,
            lists.get(LINKS, ()),
            lead=plan.anchor_top,
            depth=self.link_depth,
            limit=self.link_promote,
        )
