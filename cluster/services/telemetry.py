"""rayweave's operational metrics, recorded through Ray's metrics API.

Every process records into its node's Ray metrics agent, which exports all of them, with Ray's own
Serve request and latency metrics, in Prometheus text on the node's metrics export port
(`ray.metrics_export_port`; KubeRay's `metrics` container port, 8080). Each series carries the
Serve deployment, replica and application tags (`ray.serve.metrics` adds them inside a replica),
so a scrape of every node sees every replica, and `sum(...)` over them is the service's figure
however many replicas come and go. The names below are what the code records; Ray exports them
with a `ray_` prefix (`ray_rayweave_requests_total`), as the Grafana dashboard in
`k8s/monitoring/` queries them.

Metric objects are created on first use in each process, not at import: a Ray actor pickles
nothing of them, and importing a module stays free of side effects.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ray.util.metrics import Counter, Histogram

# Request latency buckets (seconds): the 2 s deadline and its neighbourhood, finer below 250 ms.
LATENCY_BOUNDARIES = (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.25, 0.5, 1.0, 2.0, 2.5, 5.0, 10.0)

REQUESTS = "rayweave_requests"
REQUEST_SECONDS = "rayweave_request_seconds"
STAGE_SECONDS = "rayweave_stage_seconds"
DEGRADED = "rayweave_degraded"
HEDGED = "rayweave_hedged_reads"
RETRIEVER_FAILURES = "rayweave_retriever_failures"
INGEST_DOCUMENTS = "rayweave_ingest_documents"
INGEST_CHUNKS = "rayweave_ingest_chunks"


@dataclass(frozen=True, slots=True)
class ApiMetrics:
    """What the HTTP ingress records per request and per search."""

    requests: Counter
    latency: Histogram
    stages: Histogram
    degraded: Counter
    hedged: Counter
    failures: Counter

    def request(self, *, route: str, status: int, seconds: float) -> None:
        self.requests.inc(1, tags={"route": route, "status": str(status)})
        self.latency.observe(seconds, tags={"route": route})

    def search(self, *, timings_ms: Mapping[str, float], degraded: list[str]) -> None:
        for stage, ms in timings_ms.items():
            self.stages.observe(ms / 1000.0, tags={"stage": stage})
        for name in degraded:
            self.degraded.inc(1, tags={"retriever": name})

    def hedge(self, *, read: str) -> None:
        self.hedged.inc(1, tags={"read": read})

    def retriever_failed(self, retriever: str, exc: BaseException) -> None:
        cause = getattr(exc, "cause", None)  # a Ray-wrapped error: its cause's type
        error = type(cause if isinstance(cause, BaseException) else exc).__name__
        self.failures.inc(1, tags={"retriever": retriever, "error": error})


@cache
def api_metrics() -> ApiMetrics:
    from ray.serve import metrics

    return ApiMetrics(
        requests=metrics.Counter(
            REQUESTS,
            "HTTP requests answered by the ingress",
            tag_keys=("route", "status"),  # type: ignore[arg-type]  # Ray annotates a 1-tuple
        ),
        latency=metrics.Histogram(
            REQUEST_SECONDS,
            "HTTP request latency at the ingress (seconds)",
            boundaries=list(LATENCY_BOUNDARIES),
            tag_keys=("route",),
        ),
        stages=metrics.Histogram(
            STAGE_SECONDS,
            "Search pipeline stage latency (seconds): classify, vector, graph, fusion, refine, ...",
            boundaries=list(LATENCY_BOUNDARIES),
            tag_keys=("stage",),
        ),
        degraded=metrics.Counter(
            DEGRADED,
            "Retrievers dropped from a search response (failed or past the deadline)",
            tag_keys=("retriever",),
        ),
        hedged=metrics.Counter(
            HEDGED,
            "Retriever reads sent a second time because the first had not answered (composed "
            "layout; serve.hedge_after_ms), by deployment and method",
            tag_keys=("read",),
        ),
        failures=metrics.Counter(
            RETRIEVER_FAILURES,
            "Retrievers (and the refiner) that raised during a search, by name and exception "
            "type: each also logged once with its exception (past-deadline ones only count in "
            "rayweave_degraded)",
            tag_keys=("retriever", "error"),  # type: ignore[arg-type]  # Ray annotates a 1-tuple
        ),
    )


def count_retriever_failure(retriever: str, exc: BaseException) -> None:
    """Counts a retriever's failure in a search (`rayweave_retriever_failures`): the search
    pipeline's `on_retriever_failure` in the Serve app."""
    api_metrics().retriever_failed(retriever, exc)


@dataclass(frozen=True, slots=True)
class IngestMetrics:
    """What the ingest writers record per written batch."""

    documents: Counter
    chunks: Counter

    def written(self, *, collection: str, statuses: Mapping[str, int], chunks: int) -> None:
        for status, count in statuses.items():
            if count:
                self.documents.inc(count, tags={"collection": collection, "status": status})
        if chunks:
            self.chunks.inc(chunks, tags={"collection": collection})


@cache
def ingest_metrics() -> IngestMetrics:
    from ray.util import metrics

    return IngestMetrics(
        documents=metrics.Counter(
            INGEST_DOCUMENTS,
            "Documents through the ingest writers, by outcome (inserted, updated, skipped, failed)",
            tag_keys=("collection", "status"),
        ),
        chunks=metrics.Counter(
            INGEST_CHUNKS,
            "Chunks written to the vector and graph stores",
            tag_keys=("collection",),
        ),
    )
