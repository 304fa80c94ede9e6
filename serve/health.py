"""Dependency health: what `/healthz` reports, and what each deployment's `check_health` raises.

A deployment that holds a client (the vector store, the Bolt graph store, an LLM endpoint) lists
it as a `Dependency`: a ping, one cheap round trip, run in a thread under a short timeout
(`serve.health_probe_timeout_s`). Ray Serve calls a replica's `check_health` every
`serve.health_check_period_s`; when it raises (a required dependency down) three times running,
Serve replaces the replica, whose constructor reconnects (and, for the embedded graph server,
starts it again).

States:
- `ok`: the ping answered.
- `down`: it failed or did not answer in time. A required dependency down makes `/healthz`
  answer 503 and `check_health` raise.
- `missing`: the store answered, but the collection does not exist (nothing was ingested).
  Replacing the replica would not create it, so this is neither 503 nor a failed health check:
  `/healthz` says `no-collection` with the fix, and a search answers 404 naming it.

Liveness (`/livez`) checks none of this: it answers as long as the replica's event loop does.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rayweave.cluster.errors import NotFoundError, ServiceError
from rayweave.serve.search import INGEST_FIX, error_text

State = Literal["ok", "down", "missing"]
PING_ID = "rayweave-health-ping"
"""A chunk id no collection holds: reading it is one round trip that returns nothing."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Dependency:
    name: str
    ping: Callable[[], object]
    required: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class DependencyState:
    name: str
    state: State
    required: bool
    detail: str = ""
    ms: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "state": self.state,
            "required": self.required,
            "detail": self.detail,
            "ms": self.ms,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, required: bool | None = None) -> DependencyState:
        return cls(
            name=str(data["name"]),
            state=data["state"],
            required=bool(data["required"]) if required is None else required,
            detail=str(data.get("detail", "")),
            ms=float(data.get("ms", 0.0)),
        )


async def probe(dependency: Dependency, timeout_s: float) -> DependencyState:
    """One ping of `dependency`, at most `timeout_s` (a hung ping's thread is left behind)."""
    started = time.perf_counter()
    state: State = "ok"
    detail = ""
    try:
        await asyncio.wait_for(asyncio.to_thread(dependency.ping), timeout=timeout_s)
    except NotFoundError as exc:
        state, detail = "missing", f"{error_text(exc)}; {INGEST_FIX}"
    except TimeoutError:
        state, detail = "down", f"no answer within {timeout_s:g}s"
    except Exception as exc:  # noqa: BLE001 - whatever the client raised, the dependency is down
        state, detail = "down", f"{type(exc).__name__}: {error_text(exc)}"
    return DependencyState(
        name=dependency.name,
        state=state,
        required=dependency.required,
        detail=detail,
        ms=round((time.perf_counter() - started) * 1000, 1),
    )


async def probe_all(dependencies: Sequence[Dependency], timeout_s: float) -> list[DependencyState]:
    return list(await asyncio.gather(*(probe(d, timeout_s) for d in dependencies)))


def readiness(states: Iterable[DependencyState]) -> tuple[int, dict[str, Any]]:
    """The `/healthz` status code and body: 503 when a required dependency is down."""
    states = list(states)
    down = [s.name for s in states if s.required and s.state == "down"]
    missing = [s.name for s in states if s.state == "missing"]
    status = "down" if down else "no-collection" if missing else "ok"
    body = {"status": status, "dependencies": {s.name: s.as_dict() for s in states}}
    if down:
        body["down"] = down
    return (503 if down else 200), body


def raise_if_down(states: Iterable[DependencyState], *, where: str) -> None:
    """What `check_health` does with its probes: a required dependency down raises."""
    down = [s for s in states if s.required and s.state == "down"]
    if down:
        raise ServiceError(
            f"{where} is unhealthy: " + "; ".join(f"{s.name} is down ({s.detail})" for s in down)
        )


class Health:
    """The dependencies of one replica, probed for `check_health` and `/healthz`."""

    def __init__(self, dependencies: Sequence[Dependency], *, timeout_s: float, where: str) -> None:
        self.dependencies = tuple(dependencies)
        self.timeout_s = timeout_s
        self.where = where

    async def states(self) -> list[DependencyState]:
        return await probe_all(self.dependencies, self.timeout_s)

    async def check(self) -> None:
        raise_if_down(await self.states(), where=self.where)

    async def readiness(self) -> tuple[int, dict[str, Any]]:
        return readiness(await self.states())


# -- the dependencies rayweave's components hold -------------------------------------------------


def vector_dependency(store: Any) -> Dependency:
    """The vector store (`VectorStore`): a read of an id no collection holds, one round trip to
    the store's actor or server; a missing collection raises NotFoundError (state `missing`)."""
    return Dependency(name="vector", ping=lambda: store.retrieve([PING_ID]))


def graph_dependency(store: Any) -> Dependency:
    """The Bolt graph store (`GraphStore`): its change stamp, one auto-commit read."""
    return Dependency(name="graph", ping=store.stamp)


def refiner_dependencies(refiner: object, *, required: bool) -> list[Dependency]:
    """The LLM endpoint of an 'llm' refiner over an OpenAI-compatible endpoint (a local model has
    no endpoint to ping)."""
    chat = getattr(refiner, "chat", None)
    ping = getattr(chat, "ping", None)
    if ping is None:
        return []
    return [Dependency(name="llm", ping=ping, required=required)]
