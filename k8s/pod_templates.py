"""The pod templates of rendered objects (workloads and Ray groups), and the ConfigMap, Secret
and volume claim references below any part of an object."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kustomize_render import describe, ray_cluster_specs, ray_groups

SETTINGS_CONFIGMAP = "rayweave-settings"
GPU_RESOURCE = "nvidia.com/gpu"


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


def references(node: Any) -> Iterator[tuple[str, str, str | None]]:
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
            yield from references(value)
    elif isinstance(node, list):
        for item in node:
            yield from references(item)


def is_settings_configmap(configmap: str) -> bool:
    """The rayweave-settings ConfigMap, with or without kustomize's hash suffix."""
    return re.fullmatch(rf"{SETTINGS_CONFIGMAP}(-[a-z0-9]{{10}})?", configmap) is not None
