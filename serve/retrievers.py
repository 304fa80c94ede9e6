"""Phase-1 retrievers beyond vector search and the graph, by name, in one place.

The vector and graph retrievers are the pipeline's own (the graph's second phase expands from the
vector hits). Every other retriever runs beside them in phase 1, under the same deadline, and its
lists are fused like theirs: `web` is built in, and a user adds one without touching rayweave by
naming a factory in settings:

    [serve.retrieval.retrievers]
    faq = "my_package.faq:from_settings"      # module:callable, (Settings) -> Retriever | None

A factory returns None when its retriever is not configured (web, with `web_provider = "off"`).
A retriever returns ranked lists by name (`RankedLists`); hits of documents that are not in the
vector store carry `metadata["external"] = True` and skip the page read. Each list weighs 1 in
fusion unless `serve.retrieval.retriever_weights` names it. In the composed layout `web` runs as
its own deployment and the others inside the Ingress replica; in the fused layout all in process.
docs/examples/faq_retriever.py is a whole one, in one file.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection
from typing import cast

from rayweave.cluster.errors import ConfigError
from rayweave.cluster.settings import Settings
from rayweave.serve.search import Retriever

RetrieverFactory = Callable[[Settings], Retriever | None]

BUILT_IN: dict[str, str] = {"web": "rayweave.serve.web_retriever:from_settings"}
"""The retrievers rayweave brings: name -> factory."""


def retriever_factories(settings: Settings) -> dict[str, str]:
    """Every registered retriever: the built-in ones, then the settings' (which may replace one)."""
    return {**BUILT_IN, **settings.serve.retrieval.retrievers}


def load_factory(name: str, path: str) -> RetrieverFactory:
    """The callable at `path` ('module:attribute'), or a ConfigError naming the retriever."""
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise ConfigError(
            f"serve.retrieval.retrievers.{name} = {path!r}: expected 'module:callable'"
        )
    try:
        factory = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(
            f"serve.retrieval.retrievers.{name} = {path!r} cannot be loaded: {exc}"
        ) from exc
    if not callable(factory):
        raise ConfigError(f"serve.retrieval.retrievers.{name} = {path!r} is not callable")
    return cast(RetrieverFactory, factory)


def build_retrievers(settings: Settings, *, skip: Collection[str] = ()) -> dict[str, Retriever]:
    """The configured retrievers by name (those whose factory returned one), except `skip`."""
    built: dict[str, Retriever] = {}
    for name, path in retriever_factories(settings).items():
        if name in skip:
            continue
        retriever = load_factory(name, path)(settings)
        if retriever is not None:
            built[name] = retriever
    return built
