"""The collector is off inside a pause and as it was after, whatever happens inside."""

from __future__ import annotations

import gc

import pytest

from rayweave.cluster.gc_pause import gc_paused


def test_off_inside_and_on_after_even_when_the_step_raises() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("step failed")
    assert gc.isenabled()


def test_a_nested_pause_keeps_it_off_until_the_outermost_ends() -> None:
    with gc_paused():
        with gc_paused():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_someone_else_turned_off_stays_off() -> None:
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_as_a_decorator_each_call_pauses() -> None:
    @gc_paused()
    def step() -> bool:
        return gc.isenabled()

    assert step() is False
    assert step() is False
    assert gc.isenabled()
