"""The namespace's entity-name index, as the ingest upkeep and the rebuild open it."""

from __future__ import annotations

from rayweave.cluster.settings import Settings
from rayweave.graph.synonym_index import NameIndex


def name_index(settings: Settings, collection: str, *, dense_dim: int) -> NameIndex | None:
    """The namespace's entity-name index for synonymy (None when `graph.synonym_threshold` is
    1.0); the dense encoder loads only if a name needs encoding. Embedded, it is opened in this
    process (only the upkeep reads it: no actor per namespace); close it after use."""
    from rayweave.cluster.vectors.service import vector_store_for
    from rayweave.graph.synonym_index import SynonymRule, names_collection
    from rayweave.models.factory import build_dense_encoder

    if settings.graph.synonym_threshold >= 1.0:
        return None
    name = names_collection(collection)
    return NameIndex(
        store=vector_store_for(settings, name, shared=False),
        collection=name,
        encode=lambda texts: build_dense_encoder(settings.models).encode(texts, kind="query"),
        dense_dim=dense_dim,
        rule=SynonymRule(
            threshold=settings.graph.synonym_threshold,
            max_per_entity=settings.graph.synonym_max_per_entity,
            encoder=f"{settings.models.dense_kind}:{settings.models.dense}",
        ),
    )
