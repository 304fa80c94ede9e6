"""A resource opened on demand and closed after a while unused.

Store actors are detached and named per collection, so every `rayweave eval` namespace or
corpus ever searched keeps its actor; what costs is the engine each one holds (memory, file
handles, the folder lock), not the idle process. `IdleResource` lets such an actor give the
engine back after `idle_s` without calls and reopen it on the next one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

T = TypeVar("T")


class IdleResource(Generic[T]):
    """`use()` opens the resource when closed and counts the caller in; `close_if_idle()` closes
    it when nobody uses it and the last use ended `idle_s` ago (`idle_s` 0 = never).

    Opening and closing hold one lock, so a caller never sees a half-closed resource and a
    reopen waits for the close (an engine's folder lock must be released first)."""

    def __init__(
        self,
        open_fn: Callable[[], T],
        close_fn: Callable[[T], None],
        *,
        idle_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._open_fn, self._close_fn = open_fn, close_fn
        self.idle_s = idle_s
        self._clock = clock
        self._lock = threading.Lock()
        self._value: T | None = None
        self._in_use = 0
        self._last = clock()
        self.opens = 0

    def open(self) -> T:
        with self._lock:
            return self._ensure_open()

    def _ensure_open(self) -> T:
        if self._value is None:
            self._value = self._open_fn()
            self.opens += 1
        return self._value

    @contextmanager
    def use(self) -> Iterator[T]:
        with self._lock:
            value = self._ensure_open()
            self._in_use += 1
        try:
            yield value
        finally:
            with self._lock:
                self._in_use -= 1
                self._last = self._clock()

    def close_if_idle(self) -> bool:
        """Close when idle long enough; True when it closed now."""
        with self._lock:
            if (
                self._value is None
                or self.idle_s <= 0
                or self._in_use
                or self._clock() - self._last < self.idle_s
            ):
                return False
            return self._close_locked()

    def close(self) -> bool:
        """Close now, whoever uses it next reopens it; True when it was open."""
        with self._lock:
            return self._close_locked()

    def _close_locked(self) -> bool:
        value, self._value = self._value, None
        if value is None:
            return False
        self._close_fn(value)
        return True

    @property
    def is_open(self) -> bool:
        return self._value is not None

    def idle_for(self) -> float:
        """Seconds since the last use ended (0 while in use)."""
        with self._lock:
            return 0.0 if self._in_use else max(0.0, self._clock() - self._last)

    def watch(self, stop: threading.Event, *, every_s: float | None = None) -> threading.Thread:
        """A daemon thread that calls `close_if_idle` until `stop` is set."""
        period = every_s if every_s is not None else max(0.05, min(self.idle_s / 4, 5.0))

        def loop() -> None:
            while not stop.wait(period):
                self.close_if_idle()

        thread = threading.Thread(target=loop, name="idle-close", daemon=True)
        thread.start()
        return thread


__all__ = ["IdleResource"]
