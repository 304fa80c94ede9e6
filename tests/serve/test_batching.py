"""Micro-batching of concurrent calls: grouping, order, errors and cancelled callers."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from rayweave.serve.batching import MicroBatcher


class Recorder:
    def __init__(self, delay_s: float = 0.0, fail_on: str | None = None) -> None:
        self.calls: list[list[str]] = []
        self.delay_s = delay_s
        self.fail_on = fail_on
        self.threads: set[int] = set()

    def __call__(self, items: list[str]) -> list[str]:
        self.calls.append(list(items))
        self.threads.add(threading.get_ident())
        time.sleep(self.delay_s)
        if self.fail_on in items:
            raise ValueError(f"cannot encode {self.fail_on!r}")
        return [i.upper() for i in items]


def test_concurrent_calls_share_one_batch_and_each_gets_its_own_result() -> None:
    fn = Recorder()
    batcher = MicroBatcher(fn, max_batch=16, wait_s=0.01)

    async def main() -> list[str]:
        return list(await asyncio.gather(*(batcher(f"q{i}") for i in range(8))))

    assert asyncio.run(main()) == [f"Q{i}" for i in range(8)]
    assert fn.calls == [[f"q{i}" for i in range(8)]]
    assert threading.get_ident() not in fn.threads  # the event loop never runs the model


def test_calls_arriving_during_a_batch_form_the_next_one_up_to_the_cap() -> None:
    fn = Recorder(delay_s=0.05)
    batcher = MicroBatcher(fn, max_batch=3, wait_s=0.0)

    async def main() -> list[str]:
        first = asyncio.ensure_future(batcher("a"))
        await asyncio.sleep(0.01)  # "a" is encoding alone
        rest = [batcher(x) for x in "bcdef"]
        return [await first, *await asyncio.gather(*rest)]

    assert asyncio.run(main()) == list("ABCDEF")
    assert fn.calls == [["a"], ["b", "c", "d"], ["e", "f"]]


def test_a_failing_batch_fails_its_callers_and_the_next_batch_still_runs() -> None:
    fn = Recorder(delay_s=0.02, fail_on="bad")
    batcher = MicroBatcher(fn, max_batch=2, wait_s=0.005)

    async def main() -> list[object]:
        return list(
            await asyncio.gather(
                *(batcher(x) for x in ("ok", "bad", "fine")), return_exceptions=True
            )
        )

    out = asyncio.run(main())
    assert isinstance(out[0], ValueError)
    assert isinstance(out[1], ValueError)
    assert "bad" in str(out[1])
    assert out[2] == "FINE"


def test_cancelled_callers_are_left_out_of_batches_not_yet_started() -> None:
    fn = Recorder(delay_s=0.05)
    batcher = MicroBatcher(fn, max_batch=4, wait_s=0.0)

    async def main() -> str:
        first = asyncio.ensure_future(batcher("a"))
        await asyncio.sleep(0.01)
        gone = asyncio.ensure_future(batcher("gone"))
        kept = asyncio.ensure_future(batcher("kept"))
        await asyncio.sleep(0)
        gone.cancel()
        await first
        return await kept

    assert asyncio.run(main()) == "KEPT"
    assert fn.calls == [["a"], ["kept"]]


def test_one_item_batches_skip_the_queue_and_a_new_event_loop_starts_clean() -> None:
    fn = Recorder()
    single = MicroBatcher(fn, max_batch=1, wait_s=1.0)
    started = time.perf_counter()
    assert asyncio.run(single("x")) == "X"
    assert time.perf_counter() - started < 0.5  # no wait without batching
    batcher = MicroBatcher(fn, max_batch=4, wait_s=0.0)
    assert asyncio.run(batcher("y")) == "Y"
    assert asyncio.run(batcher("z")) == "Z"  # a second asyncio.run: a fresh loop, same batcher
    assert (single.batches, batcher.batches) == (1, 2)
    with pytest.raises(ValueError, match="max_batch"):
        MicroBatcher(fn, max_batch=0, wait_s=0.0)
