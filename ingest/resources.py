"""How many ingest actors, and what each asks for, from the cluster's shape (pure).

The same command must use one laptop core or forty GPU nodes, so pool sizes default to what the
cluster holds: a fused actor runs every stage with a whole node's threads, so the pool gets one
per node (Ray Data's actor pools spread over the nodes by default) and shrinks when idle; a GPU
model pool gets one actor per `actor_gpus` of the cluster's GPUs. A number in `IngestSettings`
pins a pool instead. CPU requests are then scaled so that every pool plus one read task fits (on
a 2-core machine, whole-CPU actors starve the readers and the pipeline stalls).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rayweave.cluster.settings import Settings

# The least CPU a fused actor asks for: a deployed Serve app may hold most of a small node.
MIN_FUSED_CPUS = 0.1


@dataclass(frozen=True, slots=True)
class NodeShape:
    """One alive node's schedulable CPUs and GPUs."""

    cpus: float
    gpus: float = 0.0


@dataclass(frozen=True, slots=True)
class PoolSize:
    """An actor pool: fixed when `min == max`, else autoscaled by Ray Data between them,
    starting at `max` (work is waiting when a pipeline starts)."""

    min: int
    max: int

    def strategy_kwargs(self) -> dict[str, int]:
        if self.min == self.max:
            return {"size": self.max}
        return {"min_size": self.min, "max_size": self.max, "initial_size": self.max}


@dataclass(frozen=True, slots=True, kw_only=True)
class StageResources:
    """Pool sizes, CPU fraction per actor of the light (chunk, write) and model stages and per
    read task, GPUs per model actor, and the fused actors' CPUs and threads."""

    light: float
    model: float
    task: float
    gpus: float
    fused: float
    fused_threads: int
    fused_pool: PoolSize
    dense_pool: PoolSize
    sparse_pool: PoolSize
    entity_pool: PoolSize


def _pinned_or(value: int | None, auto: PoolSize) -> PoolSize:
    return auto if value is None else PoolSize(value, value)


def plan_resources(settings: Settings, nodes: Sequence[NodeShape]) -> StageResources:
    """Pools sized to `nodes`, and CPU requests scaled so that they and a read task fit.

    A fused actor asks for no more than a model actor (`actor_cpus`): CPU requests only reserve,
    and a larger one would wait forever beside a deployed Serve app. Its models run with the
    threads of a whole node instead (shared when several actors share a node)."""
    ing = settings.ingest
    live = [n for n in nodes if n.cpus > 0] or [NodeShape(cpus=1.0)]
    cluster_cpus = sum(n.cpus for n in live)
    cluster_gpus = sum(n.gpus for n in live)
    hosts = sum(1 for n in live if n.cpus >= MIN_FUSED_CPUS)
    fused_pool = _pinned_or(ing.fused_actors, PoolSize(1, max(1, hosts)))
    gpu_actors = (
        max(1, math.floor(cluster_gpus / ing.actor_gpus + 1e-9)) if ing.actor_gpus > 0 else 1
    )
    dense_pool = _pinned_or(ing.dense_actors, PoolSize(1, gpu_actors))
    sparse_pool = _pinned_or(ing.sparse_actors, PoolSize(1, gpu_actors))
    entity_pool = _pinned_or(ing.entity_actors, PoolSize(1, _entity_slots(live)))

    model_actors = (
        dense_pool.max + sparse_pool.max + entity_pool.max + (1 if settings.models.clip else 0)
    )
    light, model, task = ing.actor_cpus / 2, ing.actor_cpus, ing.actor_cpus / 2
    wanted = 2 * light + model_actors * model + task
    budget = 0.9 * cluster_cpus
    scale = min(1.0, budget / wanted) if wanted > 0 else 1.0
    per_node = math.ceil(fused_pool.max / len(live))
    return StageResources(
        light=light * scale,
        model=model * scale,
        task=task * scale,
        gpus=ing.actor_gpus,
        fused=min(ing.actor_cpus, max(MIN_FUSED_CPUS, (budget - task * scale) / fused_pool.max)),
        fused_threads=max(1, int(max(n.cpus for n in live) // per_node)),
        fused_pool=fused_pool,
        dense_pool=dense_pool,
        sparse_pool=sparse_pool,
        entity_pool=entity_pool,
    )


def _entity_slots(nodes: Sequence[NodeShape]) -> int:
    """One entity actor per two CPUs of each node, at least one per node: spaCy runs one thread
    per actor, and on a 16-CPU GPU node one actor bounded the staged pipeline (eight took the
    entity stage from 13.0 to 3.7 s on hotpotqa-dev, docs/experiments/2026-11-28-gpu-ingest.md)."""
    return sum(max(1, math.floor(n.cpus / 2)) for n in nodes)


def cluster_nodes() -> list[NodeShape]:
    """The connected Ray cluster's alive nodes."""
    import ray

    out = []
    nodes: list[dict[str, Any]] = ray.nodes()  # type: ignore[no-untyped-call]
    for node in nodes:
        if node.get("Alive"):
            res: dict[str, Any] = node.get("Resources", {})
            out.append(NodeShape(cpus=float(res.get("CPU", 0.0)), gpus=float(res.get("GPU", 0.0))))
    return out


__all__ = ["NodeShape", "PoolSize", "StageResources", "cluster_nodes", "plan_resources"]
