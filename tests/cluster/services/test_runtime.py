"""The environment rayweave starts Ray with, and that it reaches the embedded head's workers."""

from __future__ import annotations

import os

import pytest

from rayweave.cluster.services.runtime import ray_environment
from rayweave.cluster.settings import Settings


def test_auth_mode_is_explicit_either_way() -> None:
    """Once ~/.ray/auth_token exists Ray turns token mode on by itself, so 'none' must say so."""
    assert ray_environment(Settings(ray={"auth": "token"}))["RAY_AUTH_MODE"] == "token"
    assert ray_environment(Settings(ray={"auth": "none"}))["RAY_AUTH_MODE"] == "disabled"


@pytest.mark.integration
def test_workers_of_the_embedded_head_inherit_it(ray_stack: Settings) -> None:
    """Ray reads these at import in each worker (Serve replicas included): they must be in a
    worker's environment, not only in the process that started the head."""
    import ray

    @ray.remote(num_cpus=0)
    def environment(names: list[str]) -> dict[str, str | None]:
        return {name: os.environ.get(name) for name in names}

    expected = ray_environment(ray_stack)
    assert ray.get(environment.remote(sorted(expected))) == expected
