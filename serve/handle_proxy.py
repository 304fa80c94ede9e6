"""A DeploymentHandle in the shape of the in-process component it fronts: `await p.m(x)`."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Collection
from typing import Any

from ray.exceptions import RayActorError
from ray.serve.handle import DeploymentHandle

from rayweave.serve.hedging import HedgeDelay
from rayweave.serve.search import request_cancelled

logger = logging.getLogger(__name__)


class HandleProxy:
    """Fronts one deployment for the search pipeline: any method of the deployment is an async
    callable here, so a proxy satisfies the pipeline's protocols (`Classifier`, `Retriever`, ...)
    structurally, whichever deployment it fronts.

    A call whose replica dies under it (killed, OOM, node lost) is sent once more, whether it
    fails with a Ray actor error or comes back cancelled without this request having been
    cancelled: by then the router has usually dropped the dead replica, and every call here is
    safe to repeat (reads, and message writes keyed by their id). The request deadline still
    bounds the whole.

    A replica on a node that was just killed neither answers nor fails: its calls hang until the
    connection is declared lost (about 2 s here, the whole default deadline). So the reads named
    in `hedged` are sent a second time when the first has not answered after `hedge_after_s`,
    or after the read's recent 95th-percentile latency when that is later (`serve/hedging.py`:
    Dean and Barroso's hedged requests), the router sending that copy to a replica that answers
    its probes; the first answer wins and the other call is abandoned. `on_hedge(method)` is
    told of each second copy sent (the Ingress counts them).

    A call this proxy stops waiting for (a hedge's loser, a read past the deadline, a request
    that is itself cancelled) is abandoned, not cancelled: Ray Serve answers the cancel of a
    call still waiting on its replica's admission answer with a `ray.cancel` of it, and in a CI
    run the Ingress replica that did so for a call on a just-killed node sent no response for
    the next 14 s (its log: "Cancelling request that has already been assigned to a replica",
    then silence until a replacement replica was up). That was a suspicion, and CI runs since
    show the same stall with abandoned calls, so it was not the stall's cause. Abandoning is
    kept: the calls it leaves mostly wait on a lost or stalled replica, where a cancel buys
    nothing; the cost is that work past the deadline on a live replica is not withdrawn. Every
    call here is a read or an idempotent write, so an abandoned one only finishes, or fails,
    unobserved.

    A deployment whose work is a pure function of its arguments (the rule classifier, fusion)
    can also be given as `local`, an in-process instance: a call that fails both times, or that
    has not answered within `timeout_s`, is answered by it instead, so such a stage never
    fails or stalls a request; the result is the same, only where it ran differs.
    """

    def __init__(
        self,
        handle: DeploymentHandle[Any],
        *,
        local: object | None = None,
        timeout_s: float | None = None,
        hedged: Collection[str] = (),
        hedge_after_s: float | None = None,
        on_hedge: Callable[[str], None] | None = None,
    ) -> None:
        self._handle = handle
        self._local = local
        self._timeout_s = timeout_s
        self._hedged = frozenset(hedged) if hedge_after_s else frozenset()
        self._delay = HedgeDelay(hedge_after_s) if hedge_after_s else None
        self._on_hedge = on_hedge

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._handle, name)
        delay = self._delay if name in self._hedged else None

        def send(*args: Any, **kwargs: Any) -> Awaitable[Any]:
            def call() -> Awaitable[Any]:
                return _abandoned_if_cancelled(method.remote(*args, **kwargs))

            if delay is None:
                return call()
            return _first_answer(call, name, delay, self._on_hedge)

        async def remote(*args: Any, **kwargs: Any) -> Any:
            try:
                return await send(*args, **kwargs)
            except RayActorError:  # ActorDiedError, ActorUnavailableError
                return await send(*args, **kwargs)
            except asyncio.CancelledError:
                if request_cancelled():
                    raise  # this request itself is cancelled (its deadline): no retry
                # Cancelled under us, not by us: the call's replica was torn down mid-call.
                return await send(*args, **kwargs)

        if self._local is None:
            return remote
        fallback = getattr(self._local, name)

        async def bounded(*args: Any, **kwargs: Any) -> Any:
            try:
                return await asyncio.wait_for(remote(*args, **kwargs), timeout=self._timeout_s)
            except asyncio.CancelledError:
                if request_cancelled():
                    raise
                failure: BaseException = asyncio.CancelledError()
            except Exception as exc:  # noqa: BLE001 - any failure of the remote call falls back
                failure = exc
            logger.warning("%s failed remotely (%r); answered in process", name, failure)
            return await fallback(*args, **kwargs)

        return bounded


def _abandoned_if_cancelled(response: Awaitable[Any]) -> Awaitable[Any]:
    """`response` behind a shield: cancelling what is returned stops the wait, never the call
    (see `HandleProxy`); the call's own failure or cancellation still reaches the waiter."""
    call = asyncio.ensure_future(response)
    call.add_done_callback(_retrieve)
    return asyncio.shield(call)


def _retrieve(call: asyncio.Future[Any]) -> None:
    """Marks an abandoned call's failure as seen (asyncio would log it as never retrieved)."""
    if not call.cancelled():
        call.exception()


async def _first_answer(
    call: Callable[[], Awaitable[Any]],
    name: str,
    delay: HedgeDelay,
    on_hedge: Callable[[str], None] | None,
) -> Any:
    """`call()`'s answer; if none came within `delay`'s wait for `name`, the first answer of it
    and of a second `call()`. Both failing raises the later failure; whatever is left is no
    longer waited for (abandoned, see `HandleProxy`). The answering copy's own latency is
    recorded in `delay`."""
    sent: dict[asyncio.Future[Any], float] = {asyncio.ensure_future(call()): time.perf_counter()}
    try:
        done, _ = await asyncio.wait(sent, timeout=delay.delay(name))
        if not done:
            sent[asyncio.ensure_future(call())] = time.perf_counter()
            if on_hedge is not None:
                on_hedge(name)
        pending: set[asyncio.Future[Any]] = set(sent)
        failure: BaseException = asyncio.CancelledError()
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for future in done:
                if future.cancelled():
                    continue
                if future.exception() is None:
                    delay.observe(name, time.perf_counter() - sent[future])
                    return future.result()
                failure = future.exception() or failure
        raise failure
    finally:
        for future in sent:
            future.cancel()
