"""Admission rules the KubeRay operator (ray-operator/controllers/ray/utils/validation.go)
enforces beyond its CRD schemas; a violation makes it refuse the object."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml
from kustomize_render import describe, ray_cluster_specs, ray_groups

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_MAX_NAME = {"RayCluster": 53, "RayService": 47, "RayJob": 47}
_RAY_START_RESOURCES = ("num-cpus", "num-gpus", "memory", "resources")
# String fields the CRD leaves open but the operator only understands these values of.
_SUBMISSION_MODES = ("K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode")
_UPGRADE_TYPES = ("NewClusterWithIncrementalUpgrade", "NewCluster", "None")


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


def kuberay_problems(obj: Mapping[str, Any]) -> list[str]:
    """Every admission rule on one RayCluster, RayService or RayJob (empty when admitted)."""
    kind = str(obj.get("kind"))
    where = describe(obj)
    problems: list[str] = []
    name = str((obj.get("metadata") or {}).get("name", ""))
    if not _DNS1035.match(name) or len(name) > _MAX_NAME.get(kind, 63):
        problems.append(
            f"{where}: name must be a DNS-1035 label of at most {_MAX_NAME.get(kind, 63)} "
            "characters"
        )
    spec = obj.get("spec") or {}
    if kind == "RayJob":
        problems.extend(_rayjob_spec_problems(where, spec))
    if kind == "RayService":
        problems.extend(_rayservice_spec_problems(where, spec))
    for at, cluster in ray_cluster_specs(obj):
        problems.extend(_cluster_problems(f"{where} {at}", kind, cluster))
    return problems


def _rayjob_spec_problems(where: str, spec: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    if not spec.get("rayClusterSpec") and not spec.get("clusterSelector"):
        problems.append(f"{where}: one of rayClusterSpec or clusterSelector must be set")
    if spec.get("ttlSecondsAfterFinished", 0) > 0 and not spec.get("shutdownAfterJobFinishes"):
        problems.append(f"{where}: ttlSecondsAfterFinished needs shutdownAfterJobFinishes: true")
    if not str(spec.get("entrypoint", "")).strip():
        problems.append(f"{where}: entrypoint is empty")
    if spec.get("submissionMode", "K8sJobMode") not in _SUBMISSION_MODES:
        problems.append(
            f"{where}: submissionMode {spec.get('submissionMode')!r} is not one of "
            f"{_SUBMISSION_MODES}"
        )
    return problems


def _rayservice_spec_problems(where: str, spec: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    upgrade = (spec.get("upgradeStrategy") or {}).get("type")
    if upgrade is not None and upgrade not in _UPGRADE_TYPES:
        problems.append(f"{where}: upgradeStrategy.type {upgrade!r} is not one of {_UPGRADE_TYPES}")
    try:
        serve = yaml.safe_load(spec.get("serveConfigV2") or "")
    except yaml.YAMLError as exc:
        problems.append(f"{where}: serveConfigV2 is not YAML: {exc}")
    else:
        if not isinstance(serve, Mapping):
            problems.append(f"{where}: serveConfigV2 is not a YAML mapping")
    return problems


def _cluster_problems(where: str, kind: str, cluster: Mapping[str, Any]) -> list[str]:
    """The rules on one RayClusterSpec (`where` names the object and the spec's place in it)."""
    autoscaling = bool(cluster.get("enableInTreeAutoscaling"))
    problems: list[str] = []
    names: list[str] = []
    for group_name, group in ray_groups(cluster):
        names.append(group_name)
        problems.extend(
            _group_problems(f"{where} group {group_name}", group_name, group, autoscaling)
        )
    workers = names[1:]
    if len(workers) != len(set(workers)):
        problems.append(f"{where}: worker group names repeat")
    auth = cluster.get("authOptions") or {}
    if auth.get("mode", "token" if auth else "disabled") == "token" and auth:
        version = str(cluster.get("rayVersion", ""))
        if not version or _version_tuple(version) < (2, 52, 0):
            problems.append(f"{where}: token auth needs rayVersion >= 2.52.0")
        if kind != "RayCluster" and auth.get("enableK8sTokenAuth"):
            problems.append(f"{where}: K8s token auth is only for standalone RayClusters")
    if (cluster.get("autoscalerOptions") or {}).get("version") == "v2":
        for group_name, group in ray_groups(cluster):
            policy = ((group.get("template") or {}).get("spec") or {}).get("restartPolicy")
            if policy not in (None, "Never"):
                problems.append(
                    f"{where} group {group_name}: autoscaler v2 needs restartPolicy Never"
                )
    return problems


def _group_problems(
    label: str, group_name: str, group: Mapping[str, Any], autoscaling: bool
) -> list[str]:
    problems: list[str] = []
    containers = ((group.get("template") or {}).get("spec") or {}).get("containers") or []
    if not containers:
        problems.append(f"{label}: needs at least one container")
    params = group.get("rayStartParams") or {}
    if group.get("resources") and any(params.get(k) for k in _RAY_START_RESOURCES):
        problems.append(f"{label}: resources set both in rayStartParams and resources")
    if "labels" in params:
        problems.append(f"{label}: rayStartParams['labels'] is not supported")
    if group_name == "head":
        return problems
    low, high = group.get("minReplicas"), group.get("maxReplicas")
    replicas = group.get("replicas")
    if low is None or high is None:
        if not autoscaling:
            problems.append(f"{label}: min/maxReplicas are required without autoscaling")
    elif low > high:
        problems.append(f"{label}: minReplicas {low} > maxReplicas {high}")
    elif replicas is not None and not low <= replicas <= high:
        problems.append(f"{label}: replicas {replicas} outside [{low}, {high}]")
    return problems
