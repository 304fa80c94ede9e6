"""Helpers shared by test modules (importable: pytest's `pythonpath` includes tests/)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from rayweave.cluster.settings import Settings

REPO = Path(__file__).resolve().parents[1]
SAMPLE_CORPUS = REPO / "ingest" / "sample_corpus"
SHARED = REPO.parent / "shared"
DATA = SHARED / "data"


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


def with_collection(settings: Settings, collection: str) -> Settings:
    """`settings` with another Qdrant collection (re-validated, as settings are frozen)."""
    return Settings(
        **{
            **settings.model_dump(),
            "qdrant": {**settings.qdrant.model_dump(), "collection": collection},
        }
    )


# Three Python functions for query-likelihood tests: SmolLM2-135M ranks "read a file" and "sort a
# dict by value" queries to the right one (it confuses "reverse a list" with reading a file).
CODE_SNIPPETS = [
    'def read_text(path):\n    """Return the contents of a text file."""\n    with open(path) as f:\n'
    "        return f.read()",
    'def reverse(items):\n    """Reverse a list."""\n    return items[::-1]',
    'def sort_by_value(d):\n    """Sort a dict by its values."""\n'
    "    return sorted(d.items(), key=lambda kv: kv[1])",
]


def alive_actors() -> list[Any]:
    """ALIVE actors of the cluster this process joined. The address is explicit: the state API's
    default ('auto') refuses to choose when another Ray runs on the machine."""
    import ray
    from ray.util.state import list_actors

    address = ray.get_runtime_context().gcs_address if ray.is_initialized() else None
    return list(list_actors(address=address, filters=[("state", "=", "ALIVE")], limit=1000))
