"""Replica bounds of the gpu-prod overlay, derived from measured CPU per request (docs/scaling.md).

A deployment whose work is CPU in one Python process needs
`ceil(target QPS x CPU-ms per request / 1000 x headroom)` replicas at the peak: a replica is one
process, so it does at most one core's worth of Python whatever `num_cpus` reserves. Every
deployment on the request path keeps at least two replicas, so that losing a node leaves one (the
rule docs/scaling.md applies to Qdrant replication). `tests/k8s/test_manifests.py` checks that
`k8s/overlays/gpu-prod/serve-overrides.yaml` holds what `derived_max_replicas` gives, so a new
measurement or target changes the overlay through this file, not by hand.

Not derived, because no GPU was lent to this project: VectorRetriever (its BGE-M3 fp16 encode runs
on the GPU; replicas = target QPS / encodes per second per replica x headroom, from
`rayweave bench models` on a GPU), WebRetriever (waits on the network, not the CPU) and Refiner
(LLM-bound; off by default).

Run `python k8s/sizing.py` to print the table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

# The design point: peak hybrid+graph requests per second the overlay is sized for.
TARGET_QPS = 200.0
# Spare capacity at the peak: autoscaling reacts in tens of seconds, and a node loss removes a
# share.
HEADROOM = 1.3
MIN_REPLICAS = 2


@dataclass(frozen=True, slots=True)
class StageCost:
    """CPU-ms one hybrid+graph request costs a deployment, and where the figure comes from."""

    cpu_ms: float
    source: str


# `RAYWEAVE_SERVE__LAYOUT=composed rayweave bench serve --profile hybrid+graph --concurrency 8
# --requests 150`, sample corpus, 2-core machine, 2026-11-25 (load average 1.9 at the start).
_BENCH = "bench serve, composed, hybrid+graph at 8 clients"
# Two personalised-PageRank walks per request at 1M edges (`rayweave bench graph`, synthetic
# 100k passages / 1M edges: 5.6 ms p50 each); the sample corpus's graph is too small to show them.
_WALKS_AT_1M_EDGES_MS = 2 * 5.6

MEASURED: Mapping[str, StageCost] = {
    "Ingress": StageCost(21.1, _BENCH),
    "QueryClassifier": StageCost(2.6, _BENCH),
    "GraphRetriever": StageCost(
        11.1 + _WALKS_AT_1M_EDGES_MS, f"{_BENCH}, plus two walks at 1M edges (bench graph)"
    ),
    "FusionRanker": StageCost(5.5, _BENCH),
}


def replicas_for(
    cpu_ms: float, *, target_qps: float, headroom: float = HEADROOM, minimum: int = MIN_REPLICAS
) -> int:
    """Replicas that keep one deployment's CPU below one core each at `target_qps`."""
    if cpu_ms < 0 or target_qps <= 0 or headroom < 1:
        raise ValueError(
            f"need cpu_ms >= 0, target_qps > 0 and headroom >= 1, got {cpu_ms}, {target_qps}, "
            f"{headroom}"
        )
    return max(minimum, math.ceil(target_qps * cpu_ms / 1000.0 * headroom))


def derived_max_replicas(
    costs: Mapping[str, StageCost] = MEASURED, *, target_qps: float = TARGET_QPS
) -> dict[str, int]:
    return {name: replicas_for(c.cpu_ms, target_qps=target_qps) for name, c in costs.items()}


def main() -> None:
    print(f"target {TARGET_QPS:g} hybrid+graph QPS, headroom {HEADROOM:g}, minimum {MIN_REPLICAS}")
    for name, replicas in derived_max_replicas().items():
        cost = MEASURED[name]
        print(
            f"{name:16} {cost.cpu_ms:6.1f} CPU-ms/request -> max_replicas {replicas:2}  "
            f"({cost.source})"
        )


if __name__ == "__main__":
    main()
