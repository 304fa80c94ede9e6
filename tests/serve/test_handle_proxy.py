"""HandleProxy: a deployment handle called like the component it fronts, retried once when the
replica under a call dies."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from ray.exceptions import RayActorError

from rayweave.serve.handle_proxy import HandleProxy


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

    async def cancel_midway() -> None:
        task = asyncio.ensure_future(HandleProxy(handle).classify("q"))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_midway())
    assert handle.classify.calls == 1
