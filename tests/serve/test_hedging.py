"""HedgeDelay: the floor until a read has a history, then that read's recent 95th percentile
when it is later than the floor."""

from __future__ import annotations

import pytest

from rayweave.serve.hedging import MIN_SAMPLES, HedgeDelay


def test_the_floor_holds_until_a_method_has_enough_answered_reads() -> None:
    delay = HedgeDelay(0.5)
    for _ in range(MIN_SAMPLES - 1):
        delay.observe("retrieve", 2.0)
    assert delay.delay("retrieve") == 0.5
    delay.observe("retrieve", 2.0)
    assert delay.delay("retrieve") == pytest.approx(2.0)


def test_a_loaded_read_waits_for_its_own_95th_percentile_and_a_fast_one_for_the_floor() -> None:
    delay = HedgeDelay(0.5)
    for i in range(100):
        delay.observe("retrieve", 0.9 + i / 100)  # 0.90 .. 1.89 s: a loaded service
        delay.observe("hydrate", 0.01)
    assert delay.delay("retrieve") == pytest.approx(1.8405)
    assert delay.delay("hydrate") == 0.5
    assert delay.delay("expand") == 0.5  # no history


def test_only_the_last_window_of_reads_counts() -> None:
    delay = HedgeDelay(0.1, window=50)
    for _ in range(50):
        delay.observe("retrieve", 3.0)
    for _ in range(50):
        delay.observe("retrieve", 0.02)  # the load has passed
    assert delay.delay("retrieve") == 0.1


@pytest.mark.parametrize(("floor", "quantile"), [(0.0, 0.95), (0.5, 1.0), (0.5, 0.0)])
def test_a_floor_or_quantile_out_of_range_is_refused(floor: float, quantile: float) -> None:
    with pytest.raises(ValueError, match="hedge"):
        HedgeDelay(floor, quantile=quantile)
