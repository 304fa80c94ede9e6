from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from rayweave.ingest.segmenter import segment


class TestSegment:
    def test_fits_in_one(self) -> None:
        assert segment([10, 20, 30], min_tokens=5, max_tokens=100) == [(0, 3)]

    def test_avoids_tiny_tail(self) -> None:
        # Greedy packing to 100 would give [60+30] [60] [10]; the optimum balances.
        groups = segment([60, 30, 60, 10], min_tokens=50, max_tokens=100)
        sizes = [sum([60, 30, 60, 10][i:j]) for i, j in groups]
        assert all(s >= 50 for s in sizes), sizes

    def test_expensive_cut_is_avoided(self) -> None:
        tokens = [30, 30, 30, 30]
        assert segment(tokens, min_tokens=40, max_tokens=70) == [(0, 2), (2, 4)]
        costly = segment(tokens, min_tokens=20, max_tokens=70, cut_cost=[0, 0, 50.0, 0])
        assert 2 not in {i for i, _ in costly}, costly

    def test_oversize_piece_alone_without_minimum(self) -> None:
        assert segment([15, 24, 13], min_tokens=0, max_tokens=20) == [(0, 1), (1, 2), (2, 3)]

    def test_oversize_piece_carries_small_neighbour(self) -> None:
        groups = segment([5, 300, 80], min_tokens=50, max_tokens=150)
        assert groups == [(0, 2), (2, 3)]

    @settings(max_examples=300, deadline=None)
    @given(
        st.lists(st.integers(min_value=0, max_value=120), min_size=1, max_size=40),
        st.integers(min_value=0, max_value=60),
        st.integers(min_value=60, max_value=150),
    )
    def test_tiles_in_order_and_respects_max(self, tokens: list[int], lo: int, hi: int) -> None:
        groups = segment(tokens, min_tokens=lo, max_tokens=hi)
        assert groups[0][0] == 0
        assert groups[-1][1] == len(tokens)
        for (_a, b), (c, _d) in itertools.pairwise(groups):
            assert b == c
        for i, j in groups:
            size = sum(tokens[i:j])
            big = max(tokens[i:j])
            assert size <= hi or j - i == 1 or (big > hi and size - big < lo), (tokens[i:j], lo, hi)
