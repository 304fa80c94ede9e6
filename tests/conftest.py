"""Session-wide real components shared by every test folder.

A pytest process can join one Ray cluster only, so every Ray-using test shares one embedded head
started through rayweave's own runtime (free 127.0.0.1 ports, a short temp home; Ray's unix
socket paths must stay under 107 characters), and one embedded ArcadeDB Bolt server started
through rayweave's own service code. Both stop at the end of the session.
"""

from __future__ import annotations

import json
import os
import shutil
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

from tests_support import stack_env


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
        # Every request traced to Serve's file exporter: tests/serve/test_tracing.py reads it.
        serve={
            "port": int(env["RAYWEAVE_SERVE__PORT"]),
            "tracing": "file",
            "tracing_sampling_ratio": 1.0,
        },
    )


@pytest.fixture(scope="session")
def ray_stack(stack_settings):  # type: ignore[no-untyped-def]
    """The embedded Ray head, started by rayweave's runtime and joined by this process."""
    from rayweave.cluster.services.runtime import connect, stop_head

    try:
        connect(stack_settings)
        yield stack_settings
    finally:
        stop_head(stack_settings)


@pytest.fixture(scope="session")
def graph_connection(stack_settings):  # type: ignore[no-untyped-def]
    """The embedded ArcadeDB Bolt server of the session."""
    from rayweave.cluster.services.graph_server import GraphServer, resolve_graph_connection

    try:
        yield resolve_graph_connection(stack_settings)
    finally:
        GraphServer.from_settings(stack_settings).stop()


@pytest.fixture(scope="session")
def tiny_clip_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    config = {
        "embed_dim": 16,
        "vision_cfg": {
            "image_size": 32,
            "layers": 1,
            "width": 32,
            "patch_size": 8,
            "head_width": 16,
        },
        "text_cfg": {
            "context_length": 16,
            "vocab_size": 49408,
            "width": 32,
            "heads": 2,
            "layers": 1,
        },
    }
    path = tmp_path_factory.mktemp("clip") / "rw-tiny-clip.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path
