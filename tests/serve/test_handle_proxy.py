"""HandleProxy: a deployment handle called like the component it fronts, retried once when the
replica under a call dies, and answered in process when it has a local twin and the deployment
fails or stalls."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Coroutine
from typing import Any

import pytest
from ray.exceptions import RayActorError

from rayweave.serve.handle_proxy import HandleProxy
from rayweave.serve.hedging import MIN_SAMPLES


def cancel_after(seconds: float, call: Coroutine[Any, Any, Any]) -> None:
    """Run `call` as a request that is itself cancelled after `seconds`; the cancellation must
    reach the caller."""

    async def cancel() -> None:
        task = asyncio.ensure_future(call)
        await asyncio.sleep(seconds)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel())


class _Method:
    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    async def remote(self, *args: Any, **kwargs: Any) -> str:
        self.calls.append((args, kwargs))
        if len(self.calls) <= self.failures:
            raise RayActorError()
        return f"classified {args[0]}"


class _Handle:
    def __init__(self, failures: int) -> None:
        self.classify = _Method(failures)


def test_a_call_reaches_the_deployment_method_with_its_arguments() -> None:
    handle: Any = _Handle(failures=0)
    assert asyncio.run(HandleProxy(handle).classify("q", top_k=3)) == "classified q"
    assert handle.classify.calls == [(("q",), {"top_k": 3})]


def test_a_call_whose_replica_died_is_sent_once_more() -> None:
    handle: Any = _Handle(failures=1)
    assert asyncio.run(HandleProxy(handle).classify("q")) == "classified q"
    assert len(handle.classify.calls) == 2


def test_a_second_failure_is_raised() -> None:
    handle: Any = _Handle(failures=2)
    with pytest.raises(RayActorError):
        asyncio.run(HandleProxy(handle).classify("q"))
    assert len(handle.classify.calls) == 2


class _CancelledUnder:
    """A method whose first call comes back cancelled (its replica torn down mid-call)."""

    def __init__(self) -> None:
        self.calls = 0

    async def remote(self, text: str) -> str:
        self.calls += 1
        if self.calls == 1:
            raise asyncio.CancelledError
        return f"classified {text}"


class _Hangs:
    def __init__(self) -> None:
        self.calls = 0

    async def remote(self, text: str) -> str:
        self.calls += 1
        await asyncio.Event().wait()
        return text


def test_a_call_cancelled_under_the_request_is_sent_once_more() -> None:
    handle: Any = type("H", (), {"classify": _CancelledUnder()})()
    assert asyncio.run(HandleProxy(handle).classify("q")) == "classified q"
    assert handle.classify.calls == 2


def test_a_request_cancelled_itself_is_not_retried() -> None:
    handle: Any = type("H", (), {"classify": _Hangs()})()

    cancel_after(0.01, HandleProxy(handle).classify("q"))
    assert handle.classify.calls == 1


class _Local:
    async def classify(self, text: str) -> str:
        return f"local {text}"


def test_a_call_that_fails_twice_is_answered_by_the_local_twin() -> None:
    handle: Any = _Handle(failures=2)
    proxy = HandleProxy(handle, local=_Local(), timeout_s=1.0)
    assert asyncio.run(proxy.classify("q")) == "local q"
    assert len(handle.classify.calls) == 2


def test_a_stalled_call_is_answered_by_the_local_twin_at_its_bound() -> None:
    handle: Any = type("H", (), {"classify": _Hangs()})()
    proxy = HandleProxy(handle, local=_Local(), timeout_s=0.05)

    async def timed() -> tuple[str, float]:
        started = asyncio.get_running_loop().time()
        answer = await proxy.classify("q")
        return answer, asyncio.get_running_loop().time() - started

    answer, seconds = asyncio.run(timed())
    assert answer == "local q"
    assert seconds < 1.0


def test_a_healthy_deployment_answers_itself() -> None:
    handle: Any = _Handle(failures=0)
    assert asyncio.run(HandleProxy(handle, local=_Local()).classify("q")) == "classified q"


def test_a_request_cancelled_itself_is_not_answered_locally() -> None:
    handle: Any = type("H", (), {"classify": _Hangs()})()
    proxy = HandleProxy(handle, local=_Local(), timeout_s=10.0)

    cancel_after(0.01, proxy.classify("q"))


class _AlwaysCancelledUnder:
    async def remote(self, text: str) -> str:
        raise asyncio.CancelledError


def test_a_call_cancelled_under_the_request_twice_is_answered_locally() -> None:
    handle: Any = type("H", (), {"classify": _AlwaysCancelledUnder()})()
    proxy = HandleProxy(handle, local=_Local(), timeout_s=1.0)
    assert asyncio.run(proxy.classify("q")) == "local q"


class _HangsFirst:
    """Calls before number `answer_from` hang (their replica's node was just killed); later ones
    answer at once (None: every call hangs). Records which calls were cancelled."""

    def __init__(self, answer_from: int | None = 2) -> None:
        self.answer_from = answer_from
        self.calls = 0
        self.cancelled: list[int] = []

    async def remote(self, text: str) -> str:
        self.calls += 1
        number = self.calls
        if self.answer_from is None or number < self.answer_from:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled.append(number)
                raise
        return f"answer {number} to {text}"


def test_a_read_unanswered_past_the_hedge_delay_is_sent_again_and_the_first_answer_wins() -> None:
    handle: Any = type("H", (), {"retrieve": _HangsFirst()})()
    proxy = HandleProxy(handle, hedged=("retrieve",), hedge_after_s=0.05)

    async def run() -> None:
        assert await proxy.retrieve("q") == "answer 2 to q"
        await asyncio.sleep(0.05)
        assert handle.retrieve.calls == 2
        # The hung call is abandoned, not cancelled (see `HandleProxy`: a cancel sent to a
        # dead node's replica is a ray.cancel that buys nothing).
        assert handle.retrieve.cancelled == []

    asyncio.run(run())


def test_a_prompt_answer_is_not_hedged_and_unlisted_methods_never_are() -> None:
    handle: Any = _Handle(failures=0)
    proxy = HandleProxy(handle, hedged=("classify",), hedge_after_s=0.05)
    assert asyncio.run(proxy.classify("q")) == "classified q"
    assert len(handle.classify.calls) == 1

    hung: Any = type("H", (), {"classify": _HangsFirst()})()
    unlisted = HandleProxy(hung, hedged=("retrieve",), hedge_after_s=0.01)

    async def bounded() -> None:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(unlisted.classify("q"), timeout=0.2)

    asyncio.run(bounded())
    assert hung.classify.calls == 1


def test_cancelling_the_request_stops_its_wait_and_abandons_both_copies() -> None:
    handle: Any = type("H", (), {"retrieve": _HangsFirst(answer_from=None)})()
    proxy = HandleProxy(handle, hedged=("retrieve",), hedge_after_s=0.01)

    async def run() -> None:
        request = asyncio.ensure_future(proxy.retrieve("q"))
        await asyncio.sleep(0.05)  # the hedge went out at 0.01 s
        request.cancel()
        with pytest.raises(asyncio.CancelledError):
            await request
        await asyncio.sleep(0.01)
        assert handle.retrieve.calls == 2
        assert handle.retrieve.cancelled == []

    asyncio.run(run())


class _FailsLate:
    """Raises after `seconds` (a replica that died while the caller had stopped waiting)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.finished = False

    async def remote(self, text: str) -> str:
        await asyncio.sleep(self.seconds)
        self.finished = True
        raise RayActorError()


def test_a_call_whose_wait_times_out_is_abandoned_and_its_late_failure_is_not_reported() -> None:
    handle: Any = type("H", (), {"retrieve": _FailsLate(0.03)})()
    unhandled: list[object] = []

    async def run() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _, ctx: unhandled.append(ctx))
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(HandleProxy(handle).retrieve("q"), timeout=0.01)
        await asyncio.sleep(0.06)
        gc.collect()

    asyncio.run(run())
    assert handle.retrieve.finished  # the wait stopped; the call ran to its end
    assert unhandled == []  # its failure was seen, not logged as never retrieved


class _Slow:
    """Every call answers after `seconds` (a loaded replica)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.calls = 0

    async def remote(self, text: str) -> str:
        self.calls += 1
        await asyncio.sleep(self.seconds)
        return text


def test_reads_slower_than_the_floor_are_hedged_only_until_their_history_says_they_are_normal() -> (
    None
):
    slow = _Slow(0.1)
    handle: Any = type("H", (), {"retrieve": slow})()
    hedged: list[str] = []
    proxy = HandleProxy(handle, hedged=("retrieve",), hedge_after_s=0.01, on_hedge=hedged.append)

    async def run(n: int) -> None:
        for _ in range(n):
            assert await proxy.retrieve("q") == "q"

    asyncio.run(run(MIN_SAMPLES))
    assert hedged == ["retrieve"] * MIN_SAMPLES  # every 100 ms read passed the 10 ms floor
    assert slow.calls == 2 * MIN_SAMPLES
    # Now the read's own 95th percentile (~100 ms) is the wait: reads of 30 ms are a load,
    # not a lost replica, and go out once.
    slow.seconds = 0.03
    asyncio.run(run(10))
    assert len(hedged) == MIN_SAMPLES
    assert slow.calls == 2 * MIN_SAMPLES + 10
