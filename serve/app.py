"""The typed Ray Serve app builder, and deployment from the CLI.

One config file drives every way of running the app: `serve run rayweave.serve.app:build_app`,
`serve deploy serve/config.yaml`, `rayweave serve` (which submits that same file, with the CLI's
settings as `args`) and the KubeRay RayService (which embeds it). `args` are rayweave settings
groups, validated by `AppArgs` and then by `Settings`.
"""

# No `from __future__ import annotations` here: Ray Serve converts `args` into the builder's
# pydantic annotation only when the annotation is a real class, not a string.

import hashlib
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, cast

import yaml
from pydantic import BaseModel, ConfigDict, Field
from ray.serve import Application, Deployment
from ray.serve.schema import ServeDeploySchema
from rich.console import Console

from rayweave.cluster.errors import ServiceError
from rayweave.cluster.logging_setup import configure_logging
from rayweave.cluster.settings import Settings, load_settings

log = logging.getLogger(__name__)

DEFAULT_SERVE_CONFIG = Path(__file__).parent / "config.yaml"
# Serve's exporter hook per `serve.tracing`: "" is Serve's own file exporter.
TRACING_EXPORTERS = {"file": "", "otlp": "rayweave.serve.tracing:otlp_span_processors"}


class AppArgs(BaseModel):
    """`args` of the Serve application: optional settings file plus settings groups."""

    model_config = ConfigDict(extra="forbid")

    config_file: Path | None = Field(default=None, description="rayweave.toml on the cluster.")
    code_version: str | None = Field(
        default=None,
        description="Fingerprint of the deploying rayweave's code: Serve redeploys an app only "
        "when its config changes, so a changed fingerprint is what replaces replicas running "
        "older code. Not a setting.",
    )
    home: Path | None = None
    log_level: str | None = None
    log_encoding: str | None = None
    ray: dict[str, Any] = Field(default_factory=dict)
    qdrant: dict[str, Any] = Field(default_factory=dict)
    graph: dict[str, Any] = Field(default_factory=dict)
    models: dict[str, Any] = Field(default_factory=dict)
    ingest: dict[str, Any] = Field(default_factory=dict)
    serve: dict[str, Any] = Field(default_factory=dict)

    def settings(self) -> Settings:
        groups = {
            k: v
            for k, v in self.model_dump(exclude={"config_file", "code_version"}).items()
            if v is not None and v != {}
        }
        return load_settings(self.config_file, **groups)


Layout = Literal["composed", "fused"]
# The deployments each layout binds; the Serve config's other entries are dropped for it.
LAYOUT_DEPLOYMENTS: dict[str, tuple[str, ...]] = {
    "composed": (
        "Ingress",
        "QueryClassifier",
        "VectorRetriever",
        "GraphRetriever",
        "WebRetriever",
        "FusionRanker",
        "Refiner",
    ),
    "fused": ("Ingress",),
}


def resolve_layout(
    settings: Settings, *, config: dict[str, Any] | None = None, nodes: int | None = None
) -> Layout:
    """`serve.layout` with 'auto' decided: separate deployments pay off when some take GPUs
    (they scale apart from the CPU ones) or the cluster has nodes to spread them over.

    `config` is the Serve config about to be deployed; `nodes` the cluster's live nodes (None:
    asked from the connected Ray runtime)."""
    layout: Layout | Literal["auto"] = settings.serve.layout
    if layout != "auto":
        return layout
    deployments = [d for app in (config or {}).get("applications", []) for d in app["deployments"]]
    if any((d.get("ray_actor_options") or {}).get("num_gpus") for d in deployments):
        return "composed"
    if nodes is None:
        import ray

        nodes = _live_nodes() if ray.is_initialized() else 1
    return "composed" if nodes > 1 else "fused"


def _live_nodes() -> int:
    import ray

    # Ray's `nodes` carries no annotations: typed here, once.
    nodes: Callable[[], list[dict[str, Any]]] = ray.nodes
    return sum(1 for n in nodes() if n.get("Alive"))


def _bind(deployment: object, *args: Any, **kwargs: Any) -> Application:
    """`@serve.deployment` turns a class into a `Deployment` at run time; Ray's stubs keep the
    class's own type, so the cast says what the decorator did."""
    bound: Application = cast(Deployment, deployment).bind(*args, **kwargs)
    return bound


def _checked(deployment: object, settings: Settings) -> Deployment:
    """`deployment` with the health check period and timeout of `settings` (Serve calls each
    replica's `check_health` that often) and its logging (level and encoding; the replica's
    rayweave records join Serve's, `join_serve_logs`). A Serve config entry that sets them wins."""
    return cast(Deployment, deployment).options(
        health_check_period_s=settings.serve.health_check_period_s,
        health_check_timeout_s=settings.serve.health_check_timeout_s,
        logging_config={"encoding": settings.log_encoding, "log_level": settings.log_level},
    )


def compose(settings: Settings, layout: Layout = "composed") -> Application:
    """Bind the app: the deployment graph (ingress -> classifier, retrievers, fusion, refiner),
    or one ingress whose replicas run every component in-process."""
    if layout == "fused":
        from rayweave.serve.fused import FusedIngressDeployment

        return _bind(_checked(FusedIngressDeployment, settings), settings)

    from rayweave.serve.deployments import (
        FusionRankerDeployment,
        GraphRetrieverDeployment,
        QueryClassifierDeployment,
        RefinerDeployment,
        VectorRetrieverDeployment,
        WebRetrieverDeployment,
    )
    from rayweave.serve.ingress import IngressDeployment

    # Every deployment is always bound, so one Serve config file fits every setting (a config
    # naming a deployment the app lacks is rejected); an unconfigured web retriever answers empty.
    def checked(deployment: object) -> Deployment:
        return _checked(deployment, settings)

    return _bind(
        checked(IngressDeployment),
        settings,
        _bind(checked(QueryClassifierDeployment)),
        _bind(checked(VectorRetrieverDeployment), settings),
        _bind(checked(FusionRankerDeployment), settings),
        graph=_bind(checked(GraphRetrieverDeployment), settings),
        web=_bind(checked(WebRetrieverDeployment), settings),
        refiner=_bind(checked(RefinerDeployment), settings),
    )


def build_app(args: AppArgs) -> Application:
    """Entry point for `serve run rayweave.serve.app:build_app` and Serve config files."""
    if isinstance(args, dict):  # direct calls with a plain dict
        args = AppArgs.model_validate(args)
    settings = args.settings()
    configure_logging(settings.log_level)
    return compose(settings, resolve_layout(settings))


def settings_to_args(settings: Settings) -> dict[str, Any]:
    """Settings as Serve `args` (JSON-safe, secrets revealed: the cluster needs them)."""
    data = settings.model_dump(mode="python", exclude={"config_file"})

    def plain(value: Any) -> Any:
        if hasattr(value, "get_secret_value"):
            return value.get_secret_value()
        if isinstance(value, Path):
            return str(value)
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [plain(v) for v in value]
        return value

    return {k: plain(v) for k, v in data.items()}


def serve_config(settings: Settings) -> dict[str, Any]:
    """The Serve config file with this run's settings as the app's args and HTTP options."""
    path = settings.serve.serve_config or DEFAULT_SERVE_CONFIG
    config: dict[str, Any] = yaml.safe_load(path.read_text())
    config.setdefault("http_options", {}).update(
        {
            "host": settings.serve.host,
            "port": settings.serve.port,
            "request_timeout_s": settings.serve.request_timeout_s,
        }
    )
    tracing = settings.serve.tracing
    if tracing != "off":
        config["tracing_config"] = {
            "enabled": True,
            "exporter_import_path": TRACING_EXPORTERS[tracing],
            "sampling_ratio": settings.serve.tracing_sampling_ratio,
        }
    # Decided once, here, and handed to `build_app` in `args`: the deployments the config keeps
    # must be the ones the app binds.
    layout = resolve_layout(settings, config=config)
    args = settings_to_args(settings)
    args["serve"]["layout"] = layout
    args["code_version"] = code_version()
    for application in config["applications"]:
        application["args"] = {**application.get("args", {}), **args}
        application["name"] = settings.serve.app_name
        application["route_prefix"] = settings.serve.route_prefix
        application["deployments"] = [
            d for d in application.get("deployments", []) if d["name"] in LAYOUT_DEPLOYMENTS[layout]
        ]
        if layout == "fused":
            _size_fused(application["deployments"], settings)
    return config


MAX_AUTO_FUSED_REPLICAS = 4


def fused_replicas(settings: Settings, *, cpus: float | None = None) -> int:
    """`serve.fused_replicas`, or one per CPU of the cluster (`cpus`; None: asked from the
    connected Ray runtime), at most `MAX_AUTO_FUSED_REPLICAS`."""
    configured: int | None = settings.serve.fused_replicas
    if configured is not None:
        return configured
    if cpus is None:
        import ray

        # Ray's `cluster_resources` carries no annotations: typed here.
        resources: Callable[[], dict[str, float]] = ray.cluster_resources
        cpus = float(resources().get("CPU", 1.0)) if ray.is_initialized() else 1.0
    return max(1, min(MAX_AUTO_FUSED_REPLICAS, int(cpus)))


def _size_fused(deployments: list[dict[str, Any]], settings: Settings) -> None:
    """The fused `Ingress` runs the whole pipeline: unless the config sizes it, one replica per
    core (the composed ingress only routes, so the packaged file leaves it at Serve's one)."""
    for entry in deployments:
        if entry["name"] == "Ingress" and not {"num_replicas", "autoscaling_config"} & set(entry):
            entry["num_replicas"] = fused_replicas(settings)


PACKAGES = ("cluster", "ingest", "serve", "graph", "models")


def code_version(root: Path | None = None) -> str:
    """A digest of the names, sizes and modification times of rayweave's Python files and the
    packaged Serve config: it changes with an upgrade or an edit, not between two deploys of the
    same code (a stat per file, no reads)."""
    base = root or Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for package in PACKAGES:
        for path in sorted((base / package).rglob("*.py")) + sorted(
            (base / package).glob("*.yaml")
        ):
            st = path.stat()
            digest.update(f"{path.relative_to(base)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def deploy(settings: Settings, *, console: Console | None = None, timeout_s: float = 600.0) -> str:
    """Start the embedded stack if needed and deploy the app; returns the ingress URL."""
    from rayweave.cluster.services.graph_server import resolve_graph_connection
    from rayweave.cluster.services.runtime import connect

    console = console or Console(stderr=True, quiet=True)
    with console.status("starting Ray and the graph server"):
        connect(settings)
        resolve_graph_connection(settings)
        points = collection_points(settings)
    if points == 0:
        warning = (
            f"collection {settings.qdrant.collection!r} is empty: every search will answer no "
            f"results until documents are ingested (`rayweave ingest PATH`; a failed or "
            f"unfinished ingest leaves it so)"
        )
        log.warning(warning)
        console.print(f"[bold yellow]warning:[/bold yellow] {warning}")
    config = ServeDeploySchema.model_validate(serve_config(settings))
    url = f"http://{settings.serve.host}:{settings.serve.port}"
    with console.status(f"deploying {settings.serve.app_name} (loading models on each replica)"):
        # The same two calls as Ray's own `serve run config.yaml`.
        client = start_serve(config)
        client.deploy_apps(config, _blocking=False)
        _wait_running(settings.serve.app_name, timeout_s)
    return url


def start_serve(config: ServeDeploySchema) -> Any:
    """Serve's controller and proxies with `config`'s HTTP options (a running instance is kept
    when its proxies match, refused when they do not); returns the Serve client."""
    from ray.serve._private import api as serve_private

    client = serve_private.serve_start(
        http_options=config.http_options.model_dump(),
        proxy_location=config.proxy_location,
        global_tracing_config=config.tracing_config,
    )
    drift = proxy_drift(client.get_serve_details(), config)
    if drift:
        raise ServiceError(
            f"Serve already runs in this cluster with other proxy settings ({'; '.join(drift)})"
            ": Ray applies them only when Serve starts, so this config's would be ignored. "
            "Stop Serve first (`serve shutdown -y` ends every Serve app in the cluster; "
            "`rayweave stop` ends rayweave's whole stack), then deploy again."
        )
    return client


def collection_points(settings: Settings) -> int:
    """Visible points of the collection the app will serve; ServiceError, naming it and the fix,
    when it does not exist (the app would answer every search with a 404)."""
    from rayweave.cluster.errors import NotFoundError
    from rayweave.cluster.vectors.service import vector_store_for

    name = settings.qdrant.collection
    store = vector_store_for(settings, name, shared=True)
    try:
        return store.count({"visible": True})
    except NotFoundError as exc:
        raise ServiceError(
            f"cannot serve collection {name!r}: it does not exist ({exc}). Ingest documents into "
            f"it first, `rayweave ingest PATH --collection {name}`, then run `rayweave serve` "
            "again."
        ) from exc
    finally:
        store.close()


def proxy_drift(running: dict[str, Any], wanted: ServeDeploySchema) -> list[str]:
    """How the running Serve instance's proxies (`get_serve_details()`) differ from what the
    config (a `ServeDeploySchema`) asks: `serve_start` keeps an existing instance's proxy
    location and HTTP options and only logs it, so without this a changed port would be served
    on the old one, and a `HeadOnly` config would run a proxy on every node."""
    http = running.get("http_options") or {}
    location = running.get("proxy_location")  # a `ProxyLocation` (a str enum) or its value
    ran = {
        "proxy_location": getattr(location, "value", location),
        "host": http.get("host"),
        "port": http.get("port"),
    }
    asked = {
        "proxy_location": str(wanted.proxy_location.value),
        "host": wanted.http_options.host,
        "port": wanted.http_options.port,
    }
    return [
        f"{key} {ran[key]} where the config asks {asked[key]}"
        for key in asked
        if ran[key] is not None and ran[key] != asked[key]
    ]


def _wait_running(app_name: str, timeout_s: float) -> None:
    from ray import serve
    from ray.serve.schema import ApplicationStatus

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = serve.status().applications.get(app_name)
        if status is not None:
            if status.status == ApplicationStatus.RUNNING:
                return
            if status.status in (ApplicationStatus.DEPLOY_FAILED, ApplicationStatus.UNHEALTHY):
                raise ServiceError(f"Serve application {app_name!r} failed: {status.message}")
        time.sleep(0.5)
    raise ServiceError(f"Serve application {app_name!r} not running after {timeout_s:.0f}s")


def shutdown(settings: Settings) -> bool:
    """Delete the app if a Serve controller is running; True when something was removed."""
    from ray import serve

    from rayweave.serve.rate_limit import remove_shared

    try:
        apps = serve.status().applications
    except Exception:  # noqa: BLE001 - no reachable Serve controller, whatever why: nothing to delete
        return False
    if settings.serve.app_name not in apps:
        return False
    serve.delete(settings.serve.app_name)
    remove_shared(settings.serve.app_name, namespace=settings.ray.namespace)
    return True
