"""Fixtures for the cluster tests: vector-store adapters over real engines, and a local Ray."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rayweave.cluster.settings import QdrantSettings
from rayweave.cluster.vectors.qdrant_client import MEMORY, QdrantClientStore
from rayweave.cluster.vectors.qdrant_edge import QdrantEdgeStore
from rayweave.cluster.vectors.store import VectorStore


def open_store(
    backend: str, path: Path, collection: str = "contract", **overrides: Any
) -> VectorStore:
    """`backend`: 'edge', 'client-local' (qdrant-client on disk) or 'client-memory'."""
    if backend == "edge":
        return QdrantEdgeStore(
            QdrantSettings(backend="edge", **overrides), path=path, collection=collection
        )
    url = MEMORY if backend == "client-memory" else None
    return QdrantClientStore(
        QdrantSettings(backend="client", url=url, **overrides), path=path, collection=collection
    )


@pytest.fixture(name="open_store", scope="session")
def open_store_fixture() -> Callable[..., VectorStore]:
    """`open_store` for tests (test modules cannot import this conftest under importlib mode)."""
    return open_store


@pytest.fixture
def store_factory(tmp_path: Path) -> Iterator[Callable[..., VectorStore]]:
    """Opens stores under this test's folder and closes them all at teardown."""
    opened: list[VectorStore] = []

    def make(
        backend: str, collection: str = "contract", path: Path | None = None, **kw: Any
    ) -> VectorStore:
        store = open_store(backend, path or tmp_path, collection, **kw)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


@pytest.fixture(scope="session")
def ray_session(ray_stack: object) -> None:
    """Ray for the vector-service tests: the session's embedded head (see tests/conftest.py)."""
