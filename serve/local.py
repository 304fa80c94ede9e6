"""The search service built from in-process components instead of deployment handles.

Same `SearchPipeline`, same components as the Serve app, minus the HTTP and handle hops: the
evaluator and benchmarks use it to run thousands of queries quickly, and its results are the
ones the app returns.
"""

from __future__ import annotations

from rayweave.cluster.settings import Settings
from rayweave.serve.classifier import RuleClassifier
from rayweave.serve.fusion import FusionRanker
from rayweave.serve.graph_retriever import GraphSearch
from rayweave.serve.planning import planner
from rayweave.serve.refine import build_refiner
from rayweave.serve.retrievers import build_retrievers
from rayweave.serve.search import SearchPipeline
from rayweave.serve.service import SearchService
from rayweave.serve.vector_retriever import VectorSearch


class LocalSearch:
    """Owns the in-process components; `service` answers like the HTTP app."""

    def __init__(
        self, settings: Settings, *, collection: str | None = None, shared: bool = True
    ) -> None:
        self.vector = VectorSearch.from_settings(settings, shared=shared, collection=collection)
        self.graph = GraphSearch.from_settings(settings, collection=collection)
        pipeline = SearchPipeline(
            classifier=RuleClassifier(),
            planner=planner(settings.serve.retrieval),
            vector=self.vector,
            hydrator=self.vector,
            fuser=FusionRanker(settings.serve.retrieval, extractor=settings.graph.extractor),
            graph=self.graph,
            retrievers=build_retrievers(settings),
            refiner=build_refiner(settings),
            deadline_s=settings.serve.deadline_ms / 1000,
            read_floor_s=settings.serve.read_floor_ms / 1000,
        )
        self.pipeline = pipeline
        self.service = SearchService(
            settings=settings.serve,
            pipeline=pipeline,
            documents=self.vector,
            conversations=self.graph,
            graph=self.graph,
        )

    def close(self) -> None:
        self.graph.close()
        self.vector.close()
