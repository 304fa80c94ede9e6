"""Entity synonymy: close names pair up, numbers keep look-alikes apart, edges land in the store."""

from __future__ import annotations

import numpy as np
import pytest

from rayweave.graph.schema import RelType
from rayweave.graph.synonyms import numbers, synonym_edges, synonym_pairs


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
