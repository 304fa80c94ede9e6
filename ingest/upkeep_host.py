"""Where the graph's upkeep after an ingest or delete runs (`graph.upkeep_host`).

'process' runs it in the caller, which reads the last upkeep's caches from their files and
writes its own (`graph/layer_memos.MemoFiles`). 'actor' runs it in one detached actor,
`rayweave-upkeep`, on the head node, where the graph home and its files live. The actor holds
each namespace's caches in memory between upkeeps (`HeldMemos`), with the pass's input and its
phase 1 per document: an upkeep neither unpickles the last one's caches nor waits while its own
are written, re-reads only the documents written since, and the dense encoder that synonymy
needs stays loaded (docs/experiments/2026-11-29-upkeep-actor.md). It runs one upkeep at a time,
takes no CPU from scheduling (the caller waits for it), lets go of a namespace after
`graph.upkeep_idle_s` without an upkeep of it and exits once it holds none, and is replaced when
the caller runs other code. It also keeps each namespace's name index open (an embedded one is
loaded whole on opening: 0.1 s of a 10k upkeep), and lets go of the namespace when another
process is about to open that index (a relink, an upkeep in the caller: `let_go_of`), since an
embedded index opens in one process at a time. When it cannot be reached or dies, the upkeep
runs in the caller: both leave the same graph, from the same files.
"""

from __future__ import annotations

import gc
import hashlib
import importlib
import logging
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ray
from ray.exceptions import ActorUnavailableError, GetTimeoutError, RayActorError

from rayweave.cluster.gc_pause import gc_paused
from rayweave.cluster.services.idle import IdleResource
from rayweave.cluster.services.runtime import HEAD_NODE, connect
from rayweave.cluster.settings import Settings
from rayweave.graph.layer_memos import HeldMemos, MemoFiles, MemoKeeper

if TYPE_CHECKING:
    from rayweave.cluster.vectors.store import VectorStore
    from rayweave.graph.indexing import LayerChange

log = logging.getLogger(__name__)

UPKEEP_ACTOR = "rayweave-upkeep"
_REAP_EVERY_S = 1.0
_START_TIMEOUT_S = 60.0
_STATUS_TIMEOUT_S = 5.0  # the actor answers between upkeeps' steps; status must not hang on it
_PACKAGES = ("cluster", "ingest", "graph", "models")  # what an upkeep runs


def run_upkeep(settings: Settings, collection: str, *, dense_dim: int) -> LayerChange:
    """The entity layer and synonymy brought up to the stored chunks, where `graph.upkeep_host`
    says; returns what the upkeep changed and its seconds per step."""
    if settings.graph.upkeep_host == "actor":
        connect(settings)
        try:
            actor = _acquire_actor(settings)
            change: LayerChange = ray.get(actor.update.remote(settings, collection, dense_dim))
            return change
        except (RayActorError, ActorUnavailableError, GetTimeoutError) as exc:
            log.warning("the upkeep actor is unavailable (%s); running the upkeep here", exc)
    else:  # an actor left from upkeeps under 'actor' may hold the name index open
        let_go_of(settings, collection)
    return upkeep(settings, collection, dense_dim=dense_dim, memos=memo_files(settings, collection))


def prepare_host(settings: Settings, *, warm: bool = False, settle: bool = False) -> None:
    """For measurements: load synonymy's encoder in the actor (`warm`, as an upkeep that meets
    a new name would), or wait for the files it writes behind the last upkeep (`settle`). Does
    nothing when upkeeps run in the caller."""
    if settings.graph.upkeep_host != "actor":
        return
    actor = _acquire_actor(settings)
    if warm:
        ray.get(actor.warm.remote(settings))
    if settle:
        ray.get(actor.settle.remote())


def upkeep_status(settings: Settings) -> str:
    """`rayweave status`'s line: where upkeeps run and, for the actor, what it holds (its memory
    grows with each namespace held: about 3 GB at 10k documents)."""
    if settings.graph.upkeep_host != "actor":
        return "in the ingesting process (graph.upkeep_host = 'process')"
    try:
        actor: Any = ray.get_actor(UPKEEP_ACTOR, namespace=settings.ray.namespace)
        info: dict[str, Any] = ray.get(actor.describe.remote(), timeout=_STATUS_TIMEOUT_S)
    except ValueError:
        return "no upkeep actor (one starts with the next ingest or delete)"
    except (RayActorError, ActorUnavailableError, GetTimeoutError) as exc:
        return f"upkeep actor not answering ({type(exc).__name__})"
    what = ", ".join(info["held"]) or "none"
    return (
        f"actor pid {info['pid']}, namespaces held: {what} "
        f"(each let go after {settings.graph.upkeep_idle_s:.0f}s idle)"
    )


def memo_files(settings: Settings, collection: str) -> MemoFiles | None:
    """The namespace's cache files (None when `graph.layer_snapshots` is off)."""
    if not settings.graph.layer_snapshots:
        return None
    return MemoFiles.under(settings.graph_home / "layers", collection)


def upkeep(
    settings: Settings,
    collection: str,
    *,
    dense_dim: int,
    memos: MemoKeeper | None,
    names: VectorStore | None = None,
) -> LayerChange:
    """The upkeep in this process (`graph/indexing.py`); returns what it changed. `names`: the
    name index's store, held open by the caller (else opened and closed here)."""
    from rayweave.graph.indexing import update_entity_layer
    from rayweave.graph.store import open_graph_store
    from rayweave.ingest.name_index import name_index

    graph = open_graph_store(settings, namespace=collection)
    index = name_index(settings, collection, dense_dim=dense_dim, store=names)
    try:
        update = update_entity_layer(
            graph, index, full=settings.graph.maintenance == "full", memos=memos
        )
    finally:
        graph.close()
        if index is not None and names is None:
            index.store.close()
    return update.change()


def let_go_of(settings: Settings, collection: str) -> None:
    """The upkeep actor, when there is one, lets go of `collection` (its caches written, its
    name index closed): another process is about to open that index (a relink, an upkeep in
    the caller). Without a Ray connection there is no actor of this cluster to ask."""
    if not ray.is_initialized():
        return
    try:
        actor: Any = ray.get_actor(UPKEEP_ACTOR, namespace=settings.ray.namespace)
        ray.get(actor.let_go.remote(collection), timeout=_START_TIMEOUT_S)
    except ValueError:  # none running: nothing held
        return
    except (RayActorError, ActorUnavailableError, GetTimeoutError) as exc:
        log.warning("the upkeep actor did not let go of %s (%s)", collection, exc)


class _Held:
    """What the actor holds for one namespace: its caches and its name index's store."""

    def __init__(self, files: MemoFiles) -> None:
        self.memos = HeldMemos(files)
        self.names: VectorStore | None = None

    def names_of(self, settings: Settings, collection: str) -> VectorStore:
        from rayweave.ingest.name_index import name_store

        if self.names is None:  # opens its engine on first use only
            self.names = name_store(settings, collection)
        return self.names

    def release(self) -> None:
        self.memos.release()
        if self.names is not None:
            self.names.close()
            self.names = None


def code_fingerprint() -> str:
    """Names the package's code by its content: an actor started from other code is replaced
    (a detached actor outlives an upgrade or an edit of a checkout), while jobs that ship the
    same code in their own copies (`ray job submit --working-dir`) share it. A few ms."""
    digest = hashlib.blake2b(digest_size=12)
    for package in _PACKAGES:
        root = Path(importlib.import_module(f"rayweave.{package}").__file__ or "").parent
        for path in sorted(root.rglob("*.py")):
            digest.update(f"{package}/{path.relative_to(root)}\n".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


@ray.remote(num_cpus=0)
class UpkeepActor:
    """Runs upkeeps one at a time, each namespace's caches held in memory (see module
    docstring)."""

    def __init__(self) -> None:
        self._code = code_fingerprint()
        # By namespace and files: one actor may serve several homes' namespaces of one name.
        self._held: dict[tuple[str, MemoFiles], IdleResource[_Held]] = {}
        self._lock = threading.Lock()
        self._calls = 0  # upkeeps under way
        self._stop = threading.Event()
        threading.Thread(target=self._reap, name="upkeep-reap", daemon=True).start()

    def describe(self) -> dict[str, Any]:
        with self._lock:
            held = sorted({name for (name, _), r in self._held.items() if r.is_open})
        return {"pid": os.getpid(), "code": self._code, "held": held}

    def update(self, settings: Settings, collection: str, dense_dim: int) -> LayerChange:
        files = memo_files(settings, collection)
        if files is None:
            return upkeep(settings, collection, dense_dim=dense_dim, memos=None)
        with self._lock:
            resource = self._held.get((collection, files))
            if resource is None:
                resource = self._held[collection, files] = IdleResource(
                    lambda: _Held(files), _Held.release, idle_s=0.0
                )
            resource.idle_s = settings.graph.upkeep_idle_s
            self._calls += 1
        try:
            with resource.use() as held, gc_paused():
                names = held.names_of(settings, collection)
                change = upkeep(
                    settings, collection, dense_dim=dense_dim, memos=held.memos, names=names
                )
                held.memos.write_behind(then=_settle_collector)  # while the caller finishes
                return change
        finally:
            with self._lock:
                self._calls -= 1

    def warm(self, settings: Settings) -> None:
        """Load the encoder that synonymy encodes new names with (once per actor life)."""
        from rayweave.models.factory import build_dense_encoder

        build_dense_encoder(settings.models).encode(["warm"], kind="query")

    def settle(self) -> None:
        """Wait until every held namespace's files are written."""
        with self._lock:
            resources = list(self._held.values())
        for resource in resources:
            if resource.is_open:
                with resource.use() as held:
                    held.memos.flush()

    def let_go(self, collection: str) -> None:
        """Let go of `collection` in every home now (see `let_go_of`)."""
        with self._lock:
            resources = [r for (name, _), r in self._held.items() if name == collection]
        for resource in resources:
            resource.close()

    def _reap(self) -> None:
        """Let go of namespaces idle for their `graph.upkeep_idle_s`; once none is held, exit:
        the interpreter keeps the memory a pass grew to (3 GB at 10k documents), and only a
        new process gives it back. The next upkeep starts a new actor from the files."""
        while not self._stop.wait(_REAP_EVERY_S):
            with self._lock:
                resources = list(self._held.values())
            for resource in resources:
                resource.close_if_idle()
            with self._lock:
                if resources and not self._calls and not any(r.is_open for r in resources):
                    log.info("upkeep actor: no namespace held, exiting")
                    os._exit(0)


def _settle_collector() -> None:
    """One full collection, then what survives is left out of later ones (`gc.freeze`).

    The held memos are millions of objects that live from upkeep to upkeep, and each run of the
    collector's oldest generation walks every live object: one such run, in the synonymy step
    after the pass's own pause, cost 0.6-0.7 s of a 10k upkeep. So the upkeep runs with the
    collector off, and after it, in the writer thread, one collection frees what it left (the
    objects frozen the time before included: memos it replaced) and freezes the rest."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


def _acquire_actor(settings: Settings) -> Any:
    """The named actor, created when absent and replaced when it runs other code."""
    code = code_fingerprint()
    for _ in range(2):
        handle = UpkeepActor.options(  # type: ignore[attr-defined]
            name=UPKEEP_ACTOR,
            namespace=settings.ray.namespace,
            lifetime="detached",
            get_if_exists=True,
            resources=HEAD_NODE,
        ).remote()
        info = ray.get(handle.describe.remote(), timeout=_START_TIMEOUT_S)
        if info["code"] == code:
            return handle
        log.info("the upkeep actor runs other code: replacing it")
        ray.kill(handle, no_restart=True)
        _wait_released(settings)
    raise GetTimeoutError("the upkeep actor was not replaced")


def _wait_released(settings: Settings) -> None:
    """Until the killed actor's name is free (a new one can take it)."""
    deadline = time.monotonic() + _START_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            ray.get_actor(UPKEEP_ACTOR, namespace=settings.ray.namespace)
        except ValueError:
            return
        time.sleep(0.2)
