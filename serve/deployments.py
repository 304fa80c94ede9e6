"""Ray Serve deployments: each a thin wrapper that builds its component once per replica.

Classes are named `*Deployment`; the Serve name each one registers (`QueryClassifier`,
`VectorRetriever`, ...) is what `serve/config.yaml`, the KubeRay manifests and the README use.
Resources here are small fractional defaults (so a 2-core laptop runs all seven); the Serve config
file (`serve/config.yaml`, shared by `rayweave serve`, `serve deploy` and KubeRay) sets replicas,
autoscaling and CPU/GPU per deployment for real clusters.

Deployments that hold a client (the vector store, the Bolt graph store, an LLM endpoint) define
`check_health`, which Serve calls every `serve.health_check_period_s` and which raises when that
client's ping fails (`serve/health.py`), so Serve replaces the replica; `health` returns the same
probes' states for the Ingress's `/healthz`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ray import serve

from rayweave.cluster.logging_setup import join_serve_logs
from rayweave.cluster.settings import Settings
from rayweave.cluster.types import Hit
from rayweave.serve.conversation import ConversationMessage
from rayweave.serve.health import Health, graph_dependency, refiner_dependencies, vector_dependency
from rayweave.serve.search import (
    Classification,
    Classifier,
    Fuser,
    RankedLists,
    Refiner,
    RetrievalPlan,
    RetrievalQuery,
)

_SMALL = {"num_cpus": 0.05}


@serve.deployment(name="QueryClassifier", ray_actor_options=_SMALL, max_ongoing_requests=64)
class QueryClassifierDeployment:
    def __init__(self) -> None:
        from rayweave.serve.classifier import RuleClassifier

        self.impl: Classifier = RuleClassifier()

    async def classify(self, text: str) -> Classification:
        classification: Classification = await self.impl.classify(text)
        return classification


@serve.deployment(
    name="VectorRetriever", ray_actor_options={"num_cpus": 0.25}, max_ongoing_requests=32
)
class VectorRetrieverDeployment:
    def __init__(self, settings: Settings) -> None:
        join_serve_logs(settings.log_level)
        from rayweave.serve.vector_retriever import VectorSearch

        self.impl: VectorSearch = VectorSearch.from_settings(settings, shared=True)
        self.health_probes = Health(
            [vector_dependency(self.impl.store)],
            timeout_s=settings.serve.health_probe_timeout_s,
            where="VectorRetriever replica",
        )

    async def check_health(self) -> None:
        await self.health_probes.check()

    async def health(self) -> list[dict[str, Any]]:
        return [s.as_dict() for s in await self.health_probes.states()]

    async def retrieve(self, query: RetrievalQuery) -> RankedLists:
        lists: RankedLists = await self.impl.retrieve(query)
        return lists

    async def hydrate(self, ids: Sequence[str]) -> dict[str, Hit]:
        hits: dict[str, Hit] = await self.impl.hydrate(ids)
        return hits

    async def document(self, doc_id: str) -> list[Hit]:
        chunks: list[Hit] = await self.impl.document(doc_id)
        return chunks

    def __del__(self) -> None:
        self.impl.close()


@serve.deployment(
    name="GraphRetriever", ray_actor_options={"num_cpus": 0.1}, max_ongoing_requests=32
)
class GraphRetrieverDeployment:
    def __init__(self, settings: Settings) -> None:
        join_serve_logs(settings.log_level)
        from rayweave.serve.graph_retriever import GraphSearch

        self.impl: GraphSearch = GraphSearch.from_settings(settings)
        self.health_probes = Health(
            [graph_dependency(self.impl.store)],
            timeout_s=settings.serve.health_probe_timeout_s,
            where="GraphRetriever replica",
        )

    async def check_health(self) -> None:
        await self.health_probes.check()

    async def health(self) -> list[dict[str, Any]]:
        return [s.as_dict() for s in await self.health_probes.states()]

    async def retrieve(self, query: RetrievalQuery) -> RankedLists:
        lists: RankedLists = await self.impl.retrieve(query)
        return lists

    async def expand(self, query: RetrievalQuery) -> RankedLists:
        lists: RankedLists = await self.impl.expand(query)
        return lists

    async def add_message(self, conversation_id: str, message: ConversationMessage) -> str:
        message_id: str = await self.impl.add_message(conversation_id, message)
        return message_id

    async def neighbourhood(self, node_ids: Sequence[str], depth: int = 1) -> dict[str, Any]:
        view: dict[str, Any] = await self.impl.neighbourhood(node_ids, depth=depth)
        return view


@serve.deployment(name="WebRetriever", ray_actor_options=_SMALL, max_ongoing_requests=64)
class WebRetrieverDeployment:
    def __init__(self, settings: Settings) -> None:
        join_serve_logs(settings.log_level)
        from rayweave.serve.web_retriever import WebSearch

        retrieval = settings.serve.retrieval
        self.impl: WebSearch | None = (
            WebSearch(retrieval) if retrieval.web_provider != "off" else None
        )

    async def retrieve(self, query: RetrievalQuery) -> RankedLists:
        if self.impl is None:
            return {}
        lists: RankedLists = await self.impl.retrieve(query)
        return lists


@serve.deployment(name="FusionRanker", ray_actor_options=_SMALL, max_ongoing_requests=64)
class FusionRankerDeployment:
    def __init__(self, settings: Settings) -> None:
        join_serve_logs(settings.log_level)
        from rayweave.serve.fusion import FusionRanker

        self.impl: Fuser = FusionRanker(
            settings.serve.retrieval, extractor=settings.graph.extractor
        )

    async def fuse(self, lists: RankedLists, plan: RetrievalPlan) -> list[Hit]:
        fused: list[Hit] = await self.impl.fuse(lists, plan)
        return fused


@serve.deployment(name="Refiner", ray_actor_options={"num_cpus": 0.1}, max_ongoing_requests=16)
class RefinerDeployment:
    def __init__(self, settings: Settings) -> None:
        join_serve_logs(settings.log_level)
        from rayweave.serve.refine import build_refiner

        self.impl: Refiner = build_refiner(settings)
        # An 'llm' refiner's endpoint: this deployment exists to call it.
        self.health_probes = Health(
            refiner_dependencies(self.impl, required=True),
            timeout_s=settings.serve.health_probe_timeout_s,
            where="Refiner replica",
        )

    async def check_health(self) -> None:
        await self.health_probes.check()

    async def health(self) -> list[dict[str, Any]]:
        return [s.as_dict() for s in await self.health_probes.states()]

    async def refine(self, query: str, hits: list[Hit], plan: RetrievalPlan) -> list[Hit]:
        refined: list[Hit] = await self.impl.refine(query, hits, plan)
        return refined
