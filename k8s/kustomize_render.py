"""Where the Kubernetes manifests live, rendering them with `kubectl kustomize`, and what every
check reads of a rendered object: strict core-schema validation, names, Ray cluster specs."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator, Mapping
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
# Oldest Kubernetes the manifests are validated against (PDB unhealthyPodEvictionPolicy is GA
# in 1.31).
KUBERNETES_VERSION = "1.31"
RAY_KINDS = frozenset({"RayCluster", "RayService", "RayJob"})


CRD_DIR = K8S_DIR / "crds"
"""The KubeRay CRDs, vendored (crds/README.md: source commit and licence)."""


def find_crd_dir(folder: Path = CRD_DIR) -> Path | None:
    """`folder` (the vendored CRDs by default) when it holds CRD files, else None."""
    if folder.is_dir() and any(folder.glob("*.yaml")):
        return folder
    return None


def dockerfile_ray_version(dockerfile: Path = DOCKERFILE) -> str:
    """The Ray version of the `rayproject/ray` base image named by the Dockerfile's RAY_IMAGE."""
    text = dockerfile.read_text(encoding="utf-8")
    match = re.search(r"^ARG RAY_IMAGE=rayproject/ray:(\d+\.\d+\.\d+)-", text, re.MULTILINE)
    if match is None:
        raise ValueError(f"{dockerfile}: no `ARG RAY_IMAGE=rayproject/ray:<version>-...` line")
    return match.group(1)


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
