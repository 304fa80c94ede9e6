"""The fused layout: one deployment whose replicas each run the whole search pipeline.

The same `SearchPipeline` and components as `LocalSearch`, behind the same HTTP API as the
composed ingress. A request makes no handle hop between stages and pickles no hits: on a CPU-only
node the composed graph's transport (seven deployments, payloads copied between them) costs more
than the stages themselves. It scales by replicas (each loads the query encoders and holds the
graph projection and, for an embedded vector store of moderate size, a copy of the collection
(`cluster/vectors/replica_copy.py`), so that a search makes no call to another process at all.

Its replicas hold the clients themselves: `check_health` pings the vector and graph stores (and
an 'llm' refiner's endpoint, which only degrades answers, so never fails it), and `/healthz`
reports the same probes (`serve/health.py`).
"""

from __future__ import annotations

from typing import Any

from ray import serve

from rayweave.cluster.logging_setup import join_serve_logs
from rayweave.cluster.settings import Settings
from rayweave.serve.health import Health, graph_dependency, refiner_dependencies, vector_dependency
from rayweave.serve.local import LocalSearch


@serve.deployment(name="Ingress", ray_actor_options={"num_cpus": 0.1}, max_ongoing_requests=128)
@serve.ingress()
class FusedIngressDeployment:
    def __init__(self, settings: Settings) -> None:
        join_serve_logs(settings.log_level)
        self.settings = settings
        from rayweave.cluster.services.telemetry import count_retriever_failure

        self.local = LocalSearch(settings)
        self.local.pipeline.on_retriever_failure = count_retriever_failure
        self.service = self.local.service
        self.health_probes = Health(
            [
                vector_dependency(self.local.vector.store),
                graph_dependency(self.local.graph.store),
                *refiner_dependencies(self.local.pipeline.refiner, required=False),
            ],
            timeout_s=settings.serve.health_probe_timeout_s,
            where="Ingress replica",
        )

    async def check_health(self) -> None:
        await self.health_probes.check()

    def __serve_build_asgi_app__(self) -> Any:
        from rayweave.serve.api import create_api
        from rayweave.serve.rate_limit import replica_limiter

        return create_api(
            self.service,
            self.settings.serve,
            health=self.health_probes.readiness,
            limiter=replica_limiter(self.settings),
        )

    def __del__(self) -> None:
        self.local.close()
