"""The gpu-prod overlay's replica bounds follow from measured CPU per request (k8s/sizing.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

sizing = sys.modules["sizing"]  # loaded by path in conftest.py
OVERRIDES = Path(sizing.__file__).parent / "overlays" / "gpu-prod" / "serve-overrides.yaml"


def test_replicas_cover_the_cpu_at_the_target_with_headroom() -> None:
    # 200 QPS x 21.1 ms = 4.22 cores, x 1.3 = 5.49: six one-core processes.
    assert sizing.replicas_for(21.1, target_qps=200, headroom=1.3) == 6
    assert sizing.replicas_for(0.1, target_qps=200) == sizing.MIN_REPLICAS
    assert sizing.replicas_for(10.0, target_qps=100, headroom=1.0, minimum=0) == 1


@pytest.mark.parametrize(
    ("cpu_ms", "qps", "headroom"), [(-1.0, 100.0, 1.3), (1.0, 0.0, 1.3), (1.0, 100.0, 0.9)]
)
def test_impossible_inputs_are_refused(cpu_ms: float, qps: float, headroom: float) -> None:
    with pytest.raises(ValueError, match="need cpu_ms"):
        sizing.replicas_for(cpu_ms, target_qps=qps, headroom=headroom)


def test_the_gpu_prod_overlay_holds_the_derived_bounds() -> None:
    deployments: dict[str, Any] = yaml.safe_load(OVERRIDES.read_text(encoding="utf-8"))[
        "deployments"
    ]
    for name, replicas in sizing.derived_max_replicas().items():
        scaling = deployments[name]["autoscaling_config"]
        assert scaling["max_replicas"] == replicas, name
        assert scaling["min_replicas"] == sizing.MIN_REPLICAS, name
