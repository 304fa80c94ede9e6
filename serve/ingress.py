"""The HTTP ingress deployment: composes the other deployments through handles into one
`SearchService` and serves `create_api(...)` (built on the replica, after the constructor)."""

from __future__ import annotations

from typing import Any, cast

from ray import serve

from rayweave.cluster.settings import Settings
from rayweave.serve.deployments import HandleProxy
from rayweave.serve.planning import Planner
from rayweave.serve.search import SearchPipeline
from rayweave.serve.service import SearchService


@serve.deployment(name="Ingress", ray_actor_options={"num_cpus": 0.1}, max_ongoing_requests=128)
@serve.ingress()
class Ingress:
    def __init__(
        self,
        settings: Settings,
        classifier: Any,
        vector: Any,
        fusion: Any,
        graph: Any | None = None,
        web: Any | None = None,
        refiner: Any | None = None,
    ) -> None:
        self.settings = settings
        vector_proxy = HandleProxy(vector)
        graph_proxy = HandleProxy(graph) if graph is not None else None
        pipeline = SearchPipeline(
            classifier=cast(Any, HandleProxy(classifier)),
            planner=Planner(settings.serve.retrieval),
            vector=cast(Any, vector_proxy),
            hydrator=cast(Any, vector_proxy),
            fuser=cast(Any, HandleProxy(fusion)),
            graph=cast(Any, graph_proxy),
            web=cast(Any, HandleProxy(web)) if web is not None else None,
            refiner=cast(Any, HandleProxy(refiner)) if refiner is not None else None,
            deadline_s=settings.serve.deadline_ms / 1000,
        )
        self.service = SearchService(
            settings=settings.serve,
            pipeline=pipeline,
            documents=cast(Any, vector_proxy),
            conversations=cast(Any, graph_proxy),
            graph=cast(Any, graph_proxy),
        )
        self.graph = graph_proxy

    def __serve_build_asgi_app__(self) -> Any:
        from rayweave.serve.api import create_api
        from rayweave.serve.rate_limit import replica_limiter

        return create_api(self.service, self.settings.serve, limiter=replica_limiter(self.settings))
