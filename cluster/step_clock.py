"""`StepClock`: seconds per named step of a long operation.

The graph's upkeep after an ingest is several steps over the corpus (read, compute, write,
synonymy, ...), and which of them grows with the corpus decides what a one-file update costs at
scale. Reports and `rayweave bench update` print these figures, so that the growth is visible
from a command instead of a profiler.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

__all__ = ["StepClock"]


class StepClock:
    """Wall seconds per step name; a step timed twice adds up, a step that raises still counts."""

    def __init__(self) -> None:
        self._seconds: dict[str, float] = {}

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            elapsed = time.perf_counter() - started
            self._seconds[name] = self._seconds.get(name, 0.0) + elapsed

    def add(self, seconds: Mapping[str, float]) -> None:
        """Fold in another clock's steps (a callee's), in their order."""
        for name, value in seconds.items():
            self._seconds[name] = self._seconds.get(name, 0.0) + value

    @property
    def seconds(self) -> dict[str, float]:
        """A copy, steps in the order they first ran."""
        return dict(self._seconds)
