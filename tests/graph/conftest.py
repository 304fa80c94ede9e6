"""One real graph server per test session.

The embedded ArcadeDB Bolt server always runs (free 127.0.0.1 ports, temp home). When
`RAYWEAVE_GRAPH__URI` is set, store tests also run against that server (e.g. a Neo4j 5),
configured through the same `Settings` the product uses.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from rayweave.cluster.services.graph_server import GraphConnection
from rayweave.cluster.settings import GraphSettings, Settings
from rayweave.graph.store import GraphStore


@pytest.fixture(scope="session")
def embedded_connection(graph_connection: GraphConnection) -> GraphConnection:
    """The session's embedded ArcadeDB server (tests/conftest.py)."""
    return graph_connection


def _targets() -> list[str]:
    return ["arcadedb", "neo4j"] if os.environ.get("RAYWEAVE_GRAPH__URI") else ["arcadedb"]


@pytest.fixture(scope="session", params=_targets())
def graph_target(
    request: pytest.FixtureRequest, embedded_connection: GraphConnection
) -> Iterator[GraphStore]:
    """A schema-ready store per target; tests take fresh namespaces from it."""
    if request.param == "arcadedb":
        store = GraphStore(embedded_connection, GraphSettings(write_batch=200), namespace="probe")
    else:
        settings = Settings()  # reads RAYWEAVE_GRAPH__URI / __USER / __PASSWORD / __DATABASE
        store = GraphStore.open(settings, namespace="probe")
    store.ensure_schema()
    yield store
    store.close()


@pytest.fixture
def graph_store(graph_target: GraphStore) -> Iterator[GraphStore]:
    """A store on a fresh namespace, dropped afterwards."""
    store = graph_target.for_namespace(f"t{uuid.uuid4().hex[:12]}")
    yield store
    store.drop_namespace()
    store.close()


def is_arcadedb(store: GraphStore) -> bool:
    return store.connection.embedded
