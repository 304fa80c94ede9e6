from __future__ import annotations

import asyncio

import pytest

from rayweave.cluster.errors import RateLimitError
from rayweave.cluster.settings import Settings
from rayweave.serve.rate_limit import (
    LocalRateLimiter,
    SharedRateLimiter,
    TokenBuckets,
    actor_name,
    remove_shared,
)


class TestTokenBuckets:
    def test_a_minutes_burst_then_the_refill_rate(self) -> None:
        buckets = TokenBuckets(per_minute=6)  # one token every 10 s
        assert [buckets.take("k", now=0.0) for _ in range(6)] == [0.0] * 6
        assert buckets.take("k", now=0.0) == pytest.approx(10.0)
        assert buckets.take("k", now=5.0) == pytest.approx(5.0)  # half a token so far
        assert buckets.take("k", now=10.0) == 0.0
        assert buckets.take("k", now=10.0) > 0

    def test_keys_are_independent_and_capacity_caps_the_refill(self) -> None:
        buckets = TokenBuckets(per_minute=2)
        assert buckets.take("a", now=0.0) == buckets.take("a", now=0.0) == 0.0
        assert buckets.take("a", now=0.0) > 0
        assert buckets.take("b", now=0.0) == 0.0
        # An hour idle refills to the minute's burst, not to 120 tokens.
        assert [buckets.take("b", now=3600.0) for _ in range(3)][:2] == [0.0, 0.0]
        assert buckets.take("b", now=3600.0) > 0

    def test_a_rate_below_one_is_refused(self) -> None:
        with pytest.raises(ValueError, match="per_minute"):
            TokenBuckets(per_minute=0)


def admitted(limiter: LocalRateLimiter | SharedRateLimiter, key: str) -> bool:
    """True when admitted; a refusal must say when to come back."""
    try:
        asyncio.run(limiter.check(key))
    except RateLimitError as exc:
        retry_after = exc.retry_after_s
    else:
        return True
    assert retry_after > 0
    return False


def test_local_limiter_raises_the_429_error() -> None:
    limiter = LocalRateLimiter(per_minute=3)
    assert [admitted(limiter, "k") for _ in range(4)] == [True, True, True, False]


@pytest.mark.integration
def test_replicas_share_one_budget(ray_stack: Settings) -> None:
    """Two replicas' limiters of one app admit the configured rate in total, not each."""
    import ray

    ns = ray_stack.ray.namespace
    first = SharedRateLimiter("rl-test", per_minute=4, namespace=ns)
    second = SharedRateLimiter("rl-test", per_minute=4, namespace=ns)
    other_app = SharedRateLimiter("rl-other", per_minute=4, namespace=ns)
    try:
        turns = [admitted(first if i % 2 else second, "k") for i in range(6)]
        assert turns == [True, True, True, True, False, False]
        assert admitted(other_app, "k")  # another app has its own buckets
    finally:
        assert remove_shared("rl-test", namespace=ns)
        assert remove_shared("rl-other", namespace=ns)
    assert not remove_shared("rl-test", namespace=ns)
    with pytest.raises(ValueError, match="rl-test"):
        ray.get_actor(actor_name("rl-test"), namespace=ns)
