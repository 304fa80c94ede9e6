"""CPU-ms per request per stage for `rayweave bench serve`: where a cell's CPU went.

Latency alone hides what a request costs: on a small box throughput is CPU-bound, so the figure
that carries over to sizing is CPU seconds per request, split by the process that spent it. Every
process's user+system time is sampled before and after a cell; the difference is grouped by stage
(a Serve deployment, the proxy, the vector store actor, the graph server, the bench client, the
anchor, and "other" for the rest of the machine) and divided by the cell's answered requests.

Stages come from process titles: Ray sets a worker's title to `ray::<actor class>[.<method>]`, and
a Serve replica's actor class is `ServeReplica:<app>:<deployment>`. On a shared machine another Ray
cluster's replicas carry the same titles, so when this stack's root processes are known (the local
raylet, whose children are the workers, and the embedded graph server) only they and their
descendants are named by title; everything else is "other".
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from rayweave.cluster.errors import MissingExtraError, RayweaveError
from rayweave.cluster.services.graph_server import SERVER_MAIN_CLASS, GraphServer
from rayweave.cluster.settings import Settings

try:
    import psutil
except ImportError as exc:  # the `bench` extra (accelerate, a core dependency, also brings it)
    raise MissingExtraError("psutil", extra="bench", purpose="`rayweave bench serve`") from exc

__all__ = [
    "ANCHOR",
    "CLIENT",
    "GRAPH",
    "OTHER",
    "PROXY",
    "VECTOR",
    "CpuSnapshot",
    "ProcCpu",
    "assign_stages",
    "cpu_ms_per_request",
    "descendants",
    "stack_roots",
    "stage_of",
    "stage_order",
    "take_snapshot",
]

CLIENT = "client"
PROXY = "proxy"
VECTOR = "vector store"
GRAPH = "graph server"
ANCHOR = "anchor"
OTHER = "other"

_VECTOR_ACTOR = "VectorStoreActor"
"""Class name of `rayweave.cluster.vectors.service.VectorStoreActor` (a Ray actor class, which
hides `__name__`)."""
_REPLICA = re.compile(r"\s*ray::ServeReplica:(?:\S*:)?([^\s.:]+)")
_ACTOR = re.compile(r"\s*ray::([A-Za-z_]\w*)")


@dataclass(frozen=True, slots=True)
class ProcCpu:
    """One process at one instant: its stage and CPU seconds (user + system) so far."""

    stage: str
    cpu_s: float


CpuSnapshot = Mapping[tuple[int, float], ProcCpu]
"""Processes keyed by (pid, create time), so a reused pid is never taken for the same process."""


def stage_of(cmdline: str) -> str:
    """The stage a process belongs to, from its command line or process title."""
    if replica := _REPLICA.match(cmdline):
        return replica.group(1)
    if actor := _ACTOR.match(cmdline):
        name = actor.group(1)
        if name.endswith("ProxyActor"):  # ProxyActor (HTTPProxyActor in older Ray)
            return PROXY
        if name == _VECTOR_ACTOR:
            return VECTOR
    if SERVER_MAIN_CLASS in cmdline:
        return GRAPH
    return OTHER


def descendants(parents: Mapping[int, int], roots: Iterable[int]) -> set[int]:
    """`roots` and every process below them, from a pid -> parent pid map."""
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    found: set[int] = set()
    pending = list(roots)
    while pending:
        pid = pending.pop()
        if pid not in found:
            found.add(pid)
            pending.extend(children.get(pid, ()))
    return found


def assign_stages(
    procs: Sequence[tuple[int, int, str]],
    roles: Mapping[int, str],
    roots: Sequence[int] | None = None,
) -> dict[int, str]:
    """Stage per pid of `(pid, parent pid, command line)`: `roles` first (the client, the anchor),
    then titles, but only under `roots` when given (other processes are "other")."""
    ours = descendants({pid: parent for pid, parent, _ in procs}, roots) if roots else None
    return {
        pid: roles.get(pid) or (stage_of(cmdline) if ours is None or pid in ours else OTHER)
        for pid, _, cmdline in procs
    }


def take_snapshot(
    roles: Mapping[int, str], roots: Sequence[int] | None = None
) -> dict[tuple[int, float], ProcCpu]:
    """CPU times of every process on the machine, staged by `assign_stages`. Processes that
    vanish or cannot be read are left out."""
    procs: list[tuple[int, int, str]] = []
    times: dict[int, tuple[float, float]] = {}
    for proc in psutil.process_iter(["pid", "ppid", "create_time", "cmdline", "cpu_times"]):
        info = proc.info
        cpu, created = info.get("cpu_times"), info.get("create_time")
        if cpu is None or created is None:
            continue
        pid = int(info["pid"])
        procs.append((pid, int(info.get("ppid") or 0), " ".join(info.get("cmdline") or ())))
        times[pid] = (float(created), cpu.user + cpu.system)
    stages = assign_stages(procs, roles, roots)
    return {(pid, times[pid][0]): ProcCpu(stages[pid], times[pid][1]) for pid in stages}


def stack_roots(settings: Settings) -> list[int] | None:
    """This stack's root processes on this machine: the raylet of the node this process joined
    (Ray workers are its children) and the embedded graph server. None, so every title counts,
    when Ray is not connected here or neither is found."""
    import ray

    if not ray.is_initialized():
        return None
    node_id = ray.get_runtime_context().get_node_id()
    sockets = {
        f"--raylet_socket_name={node['RayletSocketName']}"
        for node in ray.nodes()  # type: ignore[no-untyped-call]
        if node.get("NodeID") == node_id and node.get("RayletSocketName")
    }
    roots = [
        int(proc.info["pid"])
        for proc in psutil.process_iter(["pid", "cmdline"])
        if sockets.intersection(proc.info.get("cmdline") or ())
    ]
    try:
        graph_pid = GraphServer.from_settings(settings).status().pid
    except RayweaveError:  # an external graph server: nothing of ours runs here
        graph_pid = None
    if graph_pid is not None:
        roots.append(graph_pid)
    return roots or None


def cpu_ms_per_request(before: CpuSnapshot, after: CpuSnapshot, requests: int) -> dict[str, float]:
    """CPU milliseconds per answered request by stage, between two snapshots.

    A process that started during the cell counts whole (all its CPU is the cell's); one that ended
    is lost (its time can no longer be read); one whose title changed (an idle Ray worker that
    became a replica) counts under its later stage. NaN per stage when nothing was answered."""
    spent: dict[str, float] = {}
    for key, end in after.items():
        start = before.get(key)
        delta = max(end.cpu_s - (start.cpu_s if start is not None else 0.0), 0.0)
        spent[end.stage] = spent.get(end.stage, 0.0) + delta
    return {
        stage: seconds * 1000.0 / requests if requests > 0 else math.nan
        for stage, seconds in spent.items()
    }


def stage_order(stages: Iterable[str]) -> list[str]:
    """Columns in request order: client, proxy, the deployments (by name), the stores, anchor,
    other."""
    first = [CLIENT, PROXY]
    last = [VECTOR, GRAPH, ANCHOR, OTHER]
    seen = set(stages)
    middle = sorted(seen - set(first) - set(last))
    return [s for s in first if s in seen] + middle + [s for s in last if s in seen]
