"""`open_vector_store` picks the adapter the settings name; all without a Qdrant server (a
server URL opens a client that makes no network call until its first request)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from rayweave.cluster.errors import ConfigError
from rayweave.cluster.settings import QdrantSettings
from rayweave.cluster.vectors.factory import open_vector_store
from rayweave.cluster.vectors.qdrant_client import LOCAL_SUFFIX, QdrantClientStore
from rayweave.cluster.vectors.qdrant_edge import QdrantEdgeStore
from rayweave.cluster.vectors.store import CollectionSpec, VectorStore

SERVER = "http://127.0.0.1:9"  # nothing listens there; opening must not notice
EDGE: dict[str, Any] = {}
CLIENT_LOCAL = {"backend": "client"}
CLIENT_MEMORY = {"backend": "client", "url": ":memory:"}
CLIENT_SERVER = {"backend": "client", "url": SERVER}


@pytest.fixture
def opened() -> Iterator[list[VectorStore]]:
    stores: list[VectorStore] = []
    yield stores
    for store in stores:
        store.close()


def open_with(opened: list[VectorStore], path: Path, **settings: Any) -> VectorStore:
    store = open_vector_store(QdrantSettings(**settings), path=path)
    opened.append(store)
    return store


@pytest.mark.parametrize(
    ("settings", "adapter", "where"),
    [
        (EDGE, QdrantEdgeStore, "{tmp}/rayweave"),
        (CLIENT_LOCAL, QdrantClientStore, "{tmp}/rayweave" + LOCAL_SUFFIX),
        (CLIENT_MEMORY, QdrantClientStore, ":memory:"),
        (CLIENT_SERVER, QdrantClientStore, SERVER),
    ],
    ids=["edge", "client-local", "client-memory", "client-server"],
)
def test_the_settings_pick_the_adapter_and_its_place(
    tmp_path: Path,
    opened: list[VectorStore],
    settings: dict[str, Any],
    adapter: type[VectorStore],
    where: str,
) -> None:
    store = open_with(opened, tmp_path, **settings)
    assert type(store) is adapter
    assert repr(store) == f"{adapter.__name__}('rayweave' at {where.format(tmp=tmp_path)})"


@pytest.mark.parametrize("settings", [EDGE, CLIENT_LOCAL], ids=["edge", "client-local"])
def test_embedded_adapters_open_a_working_collection(
    tmp_path: Path, opened: list[VectorStore], settings: dict[str, Any]
) -> None:
    store = open_with(opened, tmp_path, **settings)
    store.ensure_collection(CollectionSpec(name="rayweave", dense_dim=4))
    assert store.count() == 0
    assert list(tmp_path.iterdir())


@pytest.mark.parametrize("settings", [CLIENT_MEMORY, CLIENT_SERVER], ids=["memory", "server"])
def test_memory_and_server_keep_nothing_on_disk(
    tmp_path: Path, opened: list[VectorStore], settings: dict[str, Any]
) -> None:
    open_with(opened, tmp_path, **settings)
    assert list(tmp_path.iterdir()) == []


def test_an_explicit_collection_overrides_the_setting(
    tmp_path: Path, opened: list[VectorStore]
) -> None:
    store = open_vector_store(
        QdrantSettings(collection="configured"), path=tmp_path, collection="x"
    )
    opened.append(store)
    assert repr(store) == f"QdrantEdgeStore('x' at {tmp_path / 'x'})"


@pytest.mark.parametrize(
    ("setting", "value"),
    [("backend", "server"), ("collection", "no spaces"), ("collection", "a" * 65)],
)
def test_a_bad_setting_is_refused_naming_it(setting: str, value: str) -> None:
    fields: dict[str, Any] = {setting: value}
    with pytest.raises(ValidationError, match=setting):
        QdrantSettings(**fields)


def test_a_url_alone_opens_the_client(tmp_path: Path, opened: list[VectorStore]) -> None:
    store = open_with(opened, tmp_path, url=SERVER)
    assert type(store) is QdrantClientStore


def test_edge_with_a_url_is_refused_even_past_validation(tmp_path: Path) -> None:
    # `model_copy(update=...)` skips validation; the factory still never ignores a URL.
    settings = QdrantSettings().model_copy(update={"url": SERVER})
    with pytest.raises(ConfigError, match=r"qdrant\.backend = 'client'"):
        open_vector_store(settings, path=tmp_path)
