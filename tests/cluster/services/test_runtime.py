"""The environment rayweave starts Ray with, and that it reaches the embedded head's workers."""

from __future__ import annotations

import os

import pytest

from rayweave.cluster.services.runtime import head_system_config, ray_environment
from rayweave.cluster.settings import Settings


def test_auth_mode_is_explicit_either_way() -> None:
    """Once ~/.ray/auth_token exists Ray turns token mode on by itself, so 'none' must say so."""
    assert ray_environment(Settings(ray={"auth": "token"}))["RAY_AUTH_MODE"] == "token"
    assert ray_environment(Settings(ray={"auth": "none"}))["RAY_AUTH_MODE"] == "disabled"


def test_the_dashboard_learns_grafana_and_prometheus_only_when_configured() -> None:
    assert not any("GRAFANA" in k or "PROMETHEUS" in k for k in ray_environment(Settings()))
    env = ray_environment(
        Settings(ray={"grafana_host": "http://g:3000", "prometheus_host": "http://p:9090"})
    )
    assert env["RAY_GRAFANA_HOST"] == "http://g:3000"
    assert env["RAY_PROMETHEUS_HOST"] == "http://p:9090"
    assert "RAY_GRAFANA_IFRAME_HOST" not in env


def test_node_death_detection_is_fast_for_a_crash_and_patient_with_a_slow_node() -> None:
    config = head_system_config(Settings())
    # A refused check fails at once: dead after period x threshold (the detection test: < 2 s).
    assert config["health_check_period_ms"] * config["health_check_failure_threshold"] <= 1500
    # An unanswered check fails only at its timeout: a paused node has a minute.
    assert config["health_check_timeout_ms"] * config["health_check_failure_threshold"] >= 60_000


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
