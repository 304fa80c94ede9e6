"""The upkeep in its actor: memos and the name index held between upkeeps, the same graph as in
the caller, the actor replaced when it runs other code and let go of a namespace after
`graph.upkeep_idle_s` or when another process opens the name index."""

from __future__ import annotations

import contextlib
import logging
import shutil
import time
import uuid
from pathlib import Path

import pytest
import ray
from tests_support import namespace_snapshot

from rayweave.cluster.errors import VectorStoreError
from rayweave.cluster.settings import Settings
from rayweave.ingest import upkeep_host
from rayweave.ingest.name_index import name_store
from rayweave.ingest.pipeline import run_ingest
from rayweave.ingest.upkeep_host import (
    UPKEEP_ACTOR,
    let_go_of,
    memo_files,
    run_upkeep,
    upkeep_status,
)

pytestmark = pytest.mark.integration

SAMPLE = Path(__file__).resolve().parents[2] / "ingest" / "sample_corpus"


def _with_graph(settings: Settings, **graph: object) -> Settings:
    return settings.model_copy(update={"graph": settings.graph.model_copy(update=graph)})


def _corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    for name in ("docs/concepts/leases.md", "docs/troubleshooting.md", "src/ferry/retry.py"):
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(SAMPLE / name, target)
    return root


def _describe(settings: Settings) -> dict[str, object]:
    actor = ray.get_actor(UPKEEP_ACTOR, namespace=settings.ray.namespace)
    info: dict[str, object] = ray.get(actor.describe.remote())
    return info


def test_the_actor_holds_the_memos_and_leaves_the_graph_the_caller_leaves(
    ray_stack: Settings, graph_connection: object, tmp_path: Path
) -> None:
    corpus = _corpus(tmp_path)
    leases = corpus / "docs/concepts/leases.md"
    text = leases.read_text()
    graphs = []
    for host in ("actor", "process"):
        settings = _with_graph(ray_stack, upkeep_host=host)
        collection = f"t{uuid.uuid4().hex[:10]}"
        leases.write_text(text)
        run_ingest(settings, [corpus], collection=collection)
        files = memo_files(settings, collection)
        assert files is not None
        assert files.snapshot is not None
        held = collection in _describe(settings)["held"]  # type: ignore[operator]
        assert held == (host == "actor")
        assert (collection in upkeep_status(settings)) == (host == "actor")  # `rayweave status`
        leases.write_text(text + "\n\n## Lease tuning\n\nSweeps follow heartbeats.\n")
        run_ingest(settings, [corpus], collection=collection)
        assert files.snapshot.exists()  # the actor writes it behind, for a process to start from
        graphs.append(namespace_snapshot(settings, collection))
    by_actor, by_process = graphs
    assert by_actor == by_process


def test_the_actor_keeps_the_name_index_open_until_another_process_needs_it(
    ray_stack: Settings, graph_connection: object, tmp_path: Path
) -> None:
    settings = _with_graph(ray_stack, upkeep_host="actor")
    collection = f"t{uuid.uuid4().hex[:10]}"
    run_ingest(settings, [_corpus(tmp_path)], collection=collection)
    names = name_store(settings, collection)
    try:  # embedded, it opens in one process at a time: the actor's, between upkeeps
        with pytest.raises(VectorStoreError, match="open in another process"):
            names.count()
    finally:
        names.close()
    # An upkeep in the caller asks the actor to let go first, as a rebuild's relink does.
    change = run_upkeep(_with_graph(ray_stack, upkeep_host="process"), collection, dense_dim=384)
    assert "synonymy" in change.seconds
    assert collection not in _describe(settings)["held"]  # type: ignore[operator]
    run_upkeep(settings, collection, dense_dim=384)  # held again, from the files
    assert collection in _describe(settings)["held"]  # type: ignore[operator]
    let_go_of(settings, collection)
    assert collection not in _describe(settings)["held"]  # type: ignore[operator]
    names = name_store(settings, collection)
    try:
        assert names.count() > 10  # the sample's entity names
    finally:
        names.close()


def test_an_actor_running_other_code_is_replaced(
    ray_stack: Settings,
    graph_connection: object,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = _with_graph(ray_stack, upkeep_host="actor")
    collection = f"t{uuid.uuid4().hex[:10]}"
    run_ingest(settings, [_corpus(tmp_path)], collection=collection)
    before = _describe(settings)["pid"]
    # A caller whose code differs from what a new actor runs (here: always) replaces the actor
    # once, then runs the upkeep itself: the graph is kept all the same.
    monkeypatch.setattr(upkeep_host, "code_fingerprint", lambda: "newer code")
    with caplog.at_level(logging.WARNING, logger="rayweave.ingest.upkeep_host"):
        change = run_upkeep(settings, collection, dense_dim=384)
    assert "compute" in change.seconds
    assert "running the upkeep here" in caplog.text
    monkeypatch.undo()
    run_upkeep(settings, collection, dense_dim=384)
    assert _describe(settings)["pid"] != before


def test_a_namespace_is_let_go_after_its_idle_time(
    ray_stack: Settings, graph_connection: object, tmp_path: Path
) -> None:
    # Long enough that a loaded machine's pause between the ingest and the check below is not
    # taken for idleness (0.5 s failed so, beside another ingest).
    settings = _with_graph(ray_stack, upkeep_host="actor", upkeep_idle_s=3.0)
    with contextlib.suppress(ValueError):  # an actor of its own: others' namespaces keep theirs
        ray.kill(ray.get_actor(UPKEEP_ACTOR, namespace=settings.ray.namespace))
    collection = f"t{uuid.uuid4().hex[:10]}"
    run_ingest(settings, [_corpus(tmp_path)], collection=collection)
    assert collection in _held_or_none(settings)
    # Let go of; then, holding no namespace, the actor exits to give its memory back.
    deadline = time.monotonic() + 30
    while _held_or_none(settings) or _alive(settings):
        assert time.monotonic() < deadline, "the actor held on to its memory"
        time.sleep(0.5)
    assert upkeep_status(settings).startswith("no upkeep actor")
    run_upkeep(settings, collection, dense_dim=384)  # a new actor, from the files
    assert collection in _describe(settings)["held"]  # type: ignore[operator]


def _alive(settings: Settings) -> bool:
    try:
        _describe(settings)
    except (ValueError, ray.exceptions.RayActorError):
        return False
    return True


def _held_or_none(settings: Settings) -> list[str]:
    """What the actor holds; nothing once it has exited."""
    try:
        return list(_describe(settings)["held"])  # type: ignore[call-overload]
    except (ValueError, ray.exceptions.RayActorError):
        return []
