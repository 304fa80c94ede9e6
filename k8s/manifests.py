"""Render, regenerate and check rayweave's Kubernetes manifests.

    python k8s/manifests.py sync    # rewrite the Serve configs the RayService embeds
    python k8s/manifests.py check   # render every target, run every check, exit 1 on problems

The RayService embeds the repo's Serve config (`serve/config.yaml`), so `serve deploy` and the
cluster run the same app. Kustomize cannot read files above its root, so `sync` writes copies:
into the base with `base/serve-overrides.yaml` applied (the proxies listen on all interfaces in
a pod), and into gpu-prod with `overlays/gpu-prod/serve-overrides.yaml` applied on top (replicas
and resources), by the rule in `apply_serve_overrides`. `check` and the tests fail while a copy
is stale.

Checks, per rendered target: core objects against Kubernetes' strict JSON schemas
(kubernetes-validate), KubeRay objects against the CRD schemas (`crd_schema.py`), the admission
rules KubeRay's operator applies on top of its schemas, the Serve config against Ray Serve's
schema with unknown keys rejected, and cross-object consistency (references resolve, images and
Ray versions agree, GPU groups land on GPU nodes, the PodDisruptionBudget covers exactly the serve
workers, the ingest entrypoint reads a mounted path).

This folder is not a package: run the file, or load it by path (the tests do).
"""

from __future__ import annotations

import copy
import json
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import crd_schema
import yaml

K8S_DIR = Path(__file__).resolve().parent
REPO_ROOT = K8S_DIR.parent
SERVE_CONFIG = REPO_ROOT / "serve" / "config.yaml"
DOCKERFILE = K8S_DIR / "Dockerfile"

# What `kubectl apply -k` is pointed at: the two serving overlays and their ingest variants.
RENDER_TARGETS = ("overlays/cpu-dev", "overlays/gpu-prod", "ingest/cpu-dev", "ingest/gpu-prod")
# Applied beside an overlay where the Prometheus Operator runs: the PodMonitor and the dashboard.
MONITORING_TARGET = "monitoring"
DASHBOARD_CONFIGMAP = "rayweave-grafana-dashboard"
# Ray exports a metric recorded as `name` as `ray_name`, counters with `_total`, histograms as
# `_bucket`/`_count`/`_sum` series.
_RAY_EXPORT = re.compile(r"\bray_(rayweave_[a-z_]+?)(?:_total|_bucket|_count|_sum)?\b")
# Oldest Kubernetes the manifests are validated against (PDB unhealthyPodEvictionPolicy is GA in 1.31).
KUBERNETES_VERSION = "1.31"
# The Secret created by hand (k8s/README.md); nothing renders a Secret, so none is committed.
CREDENTIALS_SECRET = "rayweave-credentials"
CREDENTIAL_KEYS = frozenset({"RAYWEAVE_GRAPH__PASSWORD", "RAYWEAVE_QDRANT__API_KEY", "auth_token"})
SETTINGS_CONFIGMAP = "rayweave-settings"
SERVE_PORT_NAME = "serve"
SERVE_OVERRIDE_KEYS = frozenset(
    {"num_replicas", "autoscaling_config", "ray_actor_options", "max_ongoing_requests"}
)
RAY_KINDS = frozenset({"RayCluster", "RayService", "RayJob"})
GPU_RESOURCE = "nvidia.com/gpu"

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_MAX_NAME = {"RayCluster": 53, "RayService": 47, "RayJob": 47}
_RAY_START_RESOURCES = ("num-cpus", "num-gpus", "memory", "resources")
# String fields the CRD leaves open but the operator only understands these values of.
_SUBMISSION_MODES = ("K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode")
_UPGRADE_TYPES = ("NewClusterWithIncrementalUpgrade", "NewCluster", "None")


@dataclass(frozen=True, kw_only=True)
class ServeConfigCopy:
    """A Serve config file that `sync` writes for kustomize: serve/config.yaml with override
    files applied in order."""

    path: Path
    overrides: tuple[Path, ...] = ()


_BASE_OVERRIDES = K8S_DIR / "base" / "serve-overrides.yaml"
SERVE_CONFIG_COPIES = (
    ServeConfigCopy(path=K8S_DIR / "base" / "serve-config.yaml", overrides=(_BASE_OVERRIDES,)),
    ServeConfigCopy(
        path=K8S_DIR / "overlays" / "gpu-prod" / "serve-config.yaml",
        overrides=(_BASE_OVERRIDES, K8S_DIR / "overlays" / "gpu-prod" / "serve-overrides.yaml"),
    ),
)


# --- locating inputs -------------------------------------------------------------------------


def find_crd_dir(start: Path = REPO_ROOT) -> Path | None:
    """The KubeRay CRDs: `shared/k8s/crds` beside the checkout or beside one of its parents."""
    for folder in (start, *start.parents):
        candidate = folder / "shared" / "k8s" / "crds"
        if candidate.is_dir() and any(candidate.glob("*.yaml")):
            return candidate
    return None


def dockerfile_ray_version(dockerfile: Path = DOCKERFILE) -> str:
    """The Ray version of the `rayproject/ray` base image named by the Dockerfile's RAY_IMAGE."""
    text = dockerfile.read_text(encoding="utf-8")
    match = re.search(r"^ARG RAY_IMAGE=rayproject/ray:(\d+\.\d+\.\d+)-", text, re.MULTILINE)
    if match is None:
        raise ValueError(f"{dockerfile}: no `ARG RAY_IMAGE=rayproject/ray:<version>-...` line")
    return match.group(1)


# --- rendering -------------------------------------------------------------------------------


def render(target: str | Path, *, kubectl: str | None = None) -> list[dict[str, Any]]:
    """`kubectl kustomize` one target (relative to k8s/ or absolute) into a list of objects."""
    binary = kubectl or shutil.which("kubectl")
    if binary is None:
        raise RuntimeError("kubectl is not on PATH; it is needed to render the kustomizations")
    path = Path(target) if Path(target).is_absolute() else K8S_DIR / target
    result = subprocess.run(
        [binary, "kustomize", str(path)], capture_output=True, text=True, timeout=120, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"kubectl kustomize {path} failed:\n{result.stderr.strip()}")
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


# --- the Serve config copies -----------------------------------------------------------------


def apply_serve_overrides(
    config: Mapping[str, Any], overrides: Mapping[str, Any], *, app: str = "rayweave"
) -> dict[str, Any]:
    """`config` with overrides applied; the input is left untouched.

    The rule (also written at the top of each overrides file): `http_options` may set `host`
    only; `deployments` maps a deployment of `app` (which must exist) to new values of
    SERVE_OVERRIDE_KEYS, each replacing the old value whole; setting num_replicas drops
    autoscaling_config and the reverse. Anything else is an error.
    """
    unknown_top = set(overrides) - {"http_options", "deployments"}
    if unknown_top:
        raise ValueError(f"serve overrides: unknown top-level keys {sorted(unknown_top)}")
    result = copy.deepcopy(dict(config))
    http = overrides.get("http_options") or {}
    if set(http) - {"host"}:
        raise ValueError(
            f"serve overrides: http_options may set host only, not {sorted(set(http) - {'host'})}"
        )
    if http:
        result.setdefault("http_options", {}).update(http)
    apps = [a for a in result.get("applications", []) if a.get("name") == app]
    if len(apps) != 1:
        raise ValueError(f"serve config: expected one application named {app!r}")
    by_name = {d["name"]: d for d in apps[0].get("deployments", [])}
    for name, changes in (overrides.get("deployments") or {}).items():
        if name not in by_name:
            raise ValueError(
                f"serve overrides: deployment {name!r} is not in the serve config "
                f"(known: {', '.join(sorted(by_name))})"
            )
        bad = set(changes) - SERVE_OVERRIDE_KEYS
        if bad:
            raise ValueError(
                f"serve overrides: {name}: keys {sorted(bad)} may not be overridden "
                f"(allowed: {', '.join(sorted(SERVE_OVERRIDE_KEYS))})"
            )
        target = by_name[name]
        if "num_replicas" in changes:
            target.pop("autoscaling_config", None)
        if "autoscaling_config" in changes:
            target.pop("num_replicas", None)
        target.update(copy.deepcopy(dict(changes)))
    return result


def expected_serve_config(entry: ServeConfigCopy, source: Path = SERVE_CONFIG) -> dict[str, Any]:
    """The Serve config one copy must hold: `source` with the copy's overrides applied."""
    config: dict[str, Any] = yaml.safe_load(source.read_text(encoding="utf-8"))
    for path in entry.overrides:
        config = apply_serve_overrides(
            config, yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        )
    return config


def expected_serve_config_text(entry: ServeConfigCopy, source: Path = SERVE_CONFIG) -> str:
    """The exact text `sync` writes for one copy."""
    applied = " + ".join(str(p.relative_to(REPO_ROOT)) for p in entry.overrides)
    header = (
        f"# GENERATED by `python k8s/manifests.py sync` from serve/config.yaml + {applied}.\n"
        "# Do not edit: change those files, then sync.\n"
    )
    body = yaml.safe_dump(
        expected_serve_config(entry, source), sort_keys=False, default_flow_style=False
    )
    return header + body


def stale_serve_configs(source: Path = SERVE_CONFIG) -> list[Path]:
    """Copies whose content differs from what `sync` would write from `source`."""
    return [
        entry.path
        for entry in SERVE_CONFIG_COPIES
        if not entry.path.is_file()
        or entry.path.read_text(encoding="utf-8") != expected_serve_config_text(entry, source)
    ]


def sync() -> list[Path]:
    """Rewrite every stale copy; returns the files written."""
    written = []
    for entry in SERVE_CONFIG_COPIES:
        text = expected_serve_config_text(entry)
        if not entry.path.is_file() or entry.path.read_text(encoding="utf-8") != text:
            entry.path.write_text(text, encoding="utf-8")
            written.append(entry.path)
    return written


def serve_config_problems(config: Any) -> list[str]:
    """Ray Serve's own schema, with unknown keys rejected (Serve ignores them: a typo such as
    `num_replica` would silently deploy defaults)."""
    from ray.serve.config import AutoscalingConfig
    from ray.serve.schema import ServeDeploySchema

    problems: list[str] = []
    try:
        ServeDeploySchema.model_validate(config, extra="forbid")
    except ValueError as exc:
        problems.append(f"serve config: {exc}")
    if not isinstance(config, Mapping):
        return problems or ["serve config: not a mapping"]
    for app in config.get("applications") or []:
        names = [d.get("name") for d in app.get("deployments") or []]
        if len(names) != len(set(names)):
            problems.append(f"serve config: application {app.get('name')!r} repeats a deployment")
        for deployment in app.get("deployments") or []:
            scaling = deployment.get("autoscaling_config")
            if isinstance(scaling, Mapping):
                try:
                    AutoscalingConfig.model_validate(scaling, extra="forbid")
                except ValueError as exc:
                    problems.append(f"serve config: {deployment.get('name')}: {exc}")
    return problems


# --- validation of single objects ------------------------------------------------------------


def core_errors(obj: Mapping[str, Any], *, version: str = KUBERNETES_VERSION) -> list[str]:
    """Strict Kubernetes schema validation of a core object (empty when valid)."""
    import kubernetes_validate

    try:
        kubernetes_validate.validate(dict(obj), version, strict=True)
    except kubernetes_validate.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "/"
        return [f"{where}: {exc.message}"]
    except kubernetes_validate.SchemaNotFoundError as exc:
        return [f"no Kubernetes schema: {exc.message}"]
    return []


def object_meta_definitions(version: str = KUBERNETES_VERSION) -> dict[str, Any]:
    """kubernetes-validate's strict definitions document (holds ObjectMeta) for `version`."""
    folder = resources.files("kubernetes_validate") / "kubernetes-json-schema"
    wanted = f"v{version}.0-local-strict"
    document = folder / wanted / "_definitions.json"
    if not document.is_file():
        raise FileNotFoundError(f"kubernetes-validate has no {wanted}/_definitions.json")
    loaded: dict[str, Any] = json.loads(document.read_text(encoding="utf-8"))
    return loaded


def load_crd_validator(crd_dir: Path) -> crd_schema.CrdValidator:
    return crd_schema.CrdValidator.from_files(
        crd_dir.glob("*.yaml"), object_meta_definitions=object_meta_definitions()
    )


def describe(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{obj.get('kind')}/{meta.get('name')}"


def ray_cluster_specs(obj: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(where, RayClusterSpec) pairs of a RayCluster, RayService or RayJob."""
    spec = obj.get("spec") or {}
    kind = obj.get("kind")
    if kind == "RayCluster":
        return [("spec", spec)]
    if kind == "RayService" and "rayClusterConfig" in spec:
        return [("spec.rayClusterConfig", spec["rayClusterConfig"])]
    if kind == "RayJob" and "rayClusterSpec" in spec:
        return [("spec.rayClusterSpec", spec["rayClusterSpec"])]
    return []


def ray_groups(cluster: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """("head" | worker group name, group spec) of one RayClusterSpec."""
    yield "head", cluster.get("headGroupSpec") or {}
    for group in cluster.get("workerGroupSpecs") or []:
        yield str(group.get("groupName")), group


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


def kuberay_problems(obj: Mapping[str, Any]) -> list[str]:
    """Admission rules the KubeRay operator (ray-operator/controllers/ray/utils/validation.go)
    enforces beyond its CRD schemas; a violation makes it refuse the object."""
    kind = str(obj.get("kind"))
    where = describe(obj)
    problems: list[str] = []
    name = str((obj.get("metadata") or {}).get("name", ""))
    if not _DNS1035.match(name) or len(name) > _MAX_NAME.get(kind, 63):
        problems.append(
            f"{where}: name must be a DNS-1035 label of at most {_MAX_NAME.get(kind, 63)} characters"
        )
    spec = obj.get("spec") or {}
    if kind == "RayJob":
        if not spec.get("rayClusterSpec") and not spec.get("clusterSelector"):
            problems.append(f"{where}: one of rayClusterSpec or clusterSelector must be set")
        if spec.get("ttlSecondsAfterFinished", 0) > 0 and not spec.get("shutdownAfterJobFinishes"):
            problems.append(
                f"{where}: ttlSecondsAfterFinished needs shutdownAfterJobFinishes: true"
            )
        if not str(spec.get("entrypoint", "")).strip():
            problems.append(f"{where}: entrypoint is empty")
    if kind == "RayJob" and spec.get("submissionMode", "K8sJobMode") not in _SUBMISSION_MODES:
        problems.append(
            f"{where}: submissionMode {spec.get('submissionMode')!r} is not one of {_SUBMISSION_MODES}"
        )
    upgrade = (spec.get("upgradeStrategy") or {}).get("type")
    if kind == "RayService" and upgrade is not None and upgrade not in _UPGRADE_TYPES:
        problems.append(f"{where}: upgradeStrategy.type {upgrade!r} is not one of {_UPGRADE_TYPES}")
    if kind == "RayService":
        try:
            serve = yaml.safe_load(spec.get("serveConfigV2") or "")
        except yaml.YAMLError as exc:
            problems.append(f"{where}: serveConfigV2 is not YAML: {exc}")
        else:
            if not isinstance(serve, Mapping):
                problems.append(f"{where}: serveConfigV2 is not a YAML mapping")
    for at, cluster in ray_cluster_specs(obj):
        autoscaling = bool(cluster.get("enableInTreeAutoscaling"))
        names: list[str] = []
        for group_name, group in ray_groups(cluster):
            label = f"{where} {at} group {group_name}"
            names.append(group_name)
            containers = ((group.get("template") or {}).get("spec") or {}).get("containers") or []
            if not containers:
                problems.append(f"{label}: needs at least one container")
            params = group.get("rayStartParams") or {}
            if group.get("resources") and any(params.get(k) for k in _RAY_START_RESOURCES):
                problems.append(f"{label}: resources set both in rayStartParams and resources")
            if "labels" in params:
                problems.append(f"{label}: rayStartParams['labels'] is not supported")
            if group_name == "head":
                continue
            low, high = group.get("minReplicas"), group.get("maxReplicas")
            replicas = group.get("replicas")
            if low is None or high is None:
                if not autoscaling:
                    problems.append(f"{label}: min/maxReplicas are required without autoscaling")
            elif low > high:
                problems.append(f"{label}: minReplicas {low} > maxReplicas {high}")
            elif replicas is not None and not low <= replicas <= high:
                problems.append(f"{label}: replicas {replicas} outside [{low}, {high}]")
        workers = names[1:]
        if len(workers) != len(set(workers)):
            problems.append(f"{where} {at}: worker group names repeat")
        auth = cluster.get("authOptions") or {}
        if auth.get("mode", "token" if auth else "disabled") == "token" and auth:
            version = str(cluster.get("rayVersion", ""))
            if not version or _version_tuple(version) < (2, 52, 0):
                problems.append(f"{where} {at}: token auth needs rayVersion >= 2.52.0")
            if kind != "RayCluster" and auth.get("enableK8sTokenAuth"):
                problems.append(f"{where} {at}: K8s token auth is only for standalone RayClusters")
        if (cluster.get("autoscalerOptions") or {}).get("version") == "v2":
            for group_name, group in ray_groups(cluster):
                policy = ((group.get("template") or {}).get("spec") or {}).get("restartPolicy")
                if policy not in (None, "Never"):
                    problems.append(
                        f"{where} {at} group {group_name}: autoscaler v2 needs restartPolicy Never"
                    )
    return problems


# --- cross-object consistency ----------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class PodTemplate:
    """A pod template found in a rendered object, with where it is and what it is for."""

    owner: str
    where: str
    template: Mapping[str, Any]
    ray_group: str | None = None  # "head" or the worker group name for Ray pods
    ray_kind: str | None = None

    @property
    def spec(self) -> Mapping[str, Any]:
        return self.template.get("spec") or {}

    @property
    def labels(self) -> Mapping[str, str]:
        return (self.template.get("metadata") or {}).get("labels") or {}

    @property
    def containers(self) -> list[Mapping[str, Any]]:
        return list(self.spec.get("containers") or [])

    @property
    def uses_gpu(self) -> bool:
        return any(GPU_RESOURCE in _limits(c) for c in self.containers)


def _limits(container: Mapping[str, Any]) -> Mapping[str, Any]:
    return (container.get("resources") or {}).get("limits") or {}


def pod_templates(objects: Iterable[Mapping[str, Any]]) -> list[PodTemplate]:
    found: list[PodTemplate] = []
    for obj in objects:
        owner = describe(obj)
        spec = obj.get("spec") or {}
        if obj.get("kind") in {"StatefulSet", "Deployment", "DaemonSet", "Job"}:
            found.append(
                PodTemplate(owner=owner, where="spec.template", template=spec.get("template") or {})
            )
        for at, cluster in ray_cluster_specs(obj):
            for group_name, group in ray_groups(cluster):
                found.append(
                    PodTemplate(
                        owner=owner,
                        where=f"{at} group {group_name}",
                        template=group.get("template") or {},
                        ray_group=group_name,
                        ray_kind=str(obj.get("kind")),
                    )
                )
    return found


def _refs(node: Any) -> Iterator[tuple[str, str, str | None]]:
    """(kind, name, key) of every ConfigMap/Secret/PVC reference below `node`."""
    if isinstance(node, Mapping):
        for field, kind in (("configMapRef", "ConfigMap"), ("secretRef", "Secret")):
            if isinstance(node.get(field), Mapping):
                yield kind, str(node[field].get("name")), None
        for field, kind in (("configMapKeyRef", "ConfigMap"), ("secretKeyRef", "Secret")):
            ref = node.get(field)
            if isinstance(ref, Mapping) and not ref.get("optional"):
                yield kind, str(ref.get("name")), str(ref.get("key"))
        if isinstance(node.get("persistentVolumeClaim"), Mapping):
            yield "PersistentVolumeClaim", str(node["persistentVolumeClaim"].get("claimName")), None
        if isinstance(node.get("authOptions"), Mapping) and node["authOptions"].get("secretName"):
            yield "Secret", str(node["authOptions"]["secretName"]), "auth_token"
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def _is_settings(configmap: str) -> bool:
    """The rayweave-settings ConfigMap, with or without kustomize's hash suffix."""
    return re.fullmatch(rf"{SETTINGS_CONFIGMAP}(-[a-z0-9]{{10}})?", configmap) is not None


def _image_is_pinned(image: str) -> bool:
    if "@sha256:" in image:
        return True
    last = image.rsplit("/", 1)[-1]
    return ":" in last and not last.endswith(":latest")


def _serve_port(serve: Mapping[str, Any]) -> int:
    return int((serve.get("http_options") or {}).get("port", 8000))


def consistency_problems(objects: Sequence[Mapping[str, Any]]) -> list[str]:
    """Cross-object checks on one rendered target (see the module docstring)."""
    problems: list[str] = []
    by_kind: dict[str, list[Mapping[str, Any]]] = {}
    for obj in objects:
        by_kind.setdefault(str(obj.get("kind")), []).append(obj)
    configmaps = {
        str(c["metadata"]["name"]): c.get("data") or {} for c in by_kind.get("ConfigMap", [])
    }
    pvcs = {str(p["metadata"]["name"]) for p in by_kind.get("PersistentVolumeClaim", [])}
    templates = pod_templates(objects)

    if by_kind.get("Secret"):
        problems.append(
            "a Secret is rendered: credentials must not be committed (create them by hand)"
        )
    namespaces = {(o.get("metadata") or {}).get("namespace") for o in objects}
    if len(namespaces) != 1 or None in namespaces:
        problems.append(
            f"objects must share one explicit namespace, found {sorted(map(str, namespaces))}"
        )

    # References resolve to rendered objects, or to the documented hand-made Secret.
    for obj in objects:
        claim_templates = {
            str((t.get("metadata") or {}).get("name"))
            for t in (obj.get("spec") or {}).get("volumeClaimTemplates") or []
        }
        for kind, name, key in _refs(obj.get("spec")):
            if kind == "ConfigMap":
                if name not in configmaps:
                    problems.append(f"{describe(obj)}: ConfigMap {name} is not rendered")
                elif key is not None and key not in configmaps[name]:
                    problems.append(f"{describe(obj)}: ConfigMap {name} has no key {key}")
            elif kind == "Secret":
                if name != CREDENTIALS_SECRET:
                    problems.append(f"{describe(obj)}: Secret {name} is not {CREDENTIALS_SECRET}")
                elif key is not None and key not in CREDENTIAL_KEYS:
                    problems.append(
                        f"{describe(obj)}: {CREDENTIALS_SECRET} key {key} is not documented"
                    )
            elif name not in pvcs and name not in claim_templates:
                problems.append(f"{describe(obj)}: PersistentVolumeClaim {name} is not rendered")

    # Every container: pinned image, CPU and memory requests and limits.
    for pod in templates:
        for container in pod.containers:
            label = f"{pod.owner} {pod.where} container {container.get('name')}"
            image = str(container.get("image", ""))
            if not _image_is_pinned(image):
                problems.append(f"{label}: image {image!r} is not pinned to a tag or digest")
            res = container.get("resources") or {}
            for part in ("requests", "limits"):
                missing = {"cpu", "memory"} - set(res.get(part) or {})
                if missing:
                    problems.append(f"{label}: no {part} for {sorted(missing)}")
            if pod.ray_group is not None:
                # Ray sizes a node by its limits; requests below them overcommit the Kubernetes node.
                for resource in ("cpu", "memory"):
                    if (res.get("requests") or {}).get(resource) != (res.get("limits") or {}).get(
                        resource
                    ):
                        problems.append(f"{label}: Ray needs {resource} requests == limits")
            # Long-running pods say how they are checked (RayJob pods live for one job and get
            # KubeRay's default probes).
            if pod.ray_kind != "RayJob" and not (
                container.get("readinessProbe") and container.get("livenessProbe")
            ):
                problems.append(f"{label}: needs readiness and liveness probes")

    # Ray pods: one Ray version, one CPU image and one GPU image, GPU groups on GPU nodes only,
    # heads without workloads, the settings ConfigMap shared by serving and ingestion.
    versions = {
        str(cluster.get("rayVersion")) for o in objects for _, cluster in ray_cluster_specs(o)
    }
    if len(versions) > 1:
        problems.append(f"Ray clusters disagree on rayVersion: {sorted(versions)}")
    ray_pods = [p for p in templates if p.ray_group is not None]
    cpu_images = {
        str(p.containers[0].get("image")) for p in ray_pods if p.containers and not p.uses_gpu
    }
    gpu_images = {
        str(p.containers[0].get("image")) for p in ray_pods if p.containers and p.uses_gpu
    }
    if len(cpu_images) > 1 or len(gpu_images) > 1 or (cpu_images & gpu_images):
        problems.append(
            f"Ray images must be one CPU image and one GPU image: cpu={sorted(cpu_images)} gpu={sorted(gpu_images)}"
        )
    settings_refs: set[frozenset[str]] = set()
    for pod in ray_pods:
        label = f"{pod.owner} {pod.where}"
        tolerates_gpu = any(t.get("key") == GPU_RESOURCE for t in pod.spec.get("tolerations") or [])
        if pod.uses_gpu and not (pod.spec.get("nodeSelector") and tolerates_gpu):
            problems.append(
                f"{label}: a GPU group needs a nodeSelector and a {GPU_RESOURCE} toleration"
            )
        if not pod.uses_gpu and tolerates_gpu:
            problems.append(f"{label}: a CPU group must not tolerate the GPU taint")
        refs = frozenset(
            name
            for kind, name, _ in _refs(pod.containers[:1])
            if kind == "ConfigMap" and _is_settings(name)
        ) or frozenset({f"{SETTINGS_CONFIGMAP} missing"})
        settings_refs.add(refs)
    if len(settings_refs) > 1:
        problems.append(
            f"Ray pods use different {SETTINGS_CONFIGMAP} ConfigMaps: {sorted(map(sorted, settings_refs))}"
        )
    for obj in objects:
        for at, cluster in ray_cluster_specs(obj):
            head_params = (cluster.get("headGroupSpec") or {}).get("rayStartParams") or {}
            if str(head_params.get("num-cpus")) != "0":
                problems.append(
                    f'{describe(obj)} {at}: the head must run no workloads (num-cpus: "0")'
                )

    problems.extend(_network_problems(by_kind, templates))
    problems.extend(_neo4j_problems(by_kind.get("StatefulSet", []), configmaps))
    problems.extend(_rayservice_problems(by_kind.get("RayService", []), templates, by_kind))
    problems.extend(_rayjob_problems(by_kind.get("RayJob", []), configmaps))
    return problems


def _selects(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def _network_problems(
    by_kind: Mapping[str, Sequence[Mapping[str, Any]]], templates: Sequence[PodTemplate]
) -> list[str]:
    """Services and StatefulSets find their pods and ports; NetworkPolicies let every Ray pod in."""
    problems: list[str] = []
    services = {str(s["metadata"]["name"]): s for s in by_kind.get("Service", [])}
    for name, service in services.items():
        spec = service.get("spec") or {}
        chosen = [p for p in templates if _selects(spec.get("selector") or {}, p.labels)]
        if not chosen:
            problems.append(f"Service/{name}: its selector matches no pod template")
        for port in spec.get("ports") or []:
            target = port.get("targetPort", port.get("port"))
            names = {
                q.get("name") for p in chosen for c in p.containers for q in c.get("ports") or []
            }
            numbers = {
                q.get("containerPort")
                for p in chosen
                for c in p.containers
                for q in c.get("ports") or []
            }
            if chosen and target not in names | numbers:
                problems.append(
                    f"Service/{name}: targetPort {target!r} is no container port of its pods"
                )
    for sts in by_kind.get("StatefulSet", []):
        governing = services.get(str((sts.get("spec") or {}).get("serviceName")))
        if governing is None or (governing.get("spec") or {}).get("clusterIP") != "None":
            problems.append(f"{describe(sts)}: serviceName must name a rendered headless Service")
    ray_pods = [p for p in templates if p.ray_group is not None]
    for policy in by_kind.get("NetworkPolicy", []):
        spec = policy.get("spec") or {}
        guarded = [
            p
            for p in templates
            if _selects((spec.get("podSelector") or {}).get("matchLabels") or {}, p.labels)
        ]
        if not guarded:
            problems.append(f"{describe(policy)}: its podSelector matches no pod template")
        sources = [
            (peer.get("podSelector") or {}).get("matchLabels") or {}
            for rule in spec.get("ingress") or []
            for peer in rule.get("from") or []
        ]
        for pod in ray_pods:
            if not any(_selects(source, pod.labels) for source in sources):
                problems.append(f"{describe(policy)}: shuts out {pod.owner} {pod.where}")
    return problems


def _neo4j_problems(
    statefulsets: Sequence[Mapping[str, Any]], configmaps: Mapping[str, Mapping[str, str]]
) -> list[str]:
    """Neo4j creates the database rayweave connects to (Community edition has only that one)."""
    settings = next((d for n, d in configmaps.items() if _is_settings(n)), {})
    wanted = settings.get("RAYWEAVE_GRAPH__DATABASE")
    problems = []
    for sts in statefulsets:
        for container in (((sts.get("spec") or {}).get("template") or {}).get("spec") or {}).get(
            "containers"
        ) or []:
            env = {e.get("name"): e.get("value") for e in container.get("env") or []}
            name = env.get("NEO4J_initial_dbms_default__database")
            if name is not None and wanted is not None and name != wanted:
                problems.append(
                    f"{describe(sts)}: creates database {name!r}, rayweave uses {wanted!r}"
                )
    return problems


def _rayservice_problems(
    services: Sequence[Mapping[str, Any]],
    templates: Sequence[PodTemplate],
    by_kind: Mapping[str, Sequence[Mapping[str, Any]]],
) -> list[str]:
    problems: list[str] = []
    serve_workers = [p for p in templates if p.ray_kind == "RayService" and p.ray_group != "head"]
    for service in services:
        serve = yaml.safe_load((service.get("spec") or {}).get("serveConfigV2") or "{}") or {}
        port = _serve_port(serve)
        host = (serve.get("http_options") or {}).get("host")
        if host not in ("0.0.0.0", "::"):
            problems.append(
                f"{describe(service)}: Serve proxies listen on {host!r}; the Service cannot reach them"
            )
        for pod in (p for p in serve_workers if p.owner == describe(service)):
            container = pod.containers[0] if pod.containers else {}
            ports = {p.get("name"): p.get("containerPort") for p in container.get("ports") or []}
            if ports.get(SERVE_PORT_NAME) != port:
                problems.append(
                    f"{pod.owner} {pod.where}: container port {SERVE_PORT_NAME!r} must be {port} (http_options.port)"
                )
            probe = json.dumps(container.get("readinessProbe") or {})
            if f"localhost:{port}/healthz" not in probe:
                problems.append(
                    f"{pod.owner} {pod.where}: readiness must check the app's /healthz on port {port}"
                )
    # The budget covers the serve workers, all of them and nothing else.
    budgets = by_kind.get("PodDisruptionBudget", [])
    if serve_workers and not budgets:
        problems.append("no PodDisruptionBudget for the serve workers")
    for budget in budgets:
        selector = ((budget.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        chosen = [
            p
            for p in templates
            if selector and all(p.labels.get(k) == v for k, v in selector.items())
        ]
        if {id(p) for p in chosen} != {id(p) for p in serve_workers}:
            picked = sorted(f"{p.owner} {p.where}" for p in chosen)
            problems.append(
                f"{describe(budget)} must select exactly the RayService worker pods, selects {picked}"
            )
    return problems


def _rayjob_problems(
    jobs: Sequence[Mapping[str, Any]], configmaps: Mapping[str, Mapping[str, str]]
) -> list[str]:
    problems: list[str] = []
    for job in jobs:
        spec = job.get("spec") or {}
        words = shlex.split(str(spec.get("entrypoint", "")))
        label = describe(job)
        if words[:3] != ["python", "-m", "rayweave.ingest.job"]:
            problems.append(f"{label}: entrypoint must run `python -m rayweave.ingest.job`")
            continue
        args = words[3:]
        paths = [
            a
            for i, a in enumerate(args)
            if not a.startswith("-") and (i == 0 or args[i - 1] != "--collection")
        ]
        if not paths:
            problems.append(f"{label}: entrypoint names no corpus location")
        collection = args[args.index("--collection") + 1] if "--collection" in args[:-1] else None
        settings = next((d for n, d in configmaps.items() if _is_settings(n)), {})
        wanted = settings.get("RAYWEAVE_QDRANT__COLLECTION")
        if collection is not None and wanted is not None and collection != wanted:
            problems.append(
                f"{label}: --collection {collection} differs from RAYWEAVE_QDRANT__COLLECTION={wanted}"
            )
        for at, cluster in ray_cluster_specs(job):
            for group_name, group in ray_groups(cluster):
                containers = ((group.get("template") or {}).get("spec") or {}).get(
                    "containers"
                ) or [{}]
                mounts = [
                    str(m.get("mountPath", "")).rstrip("/")
                    for m in containers[0].get("volumeMounts") or []
                ]
                for path in (p for p in paths if p.startswith("/")):
                    if not any(path == m or path.startswith(m + "/") for m in mounts):
                        problems.append(
                            f"{label} {at} group {group_name}: corpus path {path} is not on a mounted volume"
                        )
    return problems


# --- everything ------------------------------------------------------------------------------


# --- monitoring ------------------------------------------------------------------------------


def _matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A Kubernetes LabelSelector (matchLabels, matchExpressions) against a pod's labels."""
    if not selector:
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        present = key in labels
        if (
            (op == "In" and labels.get(key) not in values)
            or (op == "NotIn" and present and labels.get(key) in values)
            or (op == "Exists" and not present)
            or (op == "DoesNotExist" and present)
        ):
            return False
    return True


def rayweave_metric_names() -> frozenset[str]:
    """The metric names rayweave records (cluster/telemetry.py)."""
    from rayweave.cluster import telemetry

    return frozenset(
        v
        for k, v in vars(telemetry).items()
        if k.isupper() and isinstance(v, str) and v.startswith("rayweave_")
    )


def monitoring_problems(
    monitoring: Sequence[Mapping[str, Any]], served: Mapping[str, Sequence[Mapping[str, Any]]]
) -> list[str]:
    """The PodMonitor scrapes every Ray pod of every served target, by a port each pod declares,
    and nothing else; the dashboard queries only metrics rayweave records, and all of them."""
    problems: list[str] = []
    monitors = [o for o in monitoring if o.get("kind") == "PodMonitor"]
    if not monitors:
        problems.append("no PodMonitor")
    for monitor in monitors:
        where = describe(monitor)
        spec = monitor.get("spec") or {}
        ports = [e.get("port") for e in spec.get("podMetricsEndpoints") or []]
        if not ports or None in ports:
            problems.append(f"{where}: every podMetricsEndpoint needs a named port")
        selector = spec.get("selector") or {}
        for target, objects in served.items():
            for pod in pod_templates(objects):
                if pod.ray_group is None and _matches(selector, pod.labels):
                    problems.append(
                        f"{where}: selects {target} {pod.owner} {pod.where}, not a Ray pod"
                    )
            for obj in objects:
                for at, cluster in ray_cluster_specs(obj):
                    for group_name, group in ray_groups(cluster):
                        label = f"{target} {describe(obj)} {at} group {group_name}"
                        template = group.get("template") or {}
                        if not _matches(
                            selector, (template.get("metadata") or {}).get("labels") or {}
                        ):
                            problems.append(f"{where}: does not select {label}")
                            continue
                        declared = {
                            q.get("name"): q.get("containerPort")
                            for c in (template.get("spec") or {}).get("containers") or []
                            for q in c.get("ports") or []
                        }
                        problems.extend(
                            f"{where}: {label} has no container port {port!r}"
                            for port in ports
                            if port not in declared
                        )
                        export = str(
                            (group.get("rayStartParams") or {}).get("metrics-export-port", 8080)
                        )
                        if "metrics" in declared and str(declared["metrics"]) != export:
                            problems.append(
                                f"{where}: {label}: container port metrics {declared['metrics']} "
                                f"is not its metrics-export-port {export}"
                            )
    dashboards = [
        o
        for o in monitoring
        if o.get("kind") == "ConfigMap" and o["metadata"]["name"] == DASHBOARD_CONFIGMAP
    ]
    if len(dashboards) != 1:
        return [*problems, f"expected one ConfigMap {DASHBOARD_CONFIGMAP}"]
    known = rayweave_metric_names()
    queried: set[str] = set()
    for key, text in (dashboards[0].get("data") or {}).items():
        try:
            dashboard = json.loads(text)
        except json.JSONDecodeError as exc:
            problems.append(f"{DASHBOARD_CONFIGMAP}/{key}: not JSON: {exc}")
            continue
        for panel in dashboard.get("panels") or []:
            for query in panel.get("targets") or []:
                for name in _RAY_EXPORT.findall(str(query.get("expr", ""))):
                    queried.add(name)
                    if name not in known:
                        problems.append(
                            f"{DASHBOARD_CONFIGMAP}/{key} panel {panel.get('title')!r}: "
                            f"rayweave records no metric {name!r}"
                        )
    problems.extend(
        f"{DASHBOARD_CONFIGMAP}: no panel shows {name}" for name in sorted(known - queried)
    )
    return problems


def check_objects(objects: Sequence[Mapping[str, Any]], crds: crd_schema.CrdValidator) -> list[str]:
    """Every check on one rendered target."""
    problems: list[str] = []
    for obj in objects:
        where = describe(obj)
        if crds.knows(obj):
            problems.extend(f"{where}: {e}" for e in crds.errors(obj))
            problems.extend(
                f"{where}: CEL rule not evaluated at {p}" for p in crds.cel_guarded_paths(obj)
            )
            problems.extend(kuberay_problems(obj))
        elif obj.get("kind") in RAY_KINDS:
            problems.append(f"{where}: no CRD schema for {obj.get('apiVersion')}")
        else:
            problems.extend(f"{where}: {e}" for e in core_errors(obj))
    for obj in objects:
        if obj.get("kind") == "RayService":
            serve = yaml.safe_load(obj["spec"].get("serveConfigV2") or "")
            problems.extend(f"{describe(obj)}: {p}" for p in serve_config_problems(serve))
    problems.extend(consistency_problems(objects))
    return problems


def check(crd_dir: Path | None = None, *, crds: crd_schema.CrdValidator | None = None) -> list[str]:
    """Render every target and run every check; returns the problems found."""
    crd_dir = crd_dir or find_crd_dir()
    if crd_dir is None:
        return ["KubeRay CRDs not found (expected shared/k8s/crds beside the checkout)"]
    problems = [
        f"{p.relative_to(REPO_ROOT)} is stale: run `python k8s/manifests.py sync`"
        for p in stale_serve_configs()
    ]
    problems.extend(
        f"serve/config.yaml: {p}"
        for p in serve_config_problems(yaml.safe_load(SERVE_CONFIG.read_text(encoding="utf-8")))
    )
    crds = crds or load_crd_validator(crd_dir)
    ray_version = dockerfile_ray_version()
    rendered: dict[str, list[dict[str, Any]]] = {}
    for target in RENDER_TARGETS:
        try:
            objects = render(target)
        except RuntimeError as exc:
            problems.append(f"{target}: {exc}")
            continue
        problems.extend(f"{target}: {p}" for p in check_objects(objects, crds))
        rendered[target] = objects
        for obj in objects:
            for at, cluster in ray_cluster_specs(obj):
                if cluster.get("rayVersion") != ray_version:
                    problems.append(
                        f"{target}: {describe(obj)} {at}: rayVersion {cluster.get('rayVersion')} != the image's Ray {ray_version}"
                    )
    try:
        monitoring = render(MONITORING_TARGET)
    except RuntimeError as exc:
        return [*problems, f"{MONITORING_TARGET}: {exc}"]
    problems.extend(
        f"{MONITORING_TARGET}: {describe(o)}: {e}"
        for o in monitoring
        if o.get("kind") != "PodMonitor"  # a CRD of the Prometheus Operator, not checked here
        for e in core_errors(o)
    )
    problems.extend(f"{MONITORING_TARGET}: {p}" for p in monitoring_problems(monitoring, rendered))
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["sync"]:
        for path in sync():
            print(f"wrote {path.relative_to(REPO_ROOT)}")
        return 0
    if args == ["check"]:
        problems = check()
        for problem in problems:
            print(problem)
        print(f"{len(problems)} problem(s) in {', '.join((*RENDER_TARGETS, MONITORING_TARGET))}")
        return 1 if problems else 0
    print(
        __doc__.strip().splitlines()[0],
        "\nusage: python k8s/manifests.py {sync|check}",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main())
