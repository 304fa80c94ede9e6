"""Retry policies: how many attempts a task gets and how long to wait between them."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from ferry.errors import ConfigError, Reject


@dataclass(frozen=True)
class RetryPolicy:
    """When and how often to run a failed task again.

    `max_attempts` counts the first run, so the default of 3 means two retries. The delay before
    attempt n is drawn uniformly from [0, min(max_delay, base * 2 ** (n - 2))] ("full jitter"),
    which spreads out retries of tasks that failed together.
    """

    max_attempts: int = 3
    retry_on: tuple[type[BaseException], ...] = (Exception,)
    base: float = 2.0
    max_delay: float = 300.0
    rng: Callable[[], float] = field(default=random.random, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ConfigError(f"max_attempts must be at least 1, got {self.max_attempts}")
        if self.base <= 0 or self.max_delay <= 0:
            raise ConfigError("backoff base and max_delay must be positive")

    def should_retry(self, error: BaseException, attempt: int) -> bool:
        """Whether a task that failed on `attempt` (1-based) with `error` runs again."""
        if isinstance(error, Reject):
            return False
        if attempt >= self.max_attempts:
            return False
        return isinstance(error, self.retry_on)

    def delay(self, next_attempt: int) -> float:
        """Seconds to wait before `next_attempt` (2 for the first retry)."""
        if next_attempt < 2:
            return 0.0
        ceiling = min(self.max_delay, self.base * 2 ** (next_attempt - 2))
        return ceiling * self.rng()


def parse_rate_limit(spec: str) -> tuple[int, float]:
    """'10/m' -> (10, 60.0): runs allowed per window of seconds."""
    try:
        count_text, unit = spec.split("/", 1)
        count = int(count_text)
        seconds = {"s": 1.0, "m": 60.0, "h": 3600.0}[unit.strip()]
    except (ValueError, KeyError) as exc:
        raise ConfigError(f"invalid rate_limit {spec!r}; expected '<count>/<s|m|h>'") from exc
    if count < 1:
        raise ConfigError(f"invalid rate_limit {spec!r}; count must be positive")
    return count, seconds
