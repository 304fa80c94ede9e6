"""`rayweave status` and `rayweave stop`: what the embedded stack is doing, and its shutdown."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from rayweave.cluster.errors import ModelError
from rayweave.cluster.settings import QDRANT_MEMORY, Settings

NO_RUNTIME = "none (no Ray runtime)"
OPENAI_PREFIX = "openai:"  # as `rayweave.models.llm`, which imports torch: status stays light


@dataclass(slots=True, kw_only=True)
class StatusReport:
    ray: str
    graph: str
    serve: str
    vectors: str
    stores: str = NO_RUNTIME
    upkeep: str = NO_RUNTIME
    metrics: str = "not running"
    logs: str = ""
    job_env: dict[str, str] = field(default_factory=dict)
    resolved: list[tuple[str, str]] = field(default_factory=list)

    def render(self) -> str:
        exports = " ".join(f"{k}={v}" for k, v in self.job_env.items())
        width = max((len(name) for name, _ in self.resolved), default=0)
        configured = [f"  {name:<{width}}  {what}" for name, what in self.resolved]
        return "\n".join(
            [
                f"ray      {self.ray}",
                f"graph    {self.graph}",
                f"vectors  {self.vectors}",
                f"stores   {self.stores}",
                f"upkeep   {self.upkeep}",
                f"serve    {self.serve}",
                f"metrics  {self.metrics}",
                f"logs     {self.logs}",
                *(["", "what the settings resolve to:", *configured] if configured else []),
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
    stores_line = upkeep_line = NO_RUNTIME
    if head_running(settings) or settings.ray.address is not None:
        serve_line = _serve_status(settings)
        metrics_line = _metrics_status()
        stores_line = _stores_status(settings)
        upkeep_line = _upkeep_status(settings)
    resolved = resolved_rows(settings)
    return StatusReport(
        ray=ray_line,
        graph=graph_line,
        serve=serve_line,
        vectors=resolved[0][1],  # the vector store has no process of its own: its line is this
        resolved=resolved[1:],
        stores=stores_line,
        upkeep=upkeep_line,
        metrics=metrics_line,
        logs=f"Ray: {ray_temp_dir(settings) / 'session_latest' / 'logs'}; what Ray printed "
        f"during rayweave commands: {ray_console_log(settings)}",
        job_env=job_submit_env(settings),
    )


def _resolve_model(ref: str) -> str:
    """A model reference as the loaders will find it: the local path, or the hub id."""
    from rayweave.models.resolve import resolve_model

    found = resolve_model(ref)
    if found.path is None:
        return f"{ref} (hub id: downloaded on first use, or read from the hub cache)"
    return str(found.path) if str(found.path) == ref else f"{ref} -> {found.path}"


def resolved_rows(
    settings: Settings, *, resolve: Callable[[str], str] = _resolve_model
) -> list[tuple[str, str]]:
    """(component, what it resolved to) for each store and model the settings select: the
    vector backend (first) and where it keeps or finds its points, the graph server, every model
    reference resolved the way its loader will resolve it (`resolve`, injectable for tests).
    Nothing is started or loaded; a reference that cannot resolve says why."""

    def model(ref: str) -> str:
        try:
            return resolve(ref)
        except ModelError as exc:
            return f"{ref} (cannot resolve: {exc})"

    q, g, m = settings.qdrant, settings.graph, settings.models
    if q.backend == "edge":
        vectors = f"embedded Qdrant engine (qdrant-edge) under {settings.vector_path}"
    elif q.url == QDRANT_MEMORY:
        vectors = "qdrant-client in memory (nothing persists)"
    elif q.url is not None:
        key = "API key set" if q.api_key is not None else "no API key"
        vectors = f"Qdrant server {q.url} (qdrant-client, {key})"
    else:
        vectors = f"qdrant-client local mode under {settings.vector_path}"
    vectors += f", collection {q.collection}"

    if g.uri is not None:
        graph = f"Bolt server {g.uri} (user {g.user}, database {g.database})"
    else:
        graph = (
            f"embedded ArcadeDB at bolt://127.0.0.1:{g.embedded_port} under "
            f"{settings.graph_home} (database {g.database})"
        )

    if m.sparse_kind == "bm25":
        sparse = "BM25 term weights (no model)"
    elif m.sparse_kind == "bge-m3" and m.dense_kind == "bge-m3":
        sparse = "lexical weights of the dense BGE-M3 (one model, one forward)"
    else:
        sparse = f"{m.sparse_kind}: {model(m.sparse)}"

    return [
        ("vectors", vectors),
        ("graph", graph),
        ("dense", f"{m.dense_kind}: {model(m.dense)}"),
        ("sparse", sparse),
        ("clip", "off (images are not embedded)" if m.clip is None else f"open_clip {m.clip}"),
        ("ner", "rules (no spaCy pipeline)" if m.ner is None else model(m.ner)),
        ("llm", "off" if m.llm is None else _llm(m.llm, key_set=m.llm_api_key is not None)),
        ("refiner", _refiner(settings, model)),
        ("runtime", f"device {m.device}, precision {m.precision}, CPU backend {m.cpu_backend}"),
    ]


def _llm(ref: str, *, key_set: bool) -> str:
    if not ref.startswith(OPENAI_PREFIX):
        return f"local causal LM {ref}"
    url, _, name = ref[len(OPENAI_PREFIX) :].partition("#")
    key = "API key set" if key_set else "no API key"
    return f"OpenAI-compatible endpoint {url}, model {name or '(missing)'} ({key})"


def _refiner(settings: Settings, model: Callable[[str], str]) -> str:
    r, m = settings.serve.retrieval, settings.models
    used = (
        ""
        if r.default_profile.endswith("+refine")
        else f" (for '+refine' profiles; the default profile is {r.default_profile})"
    )
    if r.refiner in ("off", "tfidf"):
        return f"{r.refiner} (no model){used}"
    if r.refiner == "cross-encoder":
        if r.cross_encoder is None:
            return f"cross-encoder, missing: set serve.retrieval.cross_encoder{used}"
        return f"cross-encoder {model(r.cross_encoder)}{used}"
    if r.refiner == "likelihood":
        return f"likelihood under {model(r.likelihood_model)}{used}"
    if r.refiner == "llm":
        return f"llm {'missing: set models.llm' if m.llm is None else m.llm}{used}"
    return f"{r.refiner} with the dense model {m.dense}{used}"


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


def _upkeep_status(settings: Settings) -> str:
    import ray

    from rayweave.ingest.upkeep_host import upkeep_status

    if not ray.is_initialized():
        return "unknown (not connected)"
    return upkeep_status(settings)


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
