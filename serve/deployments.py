"""Ray Serve deployments: each a thin wrapper that builds its component once per replica.

Resources here are small fractional defaults (so a 2-core laptop runs all seven); the Serve config
file (`serve/config.yaml`, shared by `rayweave serve`, `serve deploy` and KubeRay) sets replicas,
autoscaling and CPU/GPU per deployment for real clusters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ray import serve
from ray.exceptions import RayActorError

from rayweave.cluster.settings import Settings
from rayweave.cluster.types import Hit
from rayweave.serve.search import Classification, RankedLists, RetrievalPlan, RetrievalQuery

_SMALL = {"num_cpus": 0.05}


class HandleProxy:
    """Makes a DeploymentHandle look like the in-process component it fronts: `await p.m(x)`.

    A call whose replica dies under it (killed, OOM, node lost) is sent once more: by then the
    router has usually dropped the dead replica, and every call here is safe to repeat (reads,
    and message writes keyed by their id). The request deadline still bounds the whole.
    """

    def __init__(self, handle: Any) -> None:
        self._handle = handle

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._handle, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return await method.remote(*args, **kwargs)
            except RayActorError:  # ActorDiedError, ActorUnavailableError
                return await method.remote(*args, **kwargs)

        return call


@serve.deployment(name="QueryClassifier", ray_actor_options=_SMALL, max_ongoing_requests=64)
class QueryClassifier:
    def __init__(self) -> None:
        from rayweave.serve.classifier import RuleClassifier

        self.impl = RuleClassifier()

    async def classify(self, text: str) -> Classification:
        return await self.impl.classify(text)


@serve.deployment(
    name="VectorRetriever", ray_actor_options={"num_cpus": 0.25}, max_ongoing_requests=32
)
class VectorRetriever:
    def __init__(self, settings: Settings) -> None:
        from rayweave.serve.vector_retriever import VectorSearch

        self.impl = VectorSearch.from_settings(settings, shared=True)

    async def retrieve(self, query: RetrievalQuery) -> RankedLists:
        return await self.impl.retrieve(query)

    async def hydrate(self, ids: Sequence[str]) -> dict[str, Hit]:
        return await self.impl.hydrate(ids)

    async def document(self, doc_id: str) -> list[Hit]:
        return await self.impl.document(doc_id)

    def __del__(self) -> None:
        self.impl.close()


@serve.deployment(
    name="GraphRetriever", ray_actor_options={"num_cpus": 0.1}, max_ongoing_requests=32
)
class GraphRetriever:
    def __init__(self, settings: Settings) -> None:
        from rayweave.serve.graph_retriever import GraphSearch

        self.impl = GraphSearch.from_settings(settings)

    async def retrieve(self, query: RetrievalQuery) -> RankedLists:
        return await self.impl.retrieve(query)

    async def expand(self, query: RetrievalQuery) -> RankedLists:
        return await self.impl.expand(query)

    async def add_message(self, conversation_id: str, **kwargs: Any) -> str:
        return await self.impl.add_message(conversation_id, **kwargs)

    async def neighbourhood(self, node_ids: Sequence[str], depth: int = 1) -> dict[str, Any]:
        return await self.impl.neighbourhood(node_ids, depth=depth)


@serve.deployment(name="WebRetriever", ray_actor_options=_SMALL, max_ongoing_requests=64)
class WebRetriever:
    def __init__(self, settings: Settings) -> None:
        from rayweave.serve.web_retriever import WebSearch

        retrieval = settings.serve.retrieval
        self.impl = WebSearch(retrieval) if retrieval.web_provider != "off" else None

    async def retrieve(self, query: RetrievalQuery) -> RankedLists:
        return await self.impl.retrieve(query) if self.impl is not None else {}


@serve.deployment(name="FusionRanker", ray_actor_options=_SMALL, max_ongoing_requests=64)
class FusionRanker:
    def __init__(self, settings: Settings) -> None:
        from rayweave.serve.fusion import FusionRanker as Impl

        self.impl = Impl(settings.serve.retrieval)

    async def fuse(self, lists: RankedLists, plan: RetrievalPlan) -> list[Hit]:
        return await self.impl.fuse(lists, plan)


@serve.deployment(name="Refiner", ray_actor_options={"num_cpus": 0.1}, max_ongoing_requests=16)
class Refiner:
    def __init__(self, settings: Settings) -> None:
        from rayweave.serve.refine import build_refiner

        self.impl = build_refiner(settings)

    async def refine(self, query: str, hits: list[Hit], plan: RetrievalPlan) -> list[Hit]:
        return await self.impl.refine(query, hits, plan)
