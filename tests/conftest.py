"""Session-wide real components shared by every test folder.

A pytest process can join one Ray cluster only, so every Ray-using test shares one embedded head
started through rayweave's own runtime (free 127.0.0.1 ports, a short temp home; Ray's unix
socket paths must stay under 107 characters), and one embedded ArcadeDB Bolt server started
through rayweave's own service code. Both stop at the end of the session.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# The test run is an edge of the system, like the CLI: it may set the process environment.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Ray reads this once, at import: the session stack uses the default (token) authentication.
os.environ["RAY_AUTH_MODE"] = "token"

REPO = Path(__file__).resolve().parents[1]
SAMPLE_CORPUS = REPO / "ingest" / "sample_corpus"
SHARED = REPO.parent / "shared"


def free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def stack_env(home: Path) -> dict[str, str]:
    """RAYWEAVE_* variables for an isolated embedded stack (own home, free ports)."""
    ray_port, dash, bolt, http, serve_port = free_ports(5)
    return {
        "RAYWEAVE_HOME": str(home),
        "RAYWEAVE_RAY__PORT": str(ray_port),
        "RAYWEAVE_RAY__DASHBOARD_PORT": str(dash),
        "RAYWEAVE_RAY__NUM_CPUS": "2",
        "RAYWEAVE_RAY__OBJECT_STORE_MEMORY_MB": "384",
        "RAYWEAVE_GRAPH__EMBEDDED_PORT": str(bolt),
        "RAYWEAVE_GRAPH__EMBEDDED_HTTP_PORT": str(http),
        "RAYWEAVE_GRAPH__EMBEDDED_HEAP_MB": "512",
        "RAYWEAVE_SERVE__PORT": str(serve_port),
    }


@pytest.fixture(scope="session")
def stack_home() -> Iterator[Path]:
    home = Path(tempfile.mkdtemp(prefix="rwt-", dir="/tmp"))
    yield home
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def stack_settings(stack_home: Path):  # type: ignore[no-untyped-def]
    """Settings of the session's embedded stack (nothing started yet)."""
    from rayweave.cluster.settings import Settings

    env = stack_env(stack_home)
    return Settings(
        home=stack_home,
        ray={
            "port": int(env["RAYWEAVE_RAY__PORT"]),
            "dashboard_port": int(env["RAYWEAVE_RAY__DASHBOARD_PORT"]),
            "num_cpus": 2,
            "object_store_memory_mb": 384,
        },
        graph={
            "embedded_port": int(env["RAYWEAVE_GRAPH__EMBEDDED_PORT"]),
            "embedded_http_port": int(env["RAYWEAVE_GRAPH__EMBEDDED_HTTP_PORT"]),
            "embedded_heap_mb": 512,
        },
        serve={"port": int(env["RAYWEAVE_SERVE__PORT"])},
    )


@pytest.fixture(scope="session")
def ray_stack(stack_settings):  # type: ignore[no-untyped-def]
    """The embedded Ray head, started by rayweave's runtime and joined by this process."""
    from rayweave.cluster.runtime import connect, stop_head

    connect(stack_settings)
    yield stack_settings
    stop_head(stack_settings)


@pytest.fixture(scope="session")
def graph_connection(stack_settings):  # type: ignore[no-untyped-def]
    """The embedded ArcadeDB Bolt server of the session."""
    from rayweave.cluster.services import GraphServer, resolve_graph_connection

    conn = resolve_graph_connection(stack_settings)
    yield conn
    GraphServer.from_settings(stack_settings).stop()
