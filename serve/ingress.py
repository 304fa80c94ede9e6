"""The HTTP ingress deployment: composes the other deployments through handles into one
`SearchService` and serves `create_api(...)` (built on the replica, after the constructor).

The Ingress holds no client of its own (no `check_health` beyond Serve's): its `/healthz` asks
the deployments that do (vector, graph, refiner) for their dependencies' states, and answers 503
when a required one is down, or when the deployment itself does not answer."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from ray import serve
from ray.serve.handle import DeploymentHandle

from rayweave.cluster.logging_setup import join_serve_logs
from rayweave.cluster.services.telemetry import count_retriever_failure
from rayweave.cluster.settings import Settings
from rayweave.serve.handle_proxy import HandleProxy
from rayweave.serve.health import DependencyState, readiness
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
        join_serve_logs(settings.log_level)
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
            retrievers=_retrievers(settings, web),
            refiner=HandleProxy(refiner) if refiner is not None else None,
            deadline_s=deadline_s,
            read_floor_s=settings.serve.read_floor_ms / 1000,
            on_retriever_failure=count_retriever_failure,
        )
        self.service = SearchService(
            settings=settings.serve,
            pipeline=pipeline,
            documents=vector_proxy,
            conversations=graph_proxy,
            graph=graph_proxy,
        )
        self.graph = graph_proxy
        # Whose dependencies make this app ready: (name, proxy, required). A refiner's LLM only
        # degrades answers when down.
        self.dependents: list[tuple[str, HandleProxy, bool]] = [("vector", vector_proxy, True)]
        if graph_proxy is not None:
            self.dependents.append(("graph", graph_proxy, True))
        if refiner is not None:
            self.dependents.append(("refiner", HandleProxy(refiner), False))

    async def readiness(self) -> tuple[int, dict[str, Any]]:
        timeout_s = self.settings.serve.health_probe_timeout_s + 1.0
        groups = await asyncio.gather(
            *(_states(name, proxy, needed, timeout_s) for name, proxy, needed in self.dependents)
        )
        return readiness(s for group in groups for s in group)

    def __serve_build_asgi_app__(self) -> Any:
        from rayweave.serve.api import create_api
        from rayweave.serve.rate_limit import replica_limiter

        return create_api(
            self.service,
            self.settings.serve,
            health=self.readiness,
            limiter=replica_limiter(self.settings),
        )


async def _states(
    name: str, proxy: HandleProxy, required: bool, timeout_s: float
) -> list[DependencyState]:
    """The dependency states a deployment reports (its `health`); one `down` state named after
    it when it does not answer."""
    started = time.perf_counter()
    try:
        found: list[dict[str, Any]] = await asyncio.wait_for(proxy.health(), timeout=timeout_s)
    except Exception as exc:  # noqa: BLE001 - no answer, whatever why, is a deployment down
        detail = (
            f"its deployment did not answer a health call within {timeout_s:g}s"
            if isinstance(exc, TimeoutError)
            else f"its deployment's health call failed: {type(exc).__name__}: {exc}"
        )
        return [
            DependencyState(
                name=name,
                state="down",
                required=required,
                detail=detail[:500],
                ms=round((time.perf_counter() - started) * 1000, 1),
            )
        ]
    return [DependencyState.from_dict(d, required=required and bool(d["required"])) for d in found]


def _count_hedge(deployment: str) -> Callable[[str], None]:
    """Counts a hedged read of `deployment` (`rayweave_hedged_reads`, tagged `vector.retrieve`)."""
    from rayweave.cluster.services.telemetry import api_metrics

    def count(method: str) -> None:
        api_metrics().hedge(read=f"{deployment}.{method}")

    return count


def _retrievers(settings: Settings, web: DeploymentHandle[Any] | None) -> dict[str, Any]:
    """The registered retrievers: web through its deployment (only when a provider is set, so
    an unconfigured one costs no call), the others in this replica."""
    from rayweave.serve.retrievers import build_retrievers

    built: dict[str, Any] = dict(build_retrievers(settings, skip=("web",)))
    if web is not None and settings.serve.retrieval.web_provider != "off":
        built["web"] = HandleProxy(web)
    return built
