"""The anchor's life cycle for `rayweave bench serve --anchor`: export the served chunks, start
`rayweave.bench.anchor_server` on them as a subprocess, wait until it answers, always stop it.

A subprocess rather than a thread in the bench: the anchor must not share the client's GIL or
CPU accounting, and it stands for a separate server a user would run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from rayweave.cluster.errors import InputError, ServiceError
from rayweave.cluster.services.graph_process import log_tail
from rayweave.cluster.services.runtime import free_port
from rayweave.cluster.settings import Settings
from rayweave.models.resolve import resolve_model_path

__all__ = ["Anchor", "export_chunks", "run_anchor"]

_SCROLL_PAGE = 512


@dataclass(frozen=True, slots=True, kw_only=True)
class Anchor:
    """A running anchor server: its base URL, process id (for CPU accounting) and log file."""

    url: str
    pid: int
    log_path: Path


def export_chunks(settings: Settings) -> tuple[list[str], list[str]]:
    """Ids and texts of every visible point of `settings.qdrant.collection`: what the app serves.

    Needs Ray connected (the store is the shared actor the app's retrievers use)."""
    from rayweave.cluster.vectors.service import vector_store_for

    store = vector_store_for(settings, shared=True)
    ids: list[str] = []
    texts: list[str] = []
    offset: str | None = None
    while True:
        points, offset = store.scroll(filter={"visible": True}, limit=_SCROLL_PAGE, offset=offset)
        for point in points:
            ids.append(str(point.id))
            texts.append(str(point.payload.get("text", "")))
        if offset is None:
            break
    if not ids:
        raise InputError(
            f"collection {settings.qdrant.collection!r} holds no visible chunks for the anchor: "
            "ingest it first"
        )
    return ids, texts


def _wait_ready(child: subprocess.Popen[bytes], url: str, log: Path, timeout_s: float) -> None:
    """Poll /healthz until it answers; fail fast, naming the log, when the process dies."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        code = child.poll()
        if code is not None:
            raise ServiceError(
                f"the anchor server exited with code {code} before answering; log {log}:\n"
                f"{log_tail(log, 15)}"
            )
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    raise ServiceError(
        f"the anchor server did not answer on {url} within {timeout_s:.0f} s; log {log}:\n"
        f"{log_tail(log, 15)}"
    )


def _stop(child: subprocess.Popen[bytes], grace_s: float = 10.0) -> None:
    if child.poll() is None:
        child.terminate()
        try:
            child.wait(grace_s)
        except subprocess.TimeoutExpired:
            child.kill()
    child.wait()


@contextmanager
def run_anchor(
    ids: Sequence[str],
    texts: Sequence[str],
    model: str,
    *,
    workdir: Path,
    start_timeout_s: float = 600.0,
) -> Iterator[Anchor]:
    """Serve `texts` (answering with `ids`) with dense model reference `model` until the block
    ends; the start-up timeout covers encoding every chunk on CPU."""
    if len(ids) != len(texts):
        raise InputError(f"anchor needs one id per text, got {len(ids)} ids and {len(texts)} texts")
    chunks = workdir / "anchor_chunks.json"
    chunks.write_text(json.dumps({"ids": list(ids), "texts": list(texts)}), encoding="utf-8")
    log = workdir / "anchor.log"
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "rayweave.bench.anchor_server",
        str(chunks),
        resolve_model_path(model),
        str(port),
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    with open(log, "wb") as out:
        try:
            child = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env
            )
        except OSError as exc:
            raise ServiceError(f"cannot start the anchor server ({command[0]}): {exc}") from exc
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(child, url, log, start_timeout_s)
        yield Anchor(url=url, pid=child.pid, log_path=log)
    finally:
        _stop(child)
