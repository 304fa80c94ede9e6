import random

import numpy as np
import pytest

from rayweave.models.batching import pad_batch, padding_waste, plan_batches, round_up


class TestPlanBatches:
    def test_every_row_once_longest_first_within_budget(self) -> None:
        rng = random.Random(7)
        lengths = [rng.randint(1, 300) for _ in range(500)]
        batches = plan_batches(lengths, batch_tokens=2048, max_batch_size=64)
        seen = sorted(i for b in batches for i in b.indices)
        assert seen == list(range(500))
        for b in batches:
            assert b.width == max(lengths[i] for i in b.indices)
            assert b.padded_tokens <= 2048 or len(b.indices) == 1
            assert len(b.indices) <= 64
        widths = [b.width for b in batches]
        assert widths == sorted(widths, reverse=True)

    def test_sorting_keeps_padding_waste_low(self) -> None:
        rng = random.Random(3)
        lengths = [rng.randint(5, 512) for _ in range(2000)]
        batches = plan_batches(lengths, batch_tokens=8192, max_batch_size=128)
        assert padding_waste(lengths, batches) < 0.05
        # Fixed batches of 32 in input order waste far more.
        naive = [
            type(batches[0])(
                indices=tuple(range(i, min(i + 32, 2000))), width=max(lengths[i : i + 32])
            )
            for i in range(0, 2000, 32)
        ]
        assert padding_waste(lengths, naive) > 0.3

    def test_budget_is_tokens_not_rows(self) -> None:
        short = plan_batches([10] * 100, batch_tokens=200, max_batch_size=1000)
        long = plan_batches([100] * 100, batch_tokens=200, max_batch_size=1000)
        assert [len(b.indices) for b in short] == [20] * 5
        assert [len(b.indices) for b in long] == [2] * 50

    def test_oversized_row_gets_its_own_batch(self) -> None:
        batches = plan_batches([5000, 3, 3], batch_tokens=100, max_batch_size=8)
        assert batches[0].indices == (0,)
        assert batches[1].indices == (1, 2)

    def test_pad_multiple_rounds_width_and_respects_budget(self) -> None:
        batches = plan_batches(
            [9, 9, 9, 9], batch_tokens=32, max_batch_size=8, pad_to_multiple_of=8
        )
        assert all(b.width == 16 for b in batches)
        assert [len(b.indices) for b in batches] == [2, 2]
        capped = plan_batches(
            [9, 5], batch_tokens=32, max_batch_size=8, pad_to_multiple_of=8, max_width=10
        )
        assert capped[0].width == 10  # never wider than the model's positions
        assert round_up(9, 8) == 16
        assert round_up(16, 8) == 16
        assert round_up(9, 1) == 9

    def test_stable_and_empty(self) -> None:
        assert plan_batches([], batch_tokens=10, max_batch_size=2) == []
        batches = plan_batches([4, 4, 4, 4], batch_tokens=100, max_batch_size=2)
        assert [b.indices for b in batches] == [(0, 1), (2, 3)]
        assert plan_batches([0, 0], batch_tokens=10, max_batch_size=4)[0].width == 1

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"batch_tokens": 0, "max_batch_size": 1}, "batch_tokens"),
            ({"batch_tokens": 10, "max_batch_size": 0}, "max_batch_size"),
        ],
    )
    def test_bad_limits(self, kwargs: dict[str, int], message: str) -> None:
        with pytest.raises(ValueError, match=message):
            plan_batches([1], **kwargs)
        with pytest.raises(ValueError, match="lengths"):
            plan_batches([-1], batch_tokens=10, max_batch_size=1)


def test_pad_batch() -> None:
    ids, mask = pad_batch([[5, 6, 7], [8]], width=4, pad_id=1)
    assert ids.tolist() == [[5, 6, 7, 1], [8, 1, 1, 1]]
    assert mask.tolist() == [[1, 1, 1, 0], [1, 0, 0, 0]]
    assert ids.dtype == np.int64
    assert mask.dtype == np.int64
