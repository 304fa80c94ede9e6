"""Graph retrieval over the in-memory projection: personalised PageRank from the query's
entities and the top vector hits (HippoRAG 2), with the path that carried each hit's mass.

Reset mass: `entity_share` of it on the entities the query names (alias matches, longest match
first, each weighted by rarity: a name in one passage says more than one in a hundred), the rest
on the seed chunks in proportion to their vector scores. The query type's traversal profile
weights the relation groups (a how-to question walks NEXT and usage edges, a multi-hop one the
chunk-entity-chunk bridges), so one mechanism serves every type.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rayweave.cluster.settings import GraphSettings
from rayweave.cluster.types import GraphPath, Hit
from rayweave.graph.names import normalize_name, query_forms, variants
from rayweave.graph.ppr import (
    Pushers,
    Transition,
    Weights,
    explain,
    personalized_pagerank,
    top_nodes,
)
from rayweave.graph.profiles import TraversalProfile
from rayweave.graph.projection import RELATIONS, GraphProjection, NodeKind, entity_rows_for
from rayweave.graph.schema import RelType
from rayweave.graph.scoring import idf

WALK = "ppr"


def relation_weights(profile: TraversalProfile) -> dict[str, tuple[float, float]]:
    """How strongly a walk follows each relation group, along and against its stored direction,
    for a query type's profile.

    Chunk-entity edges and synonymy are the substrate every walk uses. A chunk hands its mass
    to every entity it mentions or explains; an entity hands it on only to the chunks that
    explain it (and to its synonyms), not back to every chunk that merely names it: the next
    hop of a question is the passage about the bridge entity, and a name shared by a hundred
    passages would otherwise scatter the walk over them. Structural and typed edges weigh as
    much as the profile's traversal that walks them, both ways; so do sentence co-mentions
    (`graph/comentions.py`), stored once per pair.
    """
    code = max(profile.examples, profile.definitions)

    def both(w: float) -> tuple[float, float]:
        return (w, w)

    return {
        "structure": both(max(profile.parent, profile.children)),
        "sequence": both(profile.sequence),
        "explains": both(1.0),
        "mentions": (1.0, 0.0),
        "defines": both(code),
        "uses": both(code),
        "references": both(profile.references),
        "solves": both(profile.solutions),
        "related": both(profile.related),
        "synonym": both(1.0),
        "comention": both(profile.comention),
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class WalkRequest:
    """One walk: reset weights on entity rows and seed chunk rows, and the relation weights."""

    entities: Mapping[int, float]
    seeds: Mapping[int, float]
    weights: Weights
    entity_share: float | None = None  # None: `GraphSettings.walk_entity_share`


def query_entities(
    projection: GraphProjection, text: str, names: Sequence[str], max_ngram: int
) -> dict[int, float]:
    """Entity rows the query names, weighted by rarity. A form inside a longer matched span
    ("San Juan" inside "1944 San Juan earthquake") is dropped: the longer name is the entity
    the query means."""
    forms = sorted(
        query_forms(text, max_ngram, names), key=lambda f: (-f.length, not f.exact, f.start)
    )
    taken: set[int] = set()
    chosen: list[str] = []
    for f in forms:
        if f.form not in projection.aliases:
            continue
        span = set(range(f.start, f.start + f.length)) if f.start >= 0 else set()
        if span & taken:
            continue
        taken |= span
        chosen.append(f.form)
    rows = entity_rows_for(projection, chosen)
    df = projection.nodes.df
    return {row: idf(int(max(1.0, float(df[row])))) for row in rows}


def fact_entities(projection: GraphProjection, facts: Sequence[Hit]) -> dict[int, float]:
    """Entity rows the query's best facts name as subject or object (their `subject`/`object`
    metadata), each weighted by its best fact's score times its rarity, as query entities are:
    the facts say which entities the answer chain runs through."""
    df = projection.nodes.df
    out: dict[int, float] = {}
    for fact in facts:
        score = max(0.0, fact.score)
        for key in ("subject", "object"):
            form = normalize_name(str(fact.metadata.get(key, "")))
            if not form:
                continue
            for row in entity_rows_for(projection, variants(form)):
                weight = score * idf(int(max(1.0, float(df[row]))))
                out[row] = max(out.get(row, 0.0), weight)
    return out


def seed_rows(projection: GraphProjection, seeds: Sequence[Hit]) -> dict[int, float]:
    """Chunk rows of the seeds, scores divided by the largest (non-positive maxima: all 1)."""
    found = {projection.chunk_rows[h.id]: h.score for h in seeds if h.id in projection.chunk_rows}
    top = max(found.values(), default=0.0)
    if top <= 0:
        return dict.fromkeys(found, 1.0)
    return {row: max(0.0, s / top) for row, s in found.items()}


def reset_distribution(request: WalkRequest, entity_share: float) -> dict[int, float]:
    """`entity_share` of the mass on entities, the rest on seeds (all of it on whichever side
    is present alone)."""
    sides = [(request.entities, entity_share), (request.seeds, 1.0 - entity_share)]
    present = [(weights, share) for weights, share in sides if sum(weights.values()) > 0]
    if len(present) == 1:
        present = [(present[0][0], 1.0)]
    reset: dict[int, float] = {}
    for weights, share in present:
        total = sum(weights.values())
        for row, w in weights.items():
            reset[row] = reset.get(row, 0.0) + share * w / total
    return reset


def walk(
    projection: GraphProjection,
    request: WalkRequest,
    settings: GraphSettings,
    *,
    limit: int,
) -> list[Hit]:
    """The best chunks the walk reached, each with the path that carried the most mass to it.

    Seeds stay in the ranking: a seed the walk keeps returning to is confirmed by the graph
    (on hotpotqa-dev, leaving the seeds out lost 0.03 Recall@5: the list's new documents alone
    are weaker evidence than its re-ranking of the seeds)."""
    share = settings.walk_entity_share if request.entity_share is None else request.entity_share
    reset = reset_distribution(request, share)
    if not reset:
        return []
    transition = projection.transition(request.weights)
    rank = personalized_pagerank(
        transition,
        reset,
        damping=settings.walk_damping,
        tolerance=settings.walk_tolerance,
    )
    starts = frozenset(reset)
    pushers = Pushers.of(transition, rank)
    hits = []
    for row, score in top_nodes(rank, projection.chunk_mask(), limit):
        path = explain(transition, rank.scores, row, starts, pushers=pushers)
        hits.append(
            _hit(
                projection,
                row,
                score,
                (_graph_path(projection, transition, path, score),),
            )
        )
    return hits


def bridge_links(
    projection: GraphProjection, seeds: Mapping[int, float], settings: GraphSettings
) -> list[Hit]:
    """One hit per (seed, document) that a seed chunk links to: it MENTIONS one of its
    `max_entities_per_seed` rarest entities, which a chunk of another document EXPLAINS (what
    `serve.fusion.promote_linked` asks of the leading hit). At most `max_results` links per
    seed, the strongest: fusion promotes a few from its first page or two."""
    mentions = projection.relations.get("mentions")
    explains = projection.reversed("explains")
    if mentions is None or explains is None:
        return []
    kinds, df, doc_of = projection.nodes.kinds, projection.nodes.df, projection.nodes.doc_of
    best: dict[tuple[int, int], tuple[float, int, int]] = {}
    for seed in seeds:
        lo, hi = mentions.indptr[seed], mentions.indptr[seed + 1]
        ents = mentions.indices[lo:hi]
        # Only entities some chunk explains can link; the rarest of those are followed.
        explained = explains.indptr[ents + 1] > explains.indptr[ents]
        keep = (kinds[ents] == NodeKind.ENTITY) & explained
        ents, weight = ents[keep], mentions.data[lo:hi][keep]
        if ents.size == 0:
            continue
        rank = weight / (1.0 + np.log(np.maximum(df[ents], 1.0)))
        order = np.lexsort((ents, -rank))[: settings.max_entities_per_seed]
        for e, r in zip(ents[order].tolist(), rank[order].tolist(), strict=True):
            a, b = explains.indptr[e], explains.indptr[e + 1]
            for target, x in zip(
                explains.indices[a:b].tolist(), explains.data[a:b].tolist(), strict=True
            ):
                if kinds[target] != NodeKind.CHUNK or doc_of[target] == doc_of[seed]:
                    continue
                key = (seed, int(doc_of[target]))
                score = r * x
                if key not in best or score > best[key][0]:
                    best[key] = (score, e, target)
    hits = []
    per_seed: dict[int, int] = {}
    for (seed, _), (score, e, target) in sorted(
        best.items(), key=lambda kv: (-kv[1][0], projection.nodes.ids[kv[1][2]])
    ):
        per_seed[seed] = per_seed.get(seed, 0) + 1
        if per_seed[seed] > settings.max_results:
            continue
        path = GraphPath(
            nodes=(
                projection.nodes.ids[seed],
                projection.nodes.ids[e],
                projection.nodes.ids[target],
            ),
            relationships=(RelType.MENTIONS.value, RelType.EXPLAINS.value),
            score=round(score, 6),
        )
        hits.append(_hit(projection, target, score, (path,), kind="link"))
    return hits


def _hit(
    projection: GraphProjection,
    row: int,
    score: float,
    paths: tuple[GraphPath, ...],
    *,
    kind: str = WALK,
) -> Hit:
    """A chunk hit without payload: hydration reads text and metadata for the final page."""
    return Hit(
        id=projection.nodes.ids[row],
        doc_id=projection.doc_id(row),
        text="",
        score=round(float(score), 8),
        level=projection.level_of(row),
        retrievers=("graph",),
        paths=paths,
        metadata={"graph_kinds": [kind]},
    )


def _graph_path(
    projection: GraphProjection,
    transition: Transition,
    rows: list[int],
    score: float,
) -> GraphPath:
    """Node ids along `rows`, each step named by the relation type that weighs most there."""
    rels = []
    for u, v in itertools.pairwise(rows):
        group = transition.group_of(u, v)
        rels.append(RELATIONS[group][0].value if group else RelType.RELATED_TO.value)
    return GraphPath(
        nodes=tuple(projection.nodes.ids[r] for r in rows),
        relationships=tuple(rels),
        score=round(float(score), 8),
    )
