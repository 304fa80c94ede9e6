"""Personalised PageRank over an in-memory graph: pure functions on scipy CSR matrices.

HippoRAG 2 (Gutiérrez et al., ICML 2025) ranks passages by a random walk that restarts on what
the query names and on the passages dense search found, over one graph of passages and phrases.
A passage the walk keeps reaching is related to the question through many short, specific
paths, which is what a second hop's passage has and a look-alike of the first passage lacks.

The walk is computed by push (Andersen, Chung and Lang, FOCS 2006; the synchronous variant):
residual mass at a node moves `1 - damping` of itself into the node's score and spreads the rest
over its edges; a node pushes only while its residual per unit of weighted degree exceeds
`tolerance`. The work is bounded by `1 / ((1 - damping) * tolerance)` edge visits whatever the
graph's size, so a query touches the neighbourhood of its reset nodes, not the whole graph. Hubs
(an entity every passage mentions) need a large residual before they push: common entities
carry little mass, as rarity weighting asks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

FloatArray = np.ndarray
IntArray = np.ndarray


Weights = Mapping[str, tuple[float, float]]  # relation -> (along stored edges, against them)


@dataclass(frozen=True, slots=True)
class Transition:
    """A weighted, directed adjacency, its transpose (who feeds a node, for explanations),
    inverse weighted out-degrees (row `u` of the walk's transition matrix is
    `adjacency[u] * inv_degree[u]`) and, per transposed entry, the relation group that weighs
    most there (to name a path's steps)."""

    adjacency: sp.csr_matrix
    incoming: sp.csr_matrix
    inv_degree: FloatArray
    groups: tuple[str, ...]
    incoming_group: IntArray  # per `incoming` entry: the index in `groups` weighing most there
    incoming_max: FloatArray  # per node: its heaviest incoming edge (0 without any)

    def group_of(self, u: int, v: int) -> str | None:
        """The relation group that weighs most on the step u -> v (None: no such edge), read
        off an array built with the walk, so naming a hit's path costs one lookup per step."""
        lo, hi = self.incoming.indptr[v], self.incoming.indptr[v + 1]
        i = lo + int(np.searchsorted(self.incoming.indices[lo:hi], u))
        if i >= hi or self.incoming.indices[i] != u:
            return None
        return self.groups[int(self.incoming_group[i])]

    @classmethod
    def combine(cls, relations: Mapping[str, sp.csr_matrix], weights: Weights) -> Transition:
        """`sum_g fwd_g * R_g + back_g * R_g^T` over the relations `weights` names.

        Each relation is stored in its meaning's direction (chunk MENTIONS entity); a walk may
        cross it either way, and the two directions can weigh differently: an entity should
        hand its mass to the passage about it rather than to every passage that names it.
        """
        n = next(iter(relations.values())).shape[0] if relations else 0
        total = sp.csr_matrix((n, n), dtype=np.float32)
        for g, (forward, backward) in weights.items():
            matrix = relations.get(g)
            if matrix is None:
                continue
            if forward > 0:
                total = total + matrix * np.float32(forward)
            if backward > 0:
                total = total + matrix.T.tocsr() * np.float32(backward)
        total = sp.csr_matrix(total, dtype=np.float32)
        total.sum_duplicates()
        total.eliminate_zeros()
        total.sort_indices()
        incoming = total.T.tocsr()
        incoming.sort_indices()
        degree = np.asarray(total.sum(axis=1)).ravel()
        inv = np.zeros_like(degree, dtype=np.float32)
        np.divide(1.0, degree, out=inv, where=degree > 0)
        groups = tuple(g for g in weights if g in relations)
        heaviest = np.zeros(n, dtype=np.float32)
        filled = np.flatnonzero(np.diff(incoming.indptr) > 0)
        if filled.size:
            heaviest[filled] = np.maximum.reduceat(incoming.data, incoming.indptr[filled])
        return cls(
            adjacency=total,
            incoming=incoming,
            inv_degree=inv,
            groups=groups,
            incoming_group=_strongest_groups(relations, weights, groups, incoming),
            incoming_max=heaviest,
        )


def _strongest_groups(
    relations: Mapping[str, sp.csr_matrix],
    weights: Weights,
    groups: Sequence[str],
    incoming: sp.csr_matrix,
) -> IntArray:
    """For each entry of `incoming` (v <- u), the index in `groups` of the group whose weighted
    edge u -> v is largest (the first such group on a tie, as `weights` lists them)."""
    rows, cols, vals, index = [], [], [], []
    for gi, group in enumerate(groups):
        forward, backward = weights[group]
        coo = relations[group].tocoo()
        for w, r, c in ((forward, coo.row, coo.col), (backward, coo.col, coo.row)):
            if w > 0:
                keep = coo.data > 0
                rows.append(r[keep])
                cols.append(c[keep])
                vals.append(coo.data[keep].astype(np.float32) * np.float32(w))
                index.append(np.full(int(keep.sum()), gi, dtype=np.int16))
    if not rows:
        return np.zeros(0, dtype=np.int16)
    r, c, x, g = (np.concatenate(a) for a in (rows, cols, vals, index))
    # incoming lists, per target v (row), its feeders u (ascending): sort by (v, u), best first.
    order = np.lexsort((g, -x, r, c))
    r, c, g = r[order], c[order], g[order]
    first = np.ones(r.size, dtype=bool)
    first[1:] = (r[1:] != r[:-1]) | (c[1:] != c[:-1])
    out: IntArray = g[first]
    if out.size != incoming.nnz or not np.array_equal(r[first], incoming.indices):
        raise ValueError("relation groups do not match the combined adjacency")
    return out


@dataclass(frozen=True, slots=True)
class PageRank:
    """Scores of the nodes the walk reached (`nodes`, ascending) and every node's score array."""

    nodes: IntArray
    scores: FloatArray  # dense, one entry per node of the graph
    pushes: int


def personalized_pagerank(
    transition: Transition,
    reset: Mapping[int, float],
    *,
    damping: float = 0.5,
    tolerance: float = 1e-6,
    max_iterations: int = 50,
) -> PageRank:
    """Approximate PPR with restart distribution `reset` (normalised here).

    `damping` is the probability of following an edge rather than restarting (HippoRAG 2 uses
    0.5: half the mass stays on what the query named, the rest explores a few hops out).
    """
    if not 0.0 <= damping < 1.0:
        raise ValueError(f"damping must lie in [0, 1), got {damping}")
    n = transition.adjacency.shape[0]
    scores = np.zeros(n, dtype=np.float64)
    positive = {int(k): float(v) for k, v in reset.items() if v > 0 and 0 <= int(k) < n}
    total = sum(positive.values())
    if not positive or total <= 0:
        return PageRank(nodes=np.zeros(0, dtype=np.int64), scores=scores, pushes=0)
    residual = np.zeros(n, dtype=np.float64)
    frontier = np.fromiter(positive, dtype=np.int64)
    residual[frontier] = np.fromiter(positive.values(), dtype=np.float64) / total
    indptr, indices, data = (
        transition.adjacency.indptr,
        transition.adjacency.indices,
        transition.adjacency.data,
    )
    degree_inv = transition.inv_degree
    reached = [frontier]
    pushes = 0
    for _ in range(max_iterations):
        mass = residual[frontier]
        starts = indptr[frontier]
        counts = indptr[frontier + 1] - starts
        # Push while the residual per unit of degree is large; isolated nodes keep their mass.
        active = (mass * degree_inv[frontier] > tolerance) | (counts == 0)
        frontier, mass, starts, counts = (
            frontier[active],
            mass[active],
            starts[active],
            counts[active],
        )
        if frontier.size == 0:
            break
        residual[frontier] = 0.0
        # A node without edges keeps all its mass (a walker there can only stay or restart).
        scores[frontier] += np.where(counts == 0, mass, (1.0 - damping) * mass)
        spread = damping * mass * degree_inv[frontier]
        edges = int(counts.sum())
        pushes += int(frontier.size)
        if edges == 0:
            break
        offsets = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(edges)
        cols = indices[offsets]
        flow = np.repeat(spread, counts) * data[offsets]
        touched, inverse = np.unique(cols, return_inverse=True)
        residual[touched] += np.bincount(inverse, weights=flow, minlength=touched.size)
        frontier = touched
        reached.append(touched)
    # What is left in the residuals is below tolerance everywhere: settle it where it lies.
    nodes = np.unique(np.concatenate(reached))
    scores[nodes] += (1.0 - damping) * residual[nodes]
    return PageRank(nodes=nodes, scores=scores, pushes=pushes)


def top_nodes(rank: PageRank, eligible: np.ndarray, limit: int) -> list[tuple[int, float]]:
    """The `limit` best reached nodes for which the boolean mask `eligible` holds."""
    nodes = rank.nodes[eligible[rank.nodes]]
    if nodes.size == 0 or limit <= 0:
        return []
    values = rank.scores[nodes]
    if nodes.size > limit:
        part = np.argpartition(-values, limit - 1)[:limit]
        nodes, values = nodes[part], values[part]
    order = np.lexsort((nodes, -values))
    return [(int(nodes[i]), float(values[i])) for i in order if values[i] > 0]


@dataclass(frozen=True, slots=True)
class Pushers:
    """The nodes that pushed hardest in one walk (`score[u] / degree(u)`, what `u` hands each
    unit of edge weight), ascending, and the largest push of any other node: enough to find the
    strongest feeder of a hub without reading its whole incoming row."""

    nodes: IntArray
    bound: float

    @classmethod
    def of(cls, transition: Transition, rank: PageRank, count: int = 64) -> Pushers:
        if rank.nodes.size <= count:
            return cls(nodes=rank.nodes, bound=0.0)
        push = rank.scores[rank.nodes] * transition.inv_degree[rank.nodes]
        part = np.argpartition(-push, count)
        # `rank.nodes` is ascending, so ascending positions keep the pushers ascending.
        return cls(nodes=rank.nodes[np.sort(part[:count])], bound=float(push[part[count]]))


HUB_ROW = 64
"""Incoming rows longer than this are searched through `Pushers` first."""


def explain(
    transition: Transition,
    scores: FloatArray,
    target: int,
    reset: Sequence[int] | frozenset[int],
    *,
    max_length: int = 4,
    pushers: Pushers | None = None,
) -> list[int]:
    """The path that carried the most mass into `target`, read backwards: at each node the
    node whose flow into it (`score[u] * weight(u, v) / degree(u)`) is largest (the lowest
    node on a tie), until a reset node (where the walk started) or `max_length` steps.
    Returned start first. `pushers` (of the walk that gave `scores`) only makes it faster."""
    starts = frozenset(int(r) for r in reset)
    path = [int(target)]
    node = int(target)
    while node not in starts and len(path) <= max_length:
        feeder = _strongest_feeder(transition, scores, node, path, pushers)
        if feeder is None:
            break
        node = feeder
        path.append(node)
    return path[::-1]


def _strongest_feeder(
    transition: Transition,
    scores: FloatArray,
    node: int,
    path: Sequence[int],
    pushers: Pushers | None,
) -> int | None:
    incoming = transition.incoming
    lo, hi = int(incoming.indptr[node]), int(incoming.indptr[node + 1])
    feeders = incoming.indices[lo:hi]
    if pushers is not None and hi - lo > HUB_ROW:
        # A hub's feeders are mostly nodes the walk barely reached: if the strongest pushers
        # that feed it beat what any other node could send over the row's heaviest edge, the
        # answer is among them (ties need the full row: it picks the lowest node).
        at = np.minimum(np.searchsorted(feeders, pushers.nodes), feeders.size - 1)
        fed = (feeders[at] == pushers.nodes) & ~np.isin(pushers.nodes, path)
        candidates = pushers.nodes
        flow = np.where(
            fed,
            scores[candidates] * incoming.data[lo + at] * transition.inv_degree[candidates],
            0.0,
        )
        best = int(np.argmax(flow))
        # The margin covers the bound's other rounding order.
        if flow[best] > pushers.bound * float(transition.incoming_max[node]) * (1 + 1e-9):
            return int(candidates[best])
    if feeders.size == 0:
        return None
    flow = scores[feeders] * incoming.data[lo:hi] * transition.inv_degree[feeders]
    for visited in path:  # a path of a few nodes: cheaper than np.isin
        flow[feeders == visited] = 0.0
    best = int(np.argmax(flow))
    return int(feeders[best]) if flow[best] > 0 else None
