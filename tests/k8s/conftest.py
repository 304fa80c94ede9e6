"""Fixtures for the Kubernetes manifests: the k8s/ helper modules, the KubeRay CRDs, renders.

k8s/ is not a package; its modules are loaded by path under their own names, each after the
ones it imports by name (manifests.py imports the others and re-exports what the tests use).
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

K8S_DIR = Path(__file__).resolve().parents[2] / "k8s"


def _load(name: str) -> ModuleType:
    if name in sys.modules and getattr(sys.modules[name], "__file__", None) == str(
        K8S_DIR / f"{name}.py"
    ):
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, K8S_DIR / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


crd_schema = _load("crd_schema")
for _module in (
    "kustomize_render",
    "serve_config_copies",
    "kuberay_admission",
    "pod_templates",
    "consistency_checks",
    "monitoring_checks",
):
    _load(_module)
manifests = _load("manifests")
sizing = _load("sizing")


@pytest.fixture(scope="session")
def crd_dir() -> Path:
    """The vendored KubeRay CRDs (k8s/crds/): part of the checkout, so never skipped."""
    found = manifests.find_crd_dir()
    assert found is not None, f"KubeRay CRDs missing from {manifests.CRD_DIR}"
    return found


@pytest.fixture(scope="session")
def crds(crd_dir: Path) -> Any:
    return manifests.load_crd_validator(crd_dir)


@pytest.fixture(scope="session")
def kubectl() -> str:
    """`kubectl`, which renders the kustomizations; the tests that render skip without it."""
    found = shutil.which("kubectl")
    if found is None:
        pytest.skip("kubectl is not on PATH (it renders the kustomizations)")
    return found


@pytest.fixture(scope="session")
def rendered(kubectl: str) -> dict[str, list[dict[str, Any]]]:
    """Every render target, rendered once per session with `kubectl kustomize`."""
    return {target: manifests.render(target) for target in manifests.RENDER_TARGETS}
