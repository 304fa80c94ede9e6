from __future__ import annotations

import threading

import pytest

from rayweave.cluster.services.idle import IdleResource


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def make(idle_s: float = 10.0) -> tuple[IdleResource[list[str]], Clock, list[str]]:
    clock, log = Clock(), []

    def open_fn() -> list[str]:
        log.append("open")
        return ["engine"]

    def close_fn(value: list[str]) -> None:
        log.append(f"close {value[0]}")

    return IdleResource(open_fn, close_fn, idle_s=idle_s, clock=clock), clock, log


def test_closes_after_the_idle_time_and_reopens_on_use() -> None:
    res, clock, log = make(idle_s=10)
    with res.use() as value:
        assert value == ["engine"]
    clock.now = 9.9
    assert not res.close_if_idle()
    clock.now = 10.0
    assert res.close_if_idle()
    assert not res.is_open
    assert not res.close_if_idle()  # nothing left to close
    with res.use():
        pass
    assert log == ["open", "close engine", "open"]
    assert res.opens == 2


def test_never_closes_while_in_use() -> None:
    res, clock, log = make(idle_s=1)
    with res.use():
        clock.now = 100.0
        assert not res.close_if_idle()
        assert res.idle_for() == 0.0
    assert res.idle_for() == 0.0  # the use just ended
    clock.now = 101.0
    assert res.close_if_idle()
    assert log == ["open", "close engine"]


def test_zero_idle_time_never_closes_but_close_does() -> None:
    res, clock, _ = make(idle_s=0)
    res.open()
    clock.now = 1e9
    assert not res.close_if_idle()
    assert res.close()
    assert not res.close()


def test_a_failed_open_leaves_it_closed_and_raises() -> None:
    attempts = []

    def open_fn() -> str:
        attempts.append(1)
        if len(attempts) == 1:
            raise OSError("folder locked")
        return "engine"

    res: IdleResource[str] = IdleResource(open_fn, lambda _: None, idle_s=1)
    with pytest.raises(OSError, match="locked"), res.use():
        pass
    assert not res.is_open
    with res.use() as value:
        assert value == "engine"


def test_the_watcher_closes_an_idle_resource() -> None:
    res: IdleResource[str] = IdleResource(lambda: "engine", lambda _: None, idle_s=0.05)
    res.open()
    stop = threading.Event()
    thread = res.watch(stop, every_s=0.01)
    try:
        for _ in range(500):
            if not res.is_open:
                break
            stop.wait(0.01)
        assert not res.is_open
    finally:
        stop.set()
        thread.join(timeout=5)
