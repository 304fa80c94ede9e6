"""Scoring of traversal rows (pure): path contributions add up per node on a `ScoreBoard`, and
the strongest paths are kept as each hit's justification.

Seed scores are divided by the largest one, so graph scores live in [0, 1] whatever the vector
store's scale. A bridge hop is scored like one step of personalised PageRank: a seed's mass
flows through each entity it mentions, damped by that entity's rarity, into the chunks that
explain it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rayweave.cluster.settings import GraphSettings
from rayweave.cluster.types import GraphPath, Hit, Level
from rayweave.graph.names import QueryForm
from rayweave.graph.profiles import TraversalProfile
from rayweave.graph.queries import Seed
from rayweave.graph.schema import NodeLabel, RelType

MAX_PATHS_PER_HIT = 3


def idf(df: int) -> float:
    """Rarity damping of an entity mentioned by `df` chunks: 1 for a unique one, ~0.3 at df=10."""
    return 1.0 / (1.0 + math.log(max(1, int(df))))


def normalize_seeds(seeds: Sequence[Seed]) -> list[Seed]:
    """Scores divided by the largest (non-positive maxima give every seed 1.0); duplicates
    merged."""
    best: dict[str, float] = {}
    for s in seeds:
        best[s.chunk_id] = max(best.get(s.chunk_id, float("-inf")), s.score)
    top = max(best.values(), default=0.0)
    if top <= 0:
        return [Seed(chunk_id=k, score=1.0) for k in best]
    return [Seed(chunk_id=k, score=max(0.0, v / top)) for k, v in best.items()]


@dataclass(slots=True)
class ScoredNode:
    row: Mapping[str, Any]
    score: float = 0.0
    paths: list[GraphPath] = field(default_factory=list)
    kinds: set[str] = field(default_factory=set)

    @property
    def label(self) -> str:
        return str(self.row["tlabel"])

    @property
    def hit_id(self) -> str:
        if self.label == NodeLabel.DOCUMENT.value:
            return str(self.row.get("tchunk") or self.row["tid"])
        return str(self.row["tid"])


class ScoreBoard:
    """Accumulates path contributions per node: scores add up (several paths to a node are more
    evidence), the strongest paths are kept as the justification."""

    def __init__(self, exclude: Iterable[str] = ()) -> None:
        self._nodes: dict[tuple[str, str], ScoredNode] = {}
        self._exclude = set(exclude)
        self._seed_docs: set[str] = set()

    def note_seed_docs(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Remember the documents of the seeds (rows with a `seed_doc` column)."""
        self._seed_docs.update(str(r["seed_doc"]) for r in rows if r.get("seed_doc") is not None)

    def add(self, row: Mapping[str, Any], score: float, path: GraphPath, kind: str) -> None:
        if score <= 0 or row.get("tid") is None:
            return
        key = (str(row["tlabel"]), str(row["tid"]))
        node = self._nodes.get(key)
        if node is None:
            node = self._nodes[key] = ScoredNode(row=row)
        if node.hit_id in self._exclude or str(row["tid"]) in self._exclude:
            return
        node.score += score
        node.kinds.add(kind)
        node.paths.append(path)

    def nodes(self) -> list[ScoredNode]:
        return [n for n in self._nodes.values() if n.score > 0]

    def hits(self, limit: int) -> list[Hit]:
        """Best-first hits.

        A Document node without a summary chunk only stands for its chunks: its score folds
        into its best chunk among the hits, and it is dropped when a seed is one of its chunks.
        """
        nodes = self.nodes()
        chunks_by_doc: dict[str, list[ScoredNode]] = defaultdict(list)
        for n in nodes:
            if n.label != NodeLabel.DOCUMENT.value:
                chunks_by_doc[str(n.row["tdoc"])].append(n)
        kept: list[ScoredNode] = []
        for n in nodes:
            proxy = n.label == NodeLabel.DOCUMENT.value and not n.row.get("tchunk")
            if proxy and str(n.row["tid"]) in self._seed_docs:
                continue
            if proxy and chunks_by_doc.get(str(n.row["tid"])):
                best = max(chunks_by_doc[str(n.row["tid"])], key=lambda x: (x.score, x.hit_id))
                best.score += n.score
                best.paths.extend(n.paths)
                best.kinds |= n.kinds
            else:
                kept.append(n)
        kept.sort(key=lambda n: (-n.score, n.hit_id))
        return [to_hit(n) for n in kept[:limit]]


LEVEL_OF_LABEL = {
    NodeLabel.DOCUMENT.value: Level.DOCUMENT,
    NodeLabel.SECTION.value: Level.SECTION,
    NodeLabel.PROPOSITION.value: Level.PROPOSITION,
}


def to_hit(node: ScoredNode) -> Hit:
    row = node.row
    label = node.label
    level = LEVEL_OF_LABEL.get(label, Level.PROPOSITION)
    paths = sorted(node.paths, key=lambda p: (-p.score, p.nodes))[:MAX_PATHS_PER_HIT]
    text = row.get("ttext") or ""
    if not text and label == NodeLabel.DOCUMENT.value:
        text = row.get("ttitle") or ""
    return Hit(
        id=node.hit_id,
        doc_id=str(row["tdoc"]),
        text=str(text),
        score=round(node.score, 6),
        level=level,
        source=str(row.get("tsource") or ""),
        title=str(row.get("ttitle") or ""),
        section_path=tuple(row.get("tpath") or ()),
        retrievers=("graph",),
        paths=tuple(paths),
        metadata={"graph_kinds": sorted(node.kinds), "graph_node": label},
    )


def score_neighbourhood(
    rows: Iterable[Mapping[str, Any]],
    seeds: Mapping[str, float],
    profile: TraversalProfile,
    board: ScoreBoard,
) -> None:
    rows = list(rows)
    board.note_seed_docs(rows)
    weights = {
        "parent": profile.parent,
        "child": profile.children,
        "sequence": profile.sequence,
        "example": profile.examples,
        "definition": profile.definitions,
        "reference": profile.references,
        "solution": profile.solutions,
        "related": profile.related,
    }
    for r in rows:
        w = weights.get(str(r["kind"]), 0.0)
        strength = float(r["strength"] or 0.0)
        score = seeds.get(str(r["seed"]), 0.0) * w * strength
        nodes = (str(r["seed"]), *((str(r["via"]),) if r["via"] else ()), str(r["tid"]))
        board.add(
            r,
            score,
            GraphPath(nodes=nodes, relationships=tuple(r["rels"]), score=round(score, 6)),
            str(r["kind"]),
        )


def score_entity_search(
    rows: Iterable[Mapping[str, Any]],
    forms: Sequence[QueryForm],
    profile: TraversalProfile,
    settings: GraphSettings,
    board: ScoreBoard,
) -> None:
    """Entity matches are weighted by specificity (multi-word 1.0, one word 0.6, singular variant
    x0.9) and rarity; a match inside a longer matched name ("magazine" in "Arthur's Magazine")
    is dropped."""
    rows = list(rows)
    by_form = {f.form: f for f in forms}
    matched_spans = [
        (by_form[r["via_form"]].start, by_form[r["via_form"]].length)
        for r in rows
        if r["via_form"] in by_form
    ]

    def inside_longer(f: QueryForm) -> bool:
        if f.start < 0:
            return False
        end = f.start + f.length
        return any(
            s <= f.start and end <= s + n and n > f.length for s, n in matched_spans if s >= 0
        )

    for r in rows:
        form = by_form.get(str(r["via_form"]))
        if form is None or inside_longer(form):
            continue
        specificity = (1.0 if form.length > 1 else 0.6) * (1.0 if form.exact else 0.9)
        match = specificity * idf(int(r["edf"]))
        rel_w = profile.entity_rels.get(RelType(str(r["xtype"])), 0.0)
        expanded = r["hid"] != r["eid"]
        hop = settings.hop_decay * float(r["rw"] or 0.0) if expanded else 1.0
        edge = float(r["xc"] or 0.0) * (
            float(r["xw"] or 0.0) if r["xtype"] == RelType.MENTIONS.value else 1.0
        )
        score = profile.entity * match * rel_w * hop * edge
        nodes = (str(r["eid"]), *((str(r["hid"]),) if expanded else ()), str(r["tid"]))
        rels = ((RelType.RELATED_TO.value,) if expanded else ()) + (str(r["xtype"]),)
        board.add(
            r, score, GraphPath(nodes=nodes, relationships=rels, score=round(score, 6)), "entity"
        )


@dataclass(slots=True)
class BridgeState:
    score: float
    path: GraphPath
    level: Level | None = None


def score_bridge_hop(
    rows: Iterable[Mapping[str, Any]],
    frontier: Mapping[str, BridgeState],
    *,
    hop: int,
    weight: float,
    settings: GraphSettings,
    visited: set[str],
    board: ScoreBoard,
) -> dict[str, tuple[float, GraphPath, Mapping[str, Any]]]:
    """Spread frontier mass over one hop; returns the reached chunks (id -> score, best path, row).

    Each frontier chunk passes its mass through at most `max_entities_per_seed` of its rarest
    entities: score = mass x mention weight x mention confidence x idf(entity) x explains
    confidence x hop_decay^(hop-1).
    """
    rows = list(rows)
    if hop == 1:
        board.note_seed_docs(rows)
    per_seed: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        per_seed[str(r["seed"])].append(r)
    reached: dict[str, tuple[float, GraphPath, Mapping[str, Any]]] = {}
    decay = settings.hop_decay ** (hop - 1)
    for seed, seed_rows in per_seed.items():
        state = frontier.get(seed)
        if state is None:
            continue
        entity_rank, allowed = _rarest_entities(seed_rows, settings.max_entities_per_seed)
        for r in seed_rows:
            if str(r["eid"]) not in allowed:
                continue
            flow = state.score * entity_rank[str(r["eid"])] * float(r["xc"] or 0.0) * decay
            path = GraphPath(
                nodes=(*state.path.nodes, str(r["eid"]), str(r["tid"])),
                relationships=(
                    *state.path.relationships,
                    RelType.MENTIONS.value,
                    RelType.EXPLAINS.value,
                ),
                score=round(flow * weight, 6),
            )
            target = str(r["tid"])
            key = str(r["tkey"] or "")
            if target in visited:
                continue
            board.add(r, flow * weight, path, "bridge")
            if key:
                old = reached.get(key)
                total = flow + (old[0] if old else 0.0)
                best = path if old is None or path.score > old[1].score else old[1]
                reached[key] = (total, best, r)
    return reached


def _rarest_entities(
    seed_rows: Sequence[Mapping[str, Any]], limit: int
) -> tuple[dict[str, float], set[str]]:
    """A seed's entities ranked by idf x mention weight x confidence, and the `limit` best."""
    rank: dict[str, float] = {}
    for r in seed_rows:
        rank[str(r["eid"])] = idf(int(r["edf"])) * float(r["mw"] or 0.0) * float(r["mc"] or 0.0)
    return rank, set(sorted(rank, key=lambda e: (-rank[e], e))[:limit])


def bridge_links(rows: Iterable[Mapping[str, Any]], settings: GraphSettings) -> list[Hit]:
    """One hit per (seed, target) of a first bridge hop: the documents each seed chunk links to
    (it MENTIONS one of its `max_entities_per_seed` rarest entities, which the target EXPLAINS).

    Unlike the bridge score board, nothing is summed over seeds or hidden behind a seed: fusion
    asks "what does the leading hit link to?", and the answer must not depend on the other seeds.
    """
    per_seed: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        per_seed[str(r["seed"])].append(r)
    best: dict[tuple[str, str], ScoredNode] = {}
    for seed, seed_rows in per_seed.items():
        entity_rank, allowed = _rarest_entities(seed_rows, settings.max_entities_per_seed)
        for r in seed_rows:
            eid = str(r["eid"])
            if eid not in allowed or r.get("tid") is None:
                continue
            score = entity_rank[eid] * float(r["xc"] or 0.0)
            path = GraphPath(
                nodes=(seed, eid, str(r["tid"])),
                relationships=(RelType.MENTIONS.value, RelType.EXPLAINS.value),
                score=round(score, 6),
            )
            key = (seed, str(r["tdoc"]))
            node = best.get(key)
            if node is None or score > node.score:
                best[key] = ScoredNode(row=r, score=score, paths=[path], kinds={"link"})
    nodes = sorted(best.values(), key=lambda n: (-n.score, n.hit_id, n.paths[0].nodes))
    return [to_hit(n) for n in nodes]


def blend_conversation(
    vector_scores: Mapping[str, float],
    concept_strength: Mapping[str, float],
    *,
    vector_weight: float,
    concept_weight: float,
) -> dict[str, float]:
    """Seed 003's conversation-aware relevance: `vector_weight * vector + concept_weight * concept`,
    each normalised by its maximum over the candidates."""
    vmax = max(vector_scores.values(), default=0.0)
    cmax = max(concept_strength.values(), default=0.0)
    out = {}
    for doc, v in vector_scores.items():
        vn = v / vmax if vmax > 0 else 0.0
        cn = concept_strength.get(doc, 0.0) / cmax if cmax > 0 else 0.0
        out[doc] = vector_weight * vn + concept_weight * cn
    return out
