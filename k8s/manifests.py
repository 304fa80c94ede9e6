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

The checks live in modules by subject (`kustomize_render`, `serve_config_copies`,
`kuberay_admission`, `pod_templates`, `consistency_checks`, `monitoring_checks`); this file runs
them all and re-exports the names callers use. This folder is not a package: run the file, or
load its modules by path (the tests do).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import crd_schema
import yaml
from consistency_checks import CREDENTIAL_KEYS, CREDENTIALS_SECRET, consistency_problems
from kuberay_admission import kuberay_problems
from kustomize_render import (
    CRD_DIR,
    DOCKERFILE,
    MONITORING_TARGET,
    RAY_KINDS,
    RENDER_TARGETS,
    REPO_ROOT,
    SERVE_CONFIG,
    core_errors,
    describe,
    dockerfile_ray_version,
    find_crd_dir,
    load_crd_validator,
    ray_cluster_specs,
    render,
)
from monitoring_checks import monitoring_problems
from pod_templates import GPU_RESOURCE
from serve_config_copies import (
    SERVE_CONFIG_COPIES,
    SERVE_OVERRIDE_KEYS,
    apply_serve_overrides,
    expected_serve_config,
    serve_config_problems,
    stale_serve_configs,
    sync,
)

# The names callers use, from the modules that define them.
__all__ = [
    "CRD_DIR",
    "CREDENTIALS_SECRET",
    "CREDENTIAL_KEYS",
    "DOCKERFILE",
    "GPU_RESOURCE",
    "MONITORING_TARGET",
    "RAY_KINDS",
    "RENDER_TARGETS",
    "REPO_ROOT",
    "SERVE_CONFIG",
    "SERVE_CONFIG_COPIES",
    "SERVE_OVERRIDE_KEYS",
    "apply_serve_overrides",
    "check",
    "check_objects",
    "consistency_problems",
    "core_errors",
    "describe",
    "dockerfile_ray_version",
    "expected_serve_config",
    "find_crd_dir",
    "kuberay_problems",
    "load_crd_validator",
    "main",
    "monitoring_problems",
    "ray_cluster_specs",
    "render",
    "serve_config_problems",
    "stale_serve_configs",
    "sync",
]


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
        return [f"KubeRay CRDs not found (expected *.yaml in {CRD_DIR})"]
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
                        f"{target}: {describe(obj)} {at}: rayVersion {cluster.get('rayVersion')} "
                        f"!= the image's Ray {ray_version}"
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
