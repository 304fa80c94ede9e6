"""Personalised PageRank by push against the exact solution, and its explanations."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from rayweave.graph.ppr import (
    HUB_ROW,
    Pushers,
    Transition,
    explain,
    personalized_pagerank,
    top_nodes,
)


def symmetric(n: int, edges: list[tuple[int, int, float]]) -> sp.csr_matrix:
    rows = [a for a, b, _ in edges] + [b for a, b, _ in edges]
    cols = [b for a, b, _ in edges] + [a for a, b, _ in edges]
    vals = [w for *_, w in edges] * 2
    m = sp.csr_matrix((np.asarray(vals, dtype=np.float32), (rows, cols)), shape=(n, n))
    m.sort_indices()
    return m


def exact(adjacency: np.ndarray, reset: np.ndarray, damping: float) -> np.ndarray:
    """p = (1 - d) r (I - d P)^-1 with P the row-normalised adjacency."""
    degree = adjacency.sum(axis=1, keepdims=True)
    transition = np.divide(adjacency, degree, out=np.zeros_like(adjacency), where=degree > 0)
    n = adjacency.shape[0]
    return (1 - damping) * np.linalg.solve((np.eye(n) - damping * transition).T, reset)


@pytest.mark.parametrize("damping", [0.3, 0.5, 0.85])
def test_push_converges_to_the_exact_solution(damping: float) -> None:
    rng = np.random.default_rng(7)
    n = 40
    edges = {(int(a), int(b)) for a, b in rng.integers(0, n, size=(120, 2)) if a != b}
    weighted = [(a, b, float(rng.uniform(0.1, 1.0))) for a, b in sorted(edges)]
    adjacency = symmetric(n, weighted)
    t = Transition.combine({"g": adjacency}, {"g": (1.0, 1.0)})
    reset = {3: 2.0, 11: 1.0}
    rank = personalized_pagerank(t, reset, damping=damping, tolerance=1e-12, max_iterations=2000)
    r = np.zeros(n)
    r[3], r[11] = 2 / 3, 1 / 3
    want = exact(adjacency.toarray().astype(np.float64), r, damping)
    np.testing.assert_allclose(rank.scores, want, atol=1e-8)
    assert rank.scores.sum() == pytest.approx(1.0, abs=1e-8)


def test_tolerance_keeps_the_walk_local() -> None:
    """On a 2,000-node path the walk from one end stays within a few dozen nodes."""
    n = 2000
    t = Transition.combine(
        {"g": symmetric(n, [(i, i + 1, 1.0) for i in range(n - 1)])}, {"g": (1.0, 1.0)}
    )
    rank = personalized_pagerank(t, {0: 1.0}, damping=0.5, tolerance=1e-4)
    assert 3 < rank.nodes.size < 40
    assert rank.pushes <= 1 / ((1 - 0.5) * 1e-4)
    assert rank.scores[0] > rank.scores[1] > rank.scores[2] > 0
    assert rank.scores[500] == 0


def directed(n: int, edges: list[tuple[int, int, float]]) -> sp.csr_matrix:
    m = sp.csr_matrix(
        ([w for *_, w in edges], ([a for a, _, _ in edges], [b for _, b, _ in edges])),
        shape=(n, n),
        dtype=np.float32,
    )
    m.sort_indices()
    return m


def test_weights_select_relations_and_directions() -> None:
    """Relation a: 0 -> 1; relation b: 2 -> 0 (walked against its direction from 0)."""
    a = directed(3, [(0, 1, 1.0)])
    b = directed(3, [(2, 0, 1.0)])
    both = Transition.combine({"a": a, "b": b}, {"a": (1.0, 0.0), "b": (0.0, 3.0)})
    assert both.adjacency[0, 2] == pytest.approx(3.0)
    assert both.adjacency[2, 0] == 0.0
    assert both.inv_degree[0] == pytest.approx(1 / 4)
    assert both.incoming[2, 0] == pytest.approx(3.0)  # who feeds node 2
    only_a = Transition.combine({"a": a, "b": b}, {"a": (1.0, 0.0), "b": (0.0, 0.0)})
    rank = personalized_pagerank(only_a, {0: 1.0})
    assert rank.scores[1] > 0
    assert rank.scores[2] == 0
    forward_only = Transition.combine({"b": b}, {"b": (1.0, 0.0)})
    assert personalized_pagerank(forward_only, {0: 1.0}).scores[2] == 0  # 0 has no way to 2


def test_each_step_is_named_by_the_group_that_weighs_most_there() -> None:
    """0 -> 1 in a (1.0) and in b against its direction (weight 3): b names it; 1 -> 2 only in
    a; 2 -> 0 nowhere. A tie goes to the group listed first."""
    a = directed(3, [(0, 1, 1.0), (1, 2, 1.0)])
    b = directed(3, [(1, 0, 1.0)])
    t = Transition.combine({"a": a, "b": b}, {"a": (1.0, 0.0), "b": (0.0, 3.0)})
    assert t.group_of(0, 1) == "b"
    assert t.group_of(1, 2) == "a"
    assert t.group_of(2, 0) is None
    assert t.group_of(1, 0) is None  # b is walked only against its direction
    tie = Transition.combine({"a": a, "b": b}, {"a": (3.0, 0.0), "b": (0.0, 3.0)})
    assert tie.group_of(0, 1) == "a"
    assert (
        Transition.combine({"a": a, "b": b}, {"b": (0.0, 3.0), "a": (3.0, 0.0)}).group_of(0, 1)
        == "b"
    )
    assert Transition.combine({"a": a}, {"a": (0.0, 0.0)}).group_of(0, 1) is None


def test_isolated_reset_keeps_its_mass_and_empty_reset_gives_nothing() -> None:
    t = Transition.combine({"g": symmetric(3, [(1, 2, 1.0)])}, {"g": (1.0, 1.0)})
    rank = personalized_pagerank(t, {0: 1.0})
    assert rank.scores[0] == pytest.approx(1.0)
    assert personalized_pagerank(t, {}).nodes.size == 0
    assert personalized_pagerank(t, {7: 1.0}).nodes.size == 0  # out of range: ignored


def test_damping_is_checked() -> None:
    t = Transition.combine({"g": symmetric(2, [(0, 1, 1.0)])}, {"g": (1.0, 1.0)})
    with pytest.raises(ValueError, match="damping"):
        personalized_pagerank(t, {0: 1.0}, damping=1.0)


def test_top_nodes_respects_the_mask_and_orders_by_score() -> None:
    t = Transition.combine(
        {"g": symmetric(5, [(0, 1, 1.0), (1, 2, 1.0), (2, 3, 1.0), (3, 4, 1.0)])}, {"g": (1.0, 1.0)}
    )
    rank = personalized_pagerank(t, {0: 1.0}, tolerance=1e-9)
    eligible = np.array([False, True, True, True, True])
    top = top_nodes(rank, eligible, 2)
    assert [row for row, _ in top] == [1, 2]
    assert top[0][1] > top[1][1]


def test_explain_walks_back_the_largest_flow() -> None:
    """0 - 1 - 3 and 0 - 2 - 3, where the 0-1 link is strong: 3's mass came through 1."""
    m = symmetric(5, [(0, 1, 1.0), (0, 2, 0.1), (1, 3, 1.0), (2, 3, 1.0), (3, 4, 1.0)])
    t = Transition.combine({"g": m}, {"g": (1.0, 1.0)})
    rank = personalized_pagerank(t, {0: 1.0}, tolerance=1e-9)
    assert explain(t, rank.scores, 4, {0}) == [0, 1, 3, 4]
    assert explain(t, rank.scores, 0, {0}) == [0]
    assert explain(t, rank.scores, 4, {0}, max_length=1) == [3, 4]


def test_explanations_through_hubs_equal_the_full_scan() -> None:
    """A Zipf graph of passages and entities (hubs named by hundreds of passages): the paths
    found through the walk's strongest pushers are the ones a pass over every row finds."""
    rng = np.random.default_rng(7)
    passages, entities = 3000, 300
    popularity = 1.0 / np.arange(1, entities + 1) ** 1.1
    named = rng.choice(entities, size=(passages, 6), p=popularity / popularity.sum())
    rows = np.repeat(np.arange(passages), 6)
    mentions = sp.csr_matrix(
        (np.ones(rows.size, dtype=np.float32), (rows, passages + named.ravel())),
        shape=(passages + entities,) * 2,
    )
    mentions.sum_duplicates()
    t = Transition.combine({"m": mentions}, {"m": (1.0, 0.5)})
    assert np.diff(t.incoming.indptr).max() > 4 * HUB_ROW  # the shortcut is exercised
    shortcut = 0
    for trial in range(20):
        reset = {int(r): 1.0 for r in rng.choice(passages, size=4, replace=False)}
        rank = personalized_pagerank(t, reset, tolerance=1e-5)
        pushers = Pushers.of(t, rank, count=16 + trial)
        for row, _ in top_nodes(rank, np.arange(passages + entities) < passages, 200):
            full = explain(t, rank.scores, row, set(reset))
            assert explain(t, rank.scores, row, set(reset), pushers=pushers) == full
            shortcut += any(np.diff(t.incoming.indptr)[n] > HUB_ROW for n in full[1:])
    assert shortcut > 0
