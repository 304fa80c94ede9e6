"""A DeploymentHandle in the shape of the in-process component it fronts: `await p.m(x)`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ray.exceptions import RayActorError
from ray.serve.handle import DeploymentHandle


class HandleProxy:
    """Fronts one deployment for the search pipeline: any method of the deployment is an async
    callable here, so a proxy satisfies the pipeline's protocols (`Classifier`, `Retriever`, ...)
    structurally, whichever deployment it fronts.

    A call whose replica dies under it (killed, OOM, node lost) is sent once more, whether it
    fails with a Ray actor error or comes back cancelled without this request having been
    cancelled: by then the router has usually dropped the dead replica, and every call here is
    safe to repeat (reads, and message writes keyed by their id). The request deadline still
    bounds the whole.
    """

    def __init__(self, handle: DeploymentHandle[Any]) -> None:
        self._handle = handle

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._handle, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return await method.remote(*args, **kwargs)
            except RayActorError:  # ActorDiedError, ActorUnavailableError
                return await method.remote(*args, **kwargs)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is None or task.cancelling():
                    raise  # this request itself is cancelled (its deadline): no retry
                # Cancelled under us, not by us: the call's replica was torn down mid-call.
                return await method.remote(*args, **kwargs)

        return call
