"""`rayweave status` and `rayweave stop`: what the embedded stack is doing, and its shutdown."""

from __future__ import annotations

from dataclasses import dataclass, field

from rayweave.cluster.settings import Settings

NO_RUNTIME = "none (no Ray runtime)"


@dataclass(slots=True, kw_only=True)
class StatusReport:
    ray: str
    graph: str
    serve: str
    vectors: str
    stores: str = NO_RUNTIME
    metrics: str = "not running"
    logs: str = ""
    job_env: dict[str, str] = field(default_factory=dict)

    def render(self) -> str:
        exports = " ".join(f"{k}={v}" for k, v in self.job_env.items())
        return "\n".join(
            [
                f"ray      {self.ray}",
                f"graph    {self.graph}",
                f"vectors  {self.vectors}",
                f"stores   {self.stores}",
                f"serve    {self.serve}",
                f"metrics  {self.metrics}",
                f"logs     {self.logs}",
                "",
                "submit ingestion as a Ray job:",
                f"  {exports} ray job submit --working-dir . -- "
                "python -m rayweave.ingest.job PATH...",
                '  (or: eval "$(rayweave status --env)")',
            ]
        )


def collect_status(settings: Settings) -> StatusReport:
    from rayweave.cluster.services.graph_server import GraphServer
    from rayweave.cluster.services.runtime import (
        head_running,
        job_submit_env,
        ray_console_log,
        ray_temp_dir,
    )

    if settings.ray.address is not None:
        ray_line = f"external cluster at {settings.ray.address}"
    elif head_running(settings):
        ray_line = f"running: GCS 127.0.0.1:{settings.ray.port}, dashboard http://{settings.ray.dashboard_host}:{settings.ray.dashboard_port}"
    else:
        ray_line = "not running (starts with `rayweave ingest` or `rayweave serve`)"

    if settings.graph.uri is not None:
        graph_line = f"external server at {settings.graph.uri} (database {settings.graph.database})"
    else:
        graph_line = GraphServer.from_settings(settings).status().describe()

    serve_line = metrics_line = "not running"
    stores_line = NO_RUNTIME
    if head_running(settings) or settings.ray.address is not None:
        serve_line = _serve_status(settings)
        metrics_line = _metrics_status()
        stores_line = _stores_status(settings)
    backend = settings.qdrant.url or str(settings.vector_path)
    vectors_line = f"{settings.qdrant.backend}: {backend} (collection {settings.qdrant.collection})"
    return StatusReport(
        ray=ray_line,
        graph=graph_line,
        serve=serve_line,
        vectors=vectors_line,
        stores=stores_line,
        metrics=metrics_line,
        logs=f"Ray: {ray_temp_dir(settings) / 'session_latest' / 'logs'}; what Ray printed "
        f"during rayweave commands: {ray_console_log(settings)}",
        job_env=job_submit_env(settings),
    )


def _serve_status(settings: Settings) -> str:
    from ray import serve

    from rayweave.cluster.services.runtime import connect

    try:
        connect(settings, start=False)
        apps = serve.status().applications
    except Exception as exc:  # noqa: BLE001 - a cluster without Serve answers with various errors
        return f"unknown ({type(exc).__name__})"
    app = apps.get(settings.serve.app_name)
    if app is None:
        return "not deployed"
    return f"{app.status.value} at http://{settings.serve.host}:{settings.serve.port}"


def _stores_status(settings: Settings) -> str:
    """The vector store actors and whether each holds its engine (`qdrant.idle_close_s`)."""
    import ray

    from rayweave.cluster.vectors.service import describe_vector_actors

    if not ray.is_initialized():
        return "unknown (not connected)"
    actors = describe_vector_actors(settings.ray.namespace)
    if not actors:
        return "no store actors"
    parts = []
    for a in actors:
        if "error" in a:
            parts.append(f"{a['collection']} (not answering)")
        else:
            state = "open" if a["open"] else "closed"
            parts.append(f"{a['collection']} ({state}, idle {a['idle_s']:.0f}s)")
    held = sum(1 for a in actors if a.get("open"))
    return f"{held} of {len(actors)} holding an engine: " + ", ".join(parts)


def _metrics_status() -> str:
    import ray

    from rayweave.cluster.services.runtime import metrics_urls

    if not ray.is_initialized():
        return "unknown (not connected)"
    urls = metrics_urls()
    return f"{', '.join(urls)} (Prometheus text)" if urls else "no node exports metrics"


def stop_all(settings: Settings) -> list[str]:
    """Stop the Serve app, the vector-store actors, our Ray head and the embedded graph server."""
    from rayweave.cluster.services.graph_server import GraphServer
    from rayweave.cluster.services.runtime import connect, head_running, stop_head
    from rayweave.cluster.vectors.service import shutdown_vector_actors

    lines = []
    if settings.ray.address is None and head_running(settings):
        from ray import serve

        connect(settings, start=False)
        try:
            serve.shutdown()  # type: ignore[no-untyped-call]
            lines.append("serve: stopped")
        except Exception as exc:  # noqa: BLE001 - reported; the rest still stops
            lines.append(f"serve: {type(exc).__name__}: {exc}")
        closed = shutdown_vector_actors(settings.ray.namespace)
        lines.append(f"vectors: flushed and closed {len(closed)} store actor(s)")
        n = stop_head(settings)
        lines.append(f"ray: stopped ({n} processes)")
    else:
        lines.append(
            "ray: not running"
            if settings.ray.address is None
            else "ray: external cluster left running"
        )
    if settings.graph.uri is None:
        lines.append(
            "graph: " + ("stopped" if GraphServer.from_settings(settings).stop() else "not running")
        )
    return lines
