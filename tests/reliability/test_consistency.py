"""Both stores stay consistent: re-ingest changes nothing, modified and deleted documents leave
nothing stale behind, and an ingest whose driver is SIGKILLed mid-run, then re-run, ends in the
same state as one clean run. The corpus is a slice of the hotpotqa dev set (the committed
fixture, tests/fixtures/), one file per record.

States are compared as sets read back from both stores (vector points with their visibility
and text; graph nodes and edges by key), not as counters the pipeline reports about itself.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests_support import BEIR_FIXTURES, alive_actors, with_collection

from rayweave.cluster.settings import Settings
from rayweave.graph.schema import ENTITY_ANCHORS, NodeLabel

from .figures import record

pytestmark = [pytest.mark.reliability, pytest.mark.integration, pytest.mark.timeout(2400)]

DOCS = 60
CHANGED = DOCS // 10  # 10% modified, another 10% deleted


Edge = tuple[str, str, str]  # (type, start key, end key), namespace stripped


@dataclass(frozen=True)
class StoreState:
    points: dict[str, tuple[str, bool, str]]  # point id -> (doc_id, visible, text)
    edges: Counter[Edge]
    graph_docs: frozenset[str]
    graph_chunks: frozenset[str]
    entities: frozenset[str]  # Entity and Alias keys, namespace stripped
    orphans: dict[str, int]  # nodes that nothing current justifies, per kind

    @property
    def doc_ids(self) -> set[str]:
        return {doc for doc, _, _ in self.points.values()}


ORPHANS = {
    # The store's own rule: an entity lives while a non-gazetteer edge introduces it.
    "entities": "MATCH (e:Entity {{ns: $ns}}) WHERE NOT EXISTS {{ MATCH (e)<-[r:{anchors}]-() "
    "WHERE r.source <> 'gazetteer' }} RETURN count(e) AS n",
    "aliases": "MATCH (a:Alias {{ns: $ns}}) WHERE NOT EXISTS {{ MATCH (a)-[:ALIAS_OF]->() }} "
    "RETURN count(a) AS n",
    "topics": "MATCH (t:Topic {{ns: $ns}}) WHERE NOT EXISTS {{ MATCH (t)<-[:BELONGS_TO]-() }} "
    "RETURN count(t) AS n",
}


def read_state(settings: Settings, collection: str) -> StoreState:
    from rayweave.cluster.vectors.service import vector_store_for
    from rayweave.graph.store import open_graph_store

    store = vector_store_for(settings, collection)
    points: dict[str, tuple[str, bool, str]] = {}
    offset: str | None = None
    while True:
        page, offset = store.scroll(limit=1024, offset=offset)
        for p in page:
            points[p.id] = (str(p.payload["doc_id"]), bool(p.payload["visible"]), p.payload["text"])
        if offset is None:
            break

    graph = open_graph_store(settings, namespace=collection)
    prefix = f"{collection}:"
    anchors = "|".join(a.value for a in ENTITY_ANCHORS)
    try:
        edges = Counter(
            (r["t"], str(r["a"]).removeprefix(prefix), str(r["b"]).removeprefix(prefix))
            for r in graph.read(
                "MATCH (a {ns: $ns})-[r]->(b) RETURN type(r) AS t, a.key AS a, b.key AS b"
            )
        )
        docs = graph.read("MATCH (d:Document {ns: $ns}) RETURN d.id AS id, d.chunk_id AS chunk")
        chunks = {
            str(r["id"])
            for label in (NodeLabel.SECTION, NodeLabel.PROPOSITION)
            for r in graph.read(f"MATCH (c:{label.value} {{ns: $ns}}) RETURN c.id AS id")
        }
        entities = [
            r
            for label in (NodeLabel.ENTITY, NodeLabel.ALIAS)
            for r in graph.read(f"MATCH (e:{label.value} {{ns: $ns}}) RETURN e.key AS k")
        ]
        orphans = {
            kind: int(graph.read(query.format(anchors=anchors))[0]["n"])
            for kind, query in ORPHANS.items()
        }
    finally:
        graph.close()
    return StoreState(
        points=points,
        edges=edges,
        graph_docs=frozenset(str(r["id"]) for r in docs),
        graph_chunks=frozenset(chunks | {str(r["chunk"]) for r in docs if r["chunk"]}),
        entities=frozenset(str(r["k"]).removeprefix(prefix) for r in entities),
        orphans=orphans,
    )


def assert_consistent(state: StoreState, expected_docs: set[str]) -> None:
    """Nothing stale, invisible or orphaned; both stores describe the same documents and chunks."""
    assert all(visible for _, visible, _ in state.points.values()), "invisible points remain"
    assert state.doc_ids == expected_docs, "vector store documents"
    assert state.graph_docs == expected_docs, "graph documents"
    assert set(state.points) == state.graph_chunks, "vector points and graph chunks differ"
    assert state.orphans == dict.fromkeys(ORPHANS, 0)


def assert_same(a: StoreState, b: StoreState) -> tuple[int, int]:
    """Equal points, documents, chunks and every edge outside the entity layer; returns how many
    entities and entity edges (MENTIONS, ALIAS_OF, RELATED_TO, ...) only one side holds.

    The entity layer remembers how it was learned: which surface form names an entity (and so
    its key) follows the order its mentions arrived in, and an alias learned from a document's
    earlier version stays with an entity that other documents still introduce. That drift is
    reported, not asserted; nothing in it is an orphan (`assert_consistent` checks).
    """
    assert a.points == b.points
    assert (a.graph_docs, a.graph_chunks) == (b.graph_docs, b.graph_chunks)
    layer = a.entities | b.entities

    def split(edges: Counter[Edge]) -> tuple[set[Edge], set[Edge]]:
        inner = {e for e in edges if e[1] in layer or e[2] in layer}
        return set(edges) - inner, inner

    outer_a, inner_a = split(a.edges)
    outer_b, inner_b = split(b.edges)
    assert (sorted(outer_a - outer_b), sorted(outer_b - outer_a)) == ([], []), "graph edges differ"
    return len(a.entities ^ b.entities), len(inner_a ^ inner_b)


def write_dev_corpus(folder: Path) -> tuple[list[Path], list[str]]:
    """DOCS hotpotqa records as Markdown files, plus CHANGED spare texts for modifications."""
    corpus = BEIR_FIXTURES / "hotpotqa-dev" / "corpus.jsonl"
    assert corpus.is_file(), f"BEIR fixture {corpus} is missing (tests/fixtures/README.md)"
    folder.mkdir(parents=True)
    files: list[Path] = []
    spare: list[str] = []
    with corpus.open() as fh:
        for line in fh:
            rec = json.loads(line)
            if len(rec["text"].split()) < 25:
                continue
            if len(files) < DOCS:
                path = folder / f"{len(files):03d}.md"
                path.write_text(f"# {rec['title']}\n\n{rec['text']}\n")
                files.append(path)
            elif len(spare) < CHANGED:
                spare.append(f"# {rec['title']}\n\n{rec['text']}\n")
            else:
                break
    return files, spare


def doc_ids(files: list[Path]) -> set[str]:
    from rayweave.ingest.readers import document_id_for

    return {document_id_for(p) for p in files}


def stack_environment(settings: Settings) -> dict[str, str]:
    """The session stack as RAYWEAVE_* variables, so that a CLI process joins it."""
    return {
        **os.environ,
        "RAYWEAVE_HOME": str(settings.home),
        "RAYWEAVE_RAY__PORT": str(settings.ray.port),
        "RAYWEAVE_RAY__DASHBOARD_PORT": str(settings.ray.dashboard_port),
        "RAYWEAVE_RAY__NUM_CPUS": str(settings.ray.num_cpus),
        "RAYWEAVE_RAY__OBJECT_STORE_MEMORY_MB": str(settings.ray.object_store_memory_mb),
        "RAYWEAVE_GRAPH__EMBEDDED_PORT": str(settings.graph.embedded_port),
        "RAYWEAVE_GRAPH__EMBEDDED_HTTP_PORT": str(settings.graph.embedded_http_port),
        "RAYWEAVE_GRAPH__EMBEDDED_HEAP_MB": str(settings.graph.embedded_heap_mb),
        # Small batches: the kill must land while documents are still being written.
        "RAYWEAVE_INGEST__BATCH_SIZE": "4",
        "NO_COLOR": "1",
    }


def visible_documents(settings: Settings, collection: str) -> int:
    from rayweave.cluster.vectors.service import vector_store_for
    from rayweave.ingest.writers import visible_document_hashes

    store = vector_store_for(settings, collection)
    return len(visible_document_hashes(store))


def wait_for_pipeline_actors_to_exit(timeout_s: float = 120.0) -> None:
    """Ray reaps a dead driver's actors asynchronously; a re-run must not race its writer."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        alive = alive_actors()
        if not any("MapWorker" in a.class_name for a in alive):
            return
        time.sleep(1.0)
    raise AssertionError("the killed driver's Ray Data actors are still alive")


def test_reingest_modify_delete_and_a_killed_driver_leave_consistent_stores(
    ray_stack: Settings, graph_connection: object, tmp_path: Path
) -> None:
    from rayweave.ingest.pipeline import delete_documents, run_ingest

    files, spare = write_dev_corpus(tmp_path / "dev")
    settings = with_collection(ray_stack, "consistency")

    # Ingest twice: the second run skips everything and changes nothing in either store.
    first = run_ingest(settings, [tmp_path / "dev"], collection="consistency")
    assert first.documents_inserted == DOCS, first.errors
    once = read_state(settings, "consistency")
    assert_consistent(once, doc_ids(files))
    second = run_ingest(settings, [tmp_path / "dev"], collection="consistency")
    assert second.documents_skipped == DOCS
    twice = read_state(settings, "consistency")
    assert assert_same(twice, once) == (0, 0)
    assert twice.edges == once.edges

    # Modify 10%, delete another 10%.
    modified, deleted = files[:CHANGED], files[CHANGED : 2 * CHANGED]
    old_texts = {p: p.read_text() for p in modified}
    for path, text in zip(modified, spare, strict=True):
        path.write_text(text)
    assert delete_documents(settings, [str(p) for p in deleted], collection="consistency") == len(
        deleted
    )
    for path in deleted:
        path.unlink()
    third = run_ingest(settings, [tmp_path / "dev"], collection="consistency")
    assert (third.documents_updated, third.documents_skipped) == (CHANGED, DOCS - 2 * CHANGED)
    final_files = [p for p in files if p not in deleted]
    changed = read_state(settings, "consistency")
    assert_consistent(changed, doc_ids(final_files))
    old_sentences = {
        line for text in old_texts.values() for line in text.splitlines()[2:] if line.strip()
    }
    stale = [t for _, _, t in changed.points.values() if any(s in t for s in old_sentences)]
    assert stale == [], "text of a modified document's old version is still stored"

    # One clean run over the final corpus is the reference for both other histories.
    clean_settings = with_collection(ray_stack, "consistency-clean")
    run_ingest(clean_settings, [tmp_path / "dev"], collection="consistency-clean")
    clean = read_state(clean_settings, "consistency-clean")
    assert_consistent(clean, doc_ids(final_files))
    drift_changed = assert_same(changed, clean)

    # SIGKILL the ingest driver once some documents are visible, then run it again.
    crash_settings = with_collection(ray_stack, "consistency-crash")
    cli = Path(sys.executable).with_name("rayweave")
    driver = subprocess.Popen(
        [str(cli), "ingest", str(tmp_path / "dev"), "--collection", "consistency-crash"],
        env=stack_environment(ray_stack),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 900
        while (done := visible_documents(crash_settings, "consistency-crash")) == 0:
            assert driver.poll() is None, f"the driver exited first ({driver.returncode})"
            assert time.monotonic() < deadline, "no document became visible"
            time.sleep(0.2)
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait()
    assert done < len(final_files), "the driver finished before it could be killed"
    wait_for_pipeline_actors_to_exit()
    rerun = run_ingest(crash_settings, [tmp_path / "dev"], collection="consistency-crash")
    assert rerun.documents_skipped >= done
    crashed = read_state(crash_settings, "consistency-crash")
    assert_consistent(crashed, doc_ids(final_files))
    drift_crashed = assert_same(crashed, clean)

    record(
        test="consistency",
        documents=DOCS,
        modified=CHANGED,
        deleted=CHANGED,
        points=len(clean.points),
        graph_edges=sum(clean.edges.values()),
        visible_when_killed=done,
        stale_points=0,
        orphans=0,
        entity_nodes=len(clean.entities),
        entity_edges=sum(n for e, n in clean.edges.items() if {e[1], e[2]} & clean.entities),
        entity_drift_after_changes=drift_changed,
        entity_drift_after_kill=drift_crashed,
        data_lost=0,
    )
