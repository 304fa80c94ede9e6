"""Per-key rate limiting that holds across every replica of the ingress.

A token bucket per key (`TokenBuckets`, pure) answers whether a request may run. Kept in one
replica it would allow N times the configured rate behind N replicas, so a deployed app keeps the
buckets in one small named Ray actor per application that every replica asks (one actor call,
well under a millisecond of work, and only when `serve.rate_limit_per_minute` is set). Tests and
single-process servers keep the buckets in process.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Protocol

import ray

from rayweave.cluster.errors import RateLimitError
from rayweave.cluster.settings import Settings

ACTOR_PREFIX = "rayweave-rate-limit:"


class TokenBuckets:
    """`per_minute` requests per key, refilled continuously, bursts up to a minute's worth."""

    def __init__(self, per_minute: int) -> None:
        if per_minute < 1:
            raise ValueError(f"per_minute must be >= 1, got {per_minute}")
        self.rate = per_minute / 60.0
        self.capacity = float(per_minute)
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key: str, now: float) -> float:
        """Spend one token of `key`: 0.0 when admitted, else the seconds until one is due."""
        with self._lock:
            tokens, last = self._buckets.get(key, (self.capacity, now))
            tokens = min(self.capacity, tokens + max(0.0, now - last) * self.rate)
            if tokens < 1.0:
                self._buckets[key] = (tokens, now)
                return (1.0 - tokens) / self.rate
            self._buckets[key] = (tokens - 1.0, now)
            return 0.0


class RateLimiter(Protocol):
    async def check(self, key: str) -> None:
        """Raise `RateLimitError` (429) when `key` is over its rate."""


def _raise_if_limited(retry_after_s: float) -> None:
    if retry_after_s > 0:
        raise RateLimitError("rate limit exceeded for this API key", retry_after_s=retry_after_s)


class LocalRateLimiter:
    """Buckets in this process: one server, or tests."""

    def __init__(self, per_minute: int) -> None:
        self.buckets = TokenBuckets(per_minute)

    async def check(self, key: str) -> None:
        _raise_if_limited(self.buckets.take(key, time.monotonic()))


@ray.remote(num_cpus=0)
class RateLimitActor:
    """The buckets of one application, shared by its replicas."""

    def __init__(self, per_minute: int) -> None:
        self.buckets = TokenBuckets(per_minute)

    def take(self, key: str) -> float:
        return self.buckets.take(key, time.monotonic())


class SharedRateLimiter:
    """Asks the application's `RateLimitActor`, created by whichever replica comes first."""

    def __init__(self, app_name: str, per_minute: int, *, namespace: str) -> None:
        self.actor: Any = RateLimitActor.options(  # type: ignore[attr-defined]
            name=actor_name(app_name),
            namespace=namespace,
            lifetime="detached",  # outlives any one replica; removed with the app
            get_if_exists=True,
        ).remote(per_minute)

    async def check(self, key: str) -> None:
        _raise_if_limited(await self.actor.take.remote(key))


def replica_limiter(settings: Settings) -> RateLimiter | None:
    """The limiter an ingress replica serves with: shared by the app's replicas, or none."""
    per_minute = settings.serve.rate_limit_per_minute
    if not per_minute:
        return None
    return SharedRateLimiter(settings.serve.app_name, per_minute, namespace=settings.ray.namespace)


def actor_name(app_name: str) -> str:
    return f"{ACTOR_PREFIX}{app_name}"


def remove_shared(app_name: str, *, namespace: str) -> bool:
    """Kill the application's limiter actor, if one runs; True when one did."""
    try:
        handle = ray.get_actor(actor_name(app_name), namespace=namespace)
    except ValueError:
        return False
    ray.kill(handle, no_restart=True)
    return True


__all__ = [
    "LocalRateLimiter",
    "RateLimitActor",
    "RateLimiter",
    "SharedRateLimiter",
    "TokenBuckets",
    "remove_shared",
    "replica_limiter",
]
