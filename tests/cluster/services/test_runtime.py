"""The environment rayweave starts Ray with, and that it reaches the embedded head's workers."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rayweave.cluster.services.runtime import (
    client_servers,
    head_system_config,
    ray_environment,
    stop_processes,
)
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


def test_a_client_server_of_our_head_is_stopped_and_no_other() -> None:
    # Stand-ins whose command lines read as Ray client servers (what `ray start --head` leaves
    # behind, re-parented): one of a head on port 46390, one of a head on 46391.
    def client_server(port: int) -> subprocess.Popen[bytes]:
        code = "import time; time.sleep(60)"
        argv = ["ray.util.client.server", f"--address=192.0.2.2:{port}", "--host", "127.0.0.1"]
        return subprocess.Popen([sys.executable, "-c", code, *argv])

    ours, other = client_server(46390), client_server(46391)
    try:
        time.sleep(0.3)  # until /proc shows their command lines
        assert client_servers(46390) == {ours.pid}
        assert client_servers(4639) == set()  # a port's prefix is another port
        stopped = stop_processes(Path("/nonexistent-temp-dir"), also=client_servers(46390))
        assert stopped == 1
        assert ours.wait(timeout=10) != 0
        assert other.poll() is None
    finally:
        for p in (ours, other):
            p.kill()
            p.wait()
