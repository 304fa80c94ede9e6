"""The graph traversals' executor: runs the pure queries (`graph/queries.py`) against a
`GraphStore` and scores their rows (`graph/scoring.py`) onto one board.

Every result is a `Hit` whose `paths` hold the `GraphPath`s that justified it (node ids from the
seed or query entity to the hit, the relationship types walked, and the path's score). Paths
read from where the walk started; a type walked against its stored direction (a seed's parent
reached over `HAS_CHILD`) is written the same way, since the type says what the link means.

Traversals (seed 000, 001, 003):

- `neighbourhood`: from seed chunks, in ONE query whatever the profile asks for: parent,
  children, previous/next siblings (`expand_depth`), usage examples (seed DEFINES a symbol that
  a chunk USES), definitions (the reverse), REFERENCES both ways, solutions (SOLVES the seed's
  error), and RELATED_TO neighbours' explanations.
- `entity_search`: query n-grams -> `Alias` -> `Entity` (exact, singular, alias) -> EXPLAINS /
  SOLVES / DEFINES / MENTIONS -> chunks; with `expand_entities` also over RELATED_TO.
- `bridge`: multi-hop beam search from the seeds over chunk -MENTIONS-> entity <-EXPLAINS-
  chunk, scored like one step of personalised PageRank: a seed's mass flows through each entity
  it mentions, damped by that entity's rarity, into the chunks that explain it; the best
  `beam_width` become the next frontier (`max_hops`, `hop_decay`).
- conversation-aware ranking and unseen-document discovery (seed 003).

Seed scores are divided by the largest one, so graph scores live in [0, 1] whatever the
vector store's scale. Independent queries of a profile run concurrently: a query costs about
two round trips, however many seeds it has.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import Any, Required, TypedDict, Unpack

from rayweave.cluster.settings import GraphSettings
from rayweave.cluster.types import GraphPath, Hit, QueryType
from rayweave.graph.names import QueryForm, query_forms
from rayweave.graph.profiles import PROFILES, TraversalProfile, parse_query_type
from rayweave.graph.queries import (
    CypherQuery,
    Seed,
    bridge_hop_query,
    conversation_concepts_query,
    discovery_query,
    entity_search_query,
    neighbourhood_query,
)
from rayweave.graph.schema import NodeLabel, RelType
from rayweave.graph.scoring import (
    LEVEL_OF_LABEL,
    BridgeState,
    ScoreBoard,
    ScoredNode,
    blend_conversation,
    bridge_links,
    normalize_seeds,
    score_bridge_hop,
    score_entity_search,
    score_neighbourhood,
    to_hit,
)
from rayweave.graph.store import GraphStore


class SearchRequest(TypedDict, total=False):
    """The keyword arguments of `GraphTraversal.search` (only `query_text` is required)."""

    query_text: Required[str]
    seeds: Sequence[Seed | Hit]
    query_type: str | QueryType | None
    entity_names: Sequence[str]
    limit: int | None


class GraphTraversal:
    """Runs the traversals against a `GraphStore` (one namespace)."""

    def __init__(
        self, store: GraphStore, settings: GraphSettings | None = None, *, workers: int = 3
    ) -> None:
        self.store = store
        self.settings = settings or store.settings
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="graph-traversal")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _run(self, query: CypherQuery | None, op: str) -> list[dict[str, Any]]:
        if query is None:
            return []
        rows: list[dict[str, Any]] = self.store.read(query.text, query.params, op=op)
        return rows

    # individual traversals

    def expand(
        self,
        seeds: Sequence[Seed | Hit],
        profile: TraversalProfile | None = None,
        *,
        limit: int | None = None,
    ) -> list[Hit]:
        """Seed 000's chunk expansion: parent, previous/next siblings and children (by default)."""
        prof = profile or TraversalProfile(parent=0.6, sequence=0.8, children=0.4)
        norm = normalize_seeds(_as_seeds(seeds))
        board = ScoreBoard(exclude=(s.chunk_id for s in norm))
        rows = self._run(neighbourhood_query(self.store.ns, norm, prof, self.settings), "expand")
        score_neighbourhood(rows, {s.chunk_id: s.score for s in norm}, prof, board)
        hits: list[Hit] = board.hits(limit or self.settings.max_results)
        return hits

    def entity_search(
        self,
        query_text: str,
        *,
        entity_names: Sequence[str] = (),
        profile: TraversalProfile | None = None,
        limit: int | None = None,
    ) -> list[Hit]:
        """Chunks that explain (or solve, define, mention) the entities the query names."""
        prof = profile or replace(PROFILES[QueryType.WHAT_IS], entity=1.0)
        board = ScoreBoard()
        self._entity_into(board, query_text, entity_names, prof)
        hits: list[Hit] = board.hits(limit or self.settings.max_results)
        return hits

    def bridge(
        self, seeds: Sequence[Seed | Hit], *, limit: int | None = None, weight: float = 1.0
    ) -> list[Hit]:
        """Multi-hop bridge search from the seeds (see module docstring)."""
        norm = normalize_seeds(_as_seeds(seeds))
        board = ScoreBoard(exclude=(s.chunk_id for s in norm))
        self._bridge_into(board, norm, weight)
        hits: list[Hit] = board.hits(limit or self.settings.max_results)
        return hits

    # the profile-driven search

    def search(self, **request: Unpack[SearchRequest]) -> list[Hit]:
        """Everything the query type's profile asks for, merged on one score board.

        Neighbourhood, entity search and the first bridge hop run concurrently; further bridge
        hops follow. Seeds themselves are not returned (the caller already has them).
        """
        return self.search_with_links(**request)[0]

    def search_with_links(
        self,
        *,
        query_text: str,
        seeds: Sequence[Seed | Hit] = (),
        query_type: str | QueryType | None = None,
        entity_names: Sequence[str] = (),
        limit: int | None = None,
    ) -> tuple[list[Hit], list[Hit]]:
        """`search`'s hits, plus the first bridge hop's `bridge_links` (empty when the query
        type's profile does not bridge)."""
        prof = PROFILES[parse_query_type(query_type)]
        norm = normalize_seeds(_as_seeds(seeds))
        board = ScoreBoard(exclude=(s.chunk_id for s in norm))
        seed_scores = {s.chunk_id: s.score for s in norm}
        neighbourhood_rows: Future[list[dict[str, Any]]] | None = None
        neighbourhood = neighbourhood_query(self.store.ns, norm, prof, self.settings)
        if neighbourhood is not None:
            neighbourhood_rows = self._pool.submit(self._run, neighbourhood, "search")
        entity_rows = None
        if prof.entity > 0 and (query_text.strip() or entity_names):
            entity_rows = self._pool.submit(self._entity_rows, query_text, entity_names, prof)
        links: list[Hit] = []
        if prof.bridge > 0 and norm:
            links = self._bridge_into(board, norm, prof.bridge)
        if neighbourhood_rows is not None:
            score_neighbourhood(neighbourhood_rows.result(), seed_scores, prof, board)
        if entity_rows is not None:
            forms, rows = entity_rows.result()
            score_entity_search(rows, forms, prof, self.settings, board)
        return board.hits(limit or self.settings.max_results), links

    # conversation-aware (seed 003)

    def conversation_rerank(
        self,
        hits: Sequence[Hit],
        conversation_id: str,
        *,
        vector_weight: float | None = None,
        concept_weight: float | None = None,
    ) -> list[Hit]:
        """Re-score hits: documents that explain concepts mentioned earlier in the conversation
        rise (`vector_weight * vector + concept_weight * concept`, defaults from settings)."""
        if not hits:
            return []
        vw = self.settings.vector_weight if vector_weight is None else vector_weight
        cw = self.settings.concept_weight if concept_weight is None else concept_weight
        rows = self._run(
            conversation_concepts_query(self.store.ns, conversation_id, [h.doc_id for h in hits]),
            "conversation_rerank",
        )
        strength = {str(r["doc"]): float(r["strength"] or 0.0) for r in rows}
        concepts = {str(r["doc"]): list(r["entities"]) for r in rows}
        blended = blend_conversation(
            {h.id: h.score for h in hits},
            {h.id: strength.get(h.doc_id, 0.0) for h in hits},
            vector_weight=vw,
            concept_weight=cw,
        )
        cmax = max(strength.values(), default=0.0)
        out = []
        for h in hits:
            cn = strength.get(h.doc_id, 0.0) / cmax if cmax > 0 else 0.0
            meta = {**h.metadata, "vector_score": h.score, "concept_score": round(cn, 6)}
            paths = h.paths
            if concepts.get(h.doc_id):
                paths = (
                    *paths,
                    GraphPath(
                        nodes=(conversation_id, *concepts[h.doc_id][:1], h.doc_id),
                        relationships=(
                            RelType.PART_OF.value,
                            RelType.MENTIONS.value,
                            RelType.EXPLAINS.value,
                        ),
                        score=round(cw * cn, 6),
                    ),
                )
            out.append(h.evolve(score=round(blended[h.id], 6), metadata=meta, paths=paths))
        out.sort(key=lambda h: (-h.score, h.id))
        return out

    def discover(self, user_id: str, *, limit: int = 3) -> list[Hit]:
        """Unseen documents explaining concepts related to what the user asked about."""
        rows = self._run(
            discovery_query(self.store.ns, user_id, self.settings.discovery_max_hops, limit),
            "discover",
        )
        hits = []
        for r in rows:
            node = ScoredNode(row=r, score=float(r["score"]))
            path = [str(x) for x in r["path"] or ()]
            node.paths.append(
                GraphPath(
                    nodes=(user_id, *path, str(r["tid"])),
                    relationships=(
                        RelType.CREATED.value,
                        RelType.MENTIONS.value,
                        *([RelType.RELATED_TO.value] * max(0, len(path) - 1)),
                        RelType.EXPLAINS.value,
                    ),
                    score=round(float(r["score"]), 6),
                )
            )
            node.kinds.add("discovery")
            hits.append(to_hit(node))
        return hits

    # internals

    def _entity_rows(
        self, query_text: str, entity_names: Sequence[str], prof: TraversalProfile
    ) -> tuple[list[QueryForm], list[dict[str, Any]]]:
        forms = query_forms(query_text, self.settings.gazetteer_max_ngram, entity_names)
        expand = self.settings.expand_entities if prof.entity_expand is None else prof.entity_expand
        rows = self._run(
            entity_search_query(self.store.ns, forms, prof.entity_rels, expand), "entity_search"
        )
        return forms, rows

    def _entity_into(
        self,
        board: ScoreBoard,
        query_text: str,
        entity_names: Sequence[str],
        prof: TraversalProfile,
    ) -> None:
        forms, rows = self._entity_rows(query_text, entity_names, prof)
        score_entity_search(rows, forms, prof, self.settings, board)

    def _bridge_into(self, board: ScoreBoard, seeds: Sequence[Seed], weight: float) -> list[Hit]:
        """Bridge hops onto `board`; returns the first hop's `bridge_links`."""
        links: list[Hit] = []
        frontier = {
            s.chunk_id: BridgeState(
                score=s.score, path=GraphPath(nodes=(s.chunk_id,), relationships=())
            )
            for s in seeds
        }
        visited = set(frontier)
        for hop in range(1, self.settings.max_hops + 1):
            frontier_seeds = [
                Seed(chunk_id=k, score=v.score, level=v.level) for k, v in frontier.items()
            ]
            rows = self._run(bridge_hop_query(self.store.ns, frontier_seeds), "bridge")
            if hop == 1:
                links = bridge_links(rows, self.settings)
            reached = score_bridge_hop(
                rows,
                frontier,
                hop=hop,
                weight=weight,
                settings=self.settings,
                visited=visited,
                board=board,
            )
            if not reached or hop == self.settings.max_hops:
                break
            beam = sorted(reached.items(), key=lambda kv: (-kv[1][0], kv[0]))[
                : self.settings.beam_width
            ]
            prefix = f"{self.store.ns}:"
            frontier = {}
            for key, (score, path, row) in beam:
                chunk_id = key[len(prefix) :] if key.startswith(prefix) else key
                if row["tlabel"] == NodeLabel.DOCUMENT.value and not row.get("tchunk"):
                    continue  # a document without a summary chunk mentions nothing itself
                frontier[chunk_id] = BridgeState(
                    score=score, path=path, level=LEVEL_OF_LABEL.get(str(row["tlabel"]))
                )
                visited.add(str(row["tid"]))
            if not frontier:
                break
        return links


def _as_seeds(items: Sequence[Seed | Hit]) -> list[Seed]:
    return [s if isinstance(s, Seed) else Seed.from_hit(s) for s in items]
