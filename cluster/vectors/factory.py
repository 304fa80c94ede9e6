"""Open the `VectorStore` adapter the settings name, in this process.

Kept apart from `vector_store` (the interface the adapters implement) so that the adapters
never import the module that imports them; each SDK is imported only when chosen.
"""

from __future__ import annotations

from pathlib import Path

from rayweave.cluster.errors import ConfigError
from rayweave.cluster.settings import QdrantSettings
from rayweave.cluster.vectors.store import VectorStore


def open_vector_store(
    settings: QdrantSettings, *, path: Path, collection: str | None = None
) -> VectorStore:
    """Open the configured adapter for `collection` (default: settings.collection)."""
    name = collection or settings.collection
    if settings.backend == "edge":
        if settings.url is not None:
            # Validation refuses this; a `model_copy(update=...)` skips validation.
            raise ConfigError(
                f"qdrant.backend 'edge' would ignore qdrant.url {settings.url!r}: set "
                "qdrant.backend = 'client' to use that server, or remove qdrant.url"
            )
        from rayweave.cluster.vectors.qdrant_edge import QdrantEdgeStore

        return QdrantEdgeStore(settings, path=path, collection=name)
    from rayweave.cluster.vectors.qdrant_client import QdrantClientStore

    return QdrantClientStore(settings, path=path, collection=name)
