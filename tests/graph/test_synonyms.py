"""Entity synonymy: close names pair up, numbers keep look-alikes apart, edges land in the store."""

from __future__ import annotations

import numpy as np
import pytest

from rayweave.graph.schema import RelType
from rayweave.graph.synonyms import is_candidate, numbers, synonym_edges, synonym_pairs


def unit(*rows: list[float]) -> np.ndarray:
    m = np.asarray(rows, dtype=np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_pairs_above_the_threshold_only() -> None:
    names = ["U.S.", "United States", "Paris"]
    vectors = unit([1, 0.1, 0], [1, 0, 0], [0, 1, 0])
    assert [
        (i, j) for i, j, _ in synonym_pairs(names, vectors, threshold=0.8, max_per_entity=5)
    ] == [(0, 1)]
    assert synonym_pairs(names, vectors, threshold=0.9999, max_per_entity=5) == []


def test_numbers_and_case_only_differences_are_not_synonyms() -> None:
    names = ["1944 San Juan earthquake", "1894 San Juan earthquake", "ray serve", "Ray Serve"]
    vectors = unit([1, 0], [1, 0.01], [0, 1], [0.01, 1])
    assert numbers(names[0]) == ("1944",)
    assert synonym_pairs(names, vectors, threshold=0.8, max_per_entity=5) == []


def test_each_entity_keeps_its_closest_partners_across_blocks() -> None:
    names = [f"name {chr(97 + i)}" for i in range(5)]
    vectors = unit([1, 0.00], [1, 0.01], [1, 0.02], [1, 0.03], [1, 0.04])
    pairs = synonym_pairs(names, vectors, threshold=0.5, max_per_entity=1, block=2)
    # Everyone's single best partner is a neighbour; no index keeps pairs it did not choose
    # unless the partner chose it.
    assert {(i, j) for i, j, _ in pairs} == {(0, 1), (1, 2), (2, 3), (3, 4)}
    assert all(s == pytest.approx(float(vectors[i] @ vectors[j]), abs=1e-5) for i, j, s in pairs)


def test_edges_connect_entity_ids() -> None:
    edges = synonym_edges(
        [("e1", "NYC"), ("e2", "New York City")],
        unit([1, 0], [1, 0.1]),
        threshold=0.8,
        max_per_entity=3,
    )
    assert [(e.rel, e.src.id, e.dst.id) for e in edges] == [(RelType.SYNONYM_OF, "e1", "e2")]
    assert 0.8 <= edges[0].weight <= 1.0


def test_names_that_encode_alike_get_an_edge_of_confidence_one() -> None:
    # Unit vectors as an index hands them back: the norm is 1 to float32 precision, and the
    # dot product of two equal ones rounds to 1.000001.
    same = unit([1, 0.1, 0.2])[0] * np.float32(1.0000008)
    vectors = np.stack([same, same])
    assert round(float(vectors[0] @ vectors[1]), 6) > 1.0
    edges = synonym_edges(
        [("e1", "NYC"), ("e2", "New York City")], vectors, threshold=0.8, max_per_entity=3
    )
    assert [(e.src.id, e.dst.id, e.weight, e.confidence) for e in edges] == [("e1", "e2", 1.0, 1.0)]


def _reference_pairs(
    names: list[str], vectors: np.ndarray, threshold: float, k: int
) -> list[tuple[int, int, float]]:
    """Every qualifying pair collected, then each name's best `k` (the rule, spelled out)."""
    sims = np.round(vectors @ vectors.T, 6)
    kept: dict[tuple[int, int], float] = {}
    for i, a in enumerate(names):
        partners = [
            (float(sims[i, j]), j)
            for j, b in enumerate(names)
            if sims[i, j] >= threshold and is_candidate(a, b)
        ]
        for s, j in sorted(partners, key=lambda p: (-p[0], p[1]))[:k]:
            kept[(min(i, j), max(i, j))] = round(s, 6)
    return sorted((i, j, s) for (i, j), s in kept.items())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pairs_equal_the_rule_spelled_out(seed: int) -> None:
    rng = np.random.default_rng(seed)
    names = [
        f"{rng.choice(['ray', 'Ray', 'serve'])} {rng.integers(0, 3)} x{i % 7}" for i in range(60)
    ]
    # Few distinct directions, so ties and many candidates per name occur.
    vectors = unit(*rng.integers(0, 3, size=(60, 3)).astype(float).tolist())
    for k in (1, 3):
        expected = _reference_pairs(names, vectors, 0.7, k)
        assert synonym_pairs(names, vectors, threshold=0.7, max_per_entity=k, block=7) == expected


def test_a_collapsed_encoder_keeps_memory_to_the_kept_pairs() -> None:
    """Every name at cosine 1 (a random or collapsed encoder): the pairs kept are bounded by the
    names times `max_per_entity`, and no structure of all qualifying pairs is built."""
    import tracemalloc

    n = 3000
    names = [
        f"entity {chr(97 + i % 26)}{chr(97 + i // 26 % 26)}{chr(97 + i // 676)}" for i in range(n)
    ]
    vectors = unit(*[[1.0, 0.0]] * n)
    tracemalloc.start()
    pairs = synonym_pairs(names, vectors, threshold=0.8, max_per_entity=2)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert 0 < len(pairs) <= n * 2
    # The block of cosines (2048 x 3000 float64, 49 MB) and its mask dominate; collecting all
    # 9M qualifying pairs first, as this function once did, took gigabytes.
    assert peak < 150 * 2**20
