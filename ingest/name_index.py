"""The namespace's entity-name index, as the ingest upkeep and the rebuild open it."""

from __future__ import annotations

from rayweave.cluster.settings import Settings
from rayweave.cluster.vectors.store import VectorStore
from rayweave.graph.synonym_index import NameIndex


def name_store(settings: Settings, collection: str) -> VectorStore:
    """The vector store of the namespace's names; embedded, opened in this process on first use
    (only the upkeep and a relink read it: no actor per namespace)."""
    from rayweave.cluster.vectors.service import vector_store_for
    from rayweave.graph.synonym_index import names_collection

    return vector_store_for(settings, names_collection(collection), shared=False)


def name_index(
    settings: Settings, collection: str, *, dense_dim: int, store: VectorStore | None = None
) -> NameIndex | None:
    """The namespace's entity-name index for synonymy (None when `graph.synonym_threshold` is
    1.0); the dense encoder loads only if a name needs encoding. `store`: the names' store held
    open by the caller (else a new one, `name_store`, which the caller closes after use)."""
    from rayweave.graph.synonym_index import SynonymRule, names_collection
    from rayweave.models.factory import build_dense_encoder

    if settings.graph.synonym_threshold >= 1.0:
        return None
    name = names_collection(collection)
    return NameIndex(
        store=name_store(settings, collection) if store is None else store,
        collection=name,
        encode=lambda texts: build_dense_encoder(settings.models).encode(texts, kind="query"),
        dense_dim=dense_dim,
        rule=SynonymRule(
            threshold=settings.graph.synonym_threshold,
            max_per_entity=settings.graph.synonym_max_per_entity,
            encoder=f"{settings.models.dense_kind}:{settings.models.dense}",
        ),
    )
