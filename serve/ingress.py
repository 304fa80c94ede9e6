"""The HTTP ingress deployment: composes the other deployments through handles into one
`SearchService` and serves `create_api(...)` (built on the replica, after the constructor)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ray import serve
from ray.serve.handle import DeploymentHandle

from rayweave.cluster.settings import Settings
from rayweave.serve.handle_proxy import HandleProxy
from rayweave.serve.planning import planner
from rayweave.serve.search import SearchPipeline
from rayweave.serve.service import SearchService


@serve.deployment(name="Ingress", ray_actor_options={"num_cpus": 0.1}, max_ongoing_requests=128)
@serve.ingress()
class IngressDeployment:
    def __init__(
        self,
        settings: Settings,
        classifier: DeploymentHandle[Any],
        vector: DeploymentHandle[Any],
        fusion: DeploymentHandle[Any],
        graph: DeploymentHandle[Any] | None = None,
        web: DeploymentHandle[Any] | None = None,
        refiner: DeploymentHandle[Any] | None = None,
    ) -> None:
        from rayweave.serve.classifier import RuleClassifier
        from rayweave.serve.fusion import FusionRanker

        self.settings = settings
        hedge_after_s = settings.serve.hedge_after_ms / 1000
        vector_proxy = HandleProxy(
            vector,
            hedged=("retrieve", "hydrate"),
            hedge_after_s=hedge_after_s,
            on_hedge=_count_hedge("vector"),
        )
        graph_proxy = (
            HandleProxy(
                graph,
                hedged=("retrieve", "expand"),
                hedge_after_s=hedge_after_s,
                on_hedge=_count_hedge("graph"),
            )
            if graph is not None
            else None
        )
        # Classification and fusion are pure and cheap: answered here if their deployment fails
        # or stalls (a replica on a dying node). The rule classifier takes about a millisecond,
        # so its call may use a tenth of the deadline that the retrievers need.
        deadline_s = settings.serve.deadline_ms / 1000
        pipeline = SearchPipeline(
            classifier=HandleProxy(classifier, local=RuleClassifier(), timeout_s=deadline_s / 10),
            planner=planner(settings.serve.retrieval),
            vector=vector_proxy,
            hydrator=vector_proxy,
            fuser=HandleProxy(
                fusion,
                local=FusionRanker(settings.serve.retrieval, extractor=settings.graph.extractor),
                timeout_s=deadline_s,
            ),
            graph=graph_proxy,
            web=HandleProxy(web) if web is not None else None,
            refiner=HandleProxy(refiner) if refiner is not None else None,
            deadline_s=deadline_s,
            read_floor_s=settings.serve.read_floor_ms / 1000,
        )
        self.service = SearchService(
            settings=settings.serve,
            pipeline=pipeline,
            documents=vector_proxy,
            conversations=graph_proxy,
            graph=graph_proxy,
        )
        self.graph = graph_proxy

    def __serve_build_asgi_app__(self) -> Any:
        from rayweave.serve.api import create_api
        from rayweave.serve.rate_limit import replica_limiter

        return create_api(self.service, self.settings.serve, limiter=replica_limiter(self.settings))


def _count_hedge(deployment: str) -> Callable[[str], None]:
    """Counts a hedged read of `deployment` (`rayweave_hedged_reads`, tagged `vector.retrieve`)."""
    from rayweave.cluster.services.telemetry import api_metrics

    def count(method: str) -> None:
        api_metrics().hedge(read=f"{deployment}.{method}")

    return count
