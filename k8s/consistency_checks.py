"""Cross-object consistency of one rendered target (see `consistency_problems`)."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

import yaml
from kustomize_render import describe, ray_cluster_specs, ray_groups
from pod_templates import (
    GPU_RESOURCE,
    SETTINGS_CONFIGMAP,
    PodTemplate,
    is_settings_configmap,
    pod_templates,
    references,
)

# The Secret created by hand (k8s/README.md); nothing renders a Secret, so none is committed.
CREDENTIALS_SECRET = "rayweave-credentials"
CREDENTIAL_KEYS = frozenset({"RAYWEAVE_GRAPH__PASSWORD", "RAYWEAVE_QDRANT__API_KEY", "auth_token"})
SERVE_PORT_NAME = "serve"


def consistency_problems(objects: Sequence[Mapping[str, Any]]) -> list[str]:
    """Cross-object checks on one rendered target: references resolve, images and Ray versions
    agree, GPU groups land on GPU nodes, the PodDisruptionBudget covers exactly the serve
    workers, the ingest entrypoint reads a mounted path."""
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
    for obj in objects:
        problems.extend(_reference_problems(obj, configmaps, pvcs))
    for pod in templates:
        for container in pod.containers:
            problems.extend(_container_problems(pod, container))
    problems.extend(_ray_pod_problems(objects, templates))
    problems.extend(_network_problems(by_kind, templates))
    problems.extend(_neo4j_problems(by_kind.get("StatefulSet", []), configmaps))
    problems.extend(_rayservice_problems(by_kind.get("RayService", []), templates, by_kind))
    problems.extend(_rayjob_problems(by_kind.get("RayJob", []), configmaps))
    return problems


def _reference_problems(
    obj: Mapping[str, Any], configmaps: Mapping[str, Mapping[str, str]], pvcs: set[str]
) -> list[str]:
    """References resolve to rendered objects, or to the documented hand-made Secret."""
    problems: list[str] = []
    claim_templates = {
        str((t.get("metadata") or {}).get("name"))
        for t in (obj.get("spec") or {}).get("volumeClaimTemplates") or []
    }
    for kind, name, key in references(obj.get("spec")):
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
    return problems


def _container_problems(pod: PodTemplate, container: Mapping[str, Any]) -> list[str]:
    """Pinned image, CPU and memory requests and limits, probes."""
    problems: list[str] = []
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
        requests, limits = res.get("requests") or {}, res.get("limits") or {}
        for resource in ("cpu", "memory"):
            if requests.get(resource) != limits.get(resource):
                problems.append(f"{label}: Ray needs {resource} requests == limits")
    # Long-running pods say how they are checked (RayJob pods live for one job and get
    # KubeRay's default probes).
    if pod.ray_kind != "RayJob" and not (
        container.get("readinessProbe") and container.get("livenessProbe")
    ):
        problems.append(f"{label}: needs readiness and liveness probes")
    return problems


def _ray_pod_problems(
    objects: Sequence[Mapping[str, Any]], templates: Sequence[PodTemplate]
) -> list[str]:
    """One Ray version, one CPU image and one GPU image, GPU groups on GPU nodes only, heads
    without workloads, the settings ConfigMap shared by serving and ingestion."""
    problems: list[str] = []
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
            "Ray images must be one CPU image and one GPU image: "
            f"cpu={sorted(cpu_images)} gpu={sorted(gpu_images)}"
        )
    settings_refs: set[frozenset[str]] = set()
    for pod in ray_pods:
        problems.extend(_gpu_placement_problems(pod))
        refs = frozenset(
            name
            for kind, name, _ in references(pod.containers[:1])
            if kind == "ConfigMap" and is_settings_configmap(name)
        ) or frozenset({f"{SETTINGS_CONFIGMAP} missing"})
        settings_refs.add(refs)
    if len(settings_refs) > 1:
        problems.append(
            f"Ray pods use different {SETTINGS_CONFIGMAP} ConfigMaps: "
            f"{sorted(map(sorted, settings_refs))}"
        )
    for obj in objects:
        for at, cluster in ray_cluster_specs(obj):
            head_params = (cluster.get("headGroupSpec") or {}).get("rayStartParams") or {}
            if str(head_params.get("num-cpus")) != "0":
                problems.append(
                    f'{describe(obj)} {at}: the head must run no workloads (num-cpus: "0")'
                )
    return problems


def _gpu_placement_problems(pod: PodTemplate) -> list[str]:
    label = f"{pod.owner} {pod.where}"
    tolerates_gpu = any(t.get("key") == GPU_RESOURCE for t in pod.spec.get("tolerations") or [])
    if pod.uses_gpu and not (pod.spec.get("nodeSelector") and tolerates_gpu):
        return [f"{label}: a GPU group needs a nodeSelector and a {GPU_RESOURCE} toleration"]
    if not pod.uses_gpu and tolerates_gpu:
        return [f"{label}: a CPU group must not tolerate the GPU taint"]
    return []


def _image_is_pinned(image: str) -> bool:
    if "@sha256:" in image:
        return True
    last = image.rsplit("/", 1)[-1]
    return ":" in last and not last.endswith(":latest")


def _serve_port(serve: Mapping[str, Any]) -> int:
    return int((serve.get("http_options") or {}).get("port", 8000))


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
    settings = next((d for n, d in configmaps.items() if is_settings_configmap(n)), {})
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
                f"{describe(service)}: Serve proxies listen on {host!r}; "
                "the Service cannot reach them"
            )
        for pod in (p for p in serve_workers if p.owner == describe(service)):
            container = pod.containers[0] if pod.containers else {}
            ports = {p.get("name"): p.get("containerPort") for p in container.get("ports") or []}
            if ports.get(SERVE_PORT_NAME) != port:
                problems.append(
                    f"{pod.owner} {pod.where}: container port {SERVE_PORT_NAME!r} must be {port} "
                    "(http_options.port)"
                )
            probe = json.dumps(container.get("readinessProbe") or {})
            if f"localhost:{port}/healthz" not in probe:
                problems.append(
                    f"{pod.owner} {pod.where}: readiness must check the app's /healthz "
                    f"on port {port}"
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
                f"{describe(budget)} must select exactly the RayService worker pods, "
                f"selects {picked}"
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
        settings = next((d for n, d in configmaps.items() if is_settings_configmap(n)), {})
        wanted = settings.get("RAYWEAVE_QDRANT__COLLECTION")
        if collection is not None and wanted is not None and collection != wanted:
            problems.append(
                f"{label}: --collection {collection} differs from "
                f"RAYWEAVE_QDRANT__COLLECTION={wanted}"
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
                            f"{label} {at} group {group_name}: corpus path {path} "
                            "is not on a mounted volume"
                        )
    return problems
