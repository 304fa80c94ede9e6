"""Micro-batching of concurrent calls into one blocking batch call (query encoding).

Eight clients each encoding one query on a 2-core replica queue eight forward passes; one
forward pass over eight queries costs little more than one. `MicroBatcher` gathers the calls
that arrive together and runs the batch function once, in a worker thread, for all of them.

Not `@serve.batch`: that needs a Serve replica context, and the same batcher must run where the
pipeline is in-process (the fused layout's replicas, `LocalSearch`, the evaluator), so that every
layout encodes the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class MicroBatcher(Generic[T, R]):
    """`await batcher(item)` -> `fn([.., item, ..])[i]`, one `fn` call per gathered group.

    Only the first call after an idle spell waits (`wait_s`) for company; calls that arrive while
    a batch runs form the next batch at once, so under load batches fill without waiting. A
    caller that is cancelled (its deadline passed) is dropped from batches not yet started.
    """

    def __init__(
        self, fn: Callable[[list[T]], Sequence[R]], *, max_batch: int, wait_s: float
    ) -> None:
        if max_batch < 1 or wait_s < 0:
            raise ValueError(f"max_batch must be >= 1 and wait_s >= 0, got {max_batch}, {wait_s}")
        self.fn = fn
        self.max_batch = max_batch
        self.wait_s = wait_s
        self._pending: list[tuple[T, asyncio.Future[R]]] = []
        self._worker: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.batches = 0  # batch calls made: how well calls grouped (tests read it)

    async def __call__(self, item: T) -> R:
        if self.max_batch == 1:
            self.batches += 1
            return (await asyncio.to_thread(self.fn, [item]))[0]
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new event loop (asyncio.run per call): start afresh
            self._loop, self._pending, self._worker = loop, [], None
        future: asyncio.Future[R] = loop.create_future()
        self._pending.append((item, future))
        if self._worker is None or self._worker.done():
            self._worker = loop.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        if self.wait_s > 0 and len(self._pending) < self.max_batch:
            await asyncio.sleep(self.wait_s)
        while self._pending:
            batch = [(i, f) for i, f in self._pending[: self.max_batch] if not f.done()]
            del self._pending[: self.max_batch]
            if not batch:
                continue
            self.batches += 1
            try:
                results = await asyncio.to_thread(self.fn, [i for i, _ in batch])
                if len(results) != len(batch):
                    raise RuntimeError(
                        f"batch function returned {len(results)} results for {len(batch)} items"
                    )
            except Exception as exc:  # noqa: BLE001 - re-raised to every caller of the batch
                for _, f in batch:
                    if not f.done():
                        f.set_exception(exc)
                continue
            for (_, f), r in zip(batch, results, strict=True):
                if not f.done():
                    f.set_result(r)
