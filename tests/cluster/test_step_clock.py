from __future__ import annotations

import time

import pytest

from rayweave.cluster.step_clock import StepClock


def test_steps_keep_their_order_and_add_up() -> None:
    clock = StepClock()
    with clock.step("read"):
        time.sleep(0.01)
    with clock.step("write"):
        pass
    with clock.step("read"):
        time.sleep(0.01)
    seconds = clock.seconds
    assert list(seconds) == ["read", "write"]
    assert seconds["read"] >= 0.02
    assert seconds["write"] < seconds["read"]


def _slow_failure(clock: StepClock) -> None:
    with clock.step("compute"):
        time.sleep(0.01)
        raise RuntimeError("boom")


def test_a_step_that_raises_still_counts() -> None:
    clock = StepClock()
    with pytest.raises(RuntimeError, match="boom"):
        _slow_failure(clock)
    assert clock.seconds["compute"] >= 0.01


def test_a_callees_steps_fold_in_and_the_copy_is_the_callers() -> None:
    clock = StepClock()
    with clock.step("read"):
        pass
    clock.add({"read": 1.0, "synonymy": 2.0})
    seconds = clock.seconds
    assert list(seconds) == ["read", "synonymy"]
    assert seconds["read"] >= 1.0
    seconds["synonymy"] = 0.0
    assert clock.seconds["synonymy"] == 2.0
