"""The graph after any sequence of ingests, edits and deletes equals a fresh ingest of the
documents that remain: node for node, edge for edge, weights included. Documents come from
`generated_corpus`; each step goes through `update_entity_layer`, the product's maintenance
entry point, on the real embedded graph server, with its layer snapshot, match memo and
document parts as the ingest keeps them.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

import pytest
from tests_support import graph_snapshot

from rayweave.graph.builders import build_graph
from rayweave.graph.corpus_content import document_keys
from rayweave.graph.indexing import update_entity_layer
from rayweave.graph.layer_memos import HeldMemos, MemoFiles
from rayweave.graph.schema import CORPUS_SOURCES, EntityRow
from rayweave.graph.store import GraphStore

from .generated_corpus import GeneratedDoc, generate, name_index, random_change, titled, write

pytestmark = pytest.mark.integration


def fresh_snapshot(
    graph_store: GraphStore, folder: Path, name: str, docs: list[GeneratedDoc]
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    fresh = graph_store.for_namespace(f"{graph_store.ns}-{name}")
    names = name_index(folder / name, fresh.ns)
    try:
        if docs:
            write(fresh, docs)
        update_entity_layer(fresh, names)
        return graph_snapshot(fresh)
    finally:
        names.store.close()
        fresh.drop_namespace()


def corpus_edges(edges: list[tuple[Any, ...]]) -> set[tuple[str, str, str]]:
    sources = {source.value for source in CORPUS_SOURCES}
    return {(e[2], e[1], e[4]) for e in edges if e[5] in sources}


def built_edges(store: GraphStore) -> set[tuple[str, str, str]]:
    chunks, mentions = store.chunks_and_mentions()
    batch = build_graph(
        chunks, mentions, settings=store.settings, extractions=store.chunk_extractions()
    )
    return {(e.rel.value, e.src.id, e.dst.id) for e in batch.edges}


@pytest.mark.parametrize(("seed", "keeper"), [(7, "files"), (8, "files"), (9, "held")])
def test_random_updates_leave_the_graph_a_fresh_ingest_would_build(
    seed: int, keeper: str, graph_store: GraphStore, tmp_path: Path
) -> None:
    rng = random.Random(seed)
    names = name_index(tmp_path / "live", graph_store.ns)
    relinked = 0
    live: dict[str, GeneratedDoc] = {f"D{i}": generate(rng, f"D{i}", 0) for i in range(6)}
    write(graph_store, list(live.values()))
    files = MemoFiles.under(tmp_path / "layers", graph_store.ns)
    # 'held': as the upkeep actor keeps them (`ingest/upkeep_host.py`), in memory between passes.
    memos = HeldMemos(files) if keeper == "held" else files
    first = update_entity_layer(graph_store, names, memos=memos)
    assert first.corpus.reread is None
    assert first.corpus.rematched == len(graph_store.chunks_and_mentions()[0])
    assert first.corpus.reused == 0
    rematched = reused = kept_parts = partly_read = names_followed = 0
    whole_relink = first.synonyms is not None and first.synonyms.full
    for step in range(8):
        change = random_change(rng, graph_store, live, step + 1)
        update = update_entity_layer(graph_store, names, memos=memos)
        assert update.corpus.rematched is not None
        assert update.corpus.reused is not None
        rematched += update.corpus.rematched
        # Documents whose phase 3 and stored edges were kept: the equality below covers them.
        kept_parts += update.corpus.reused
        # Held in memory, the input is read again only for the documents a write touched,
        # unless the log cannot say which (then the layer is read whole too).
        whole = keeper == "files" or update.corpus.reread is None
        assert (update.corpus.read is None) == whole
        partly_read += update.corpus.read is not None and update.corpus.read < len(live)
        # Steps where the memo kept some chunks' matches: the equality below covers reuse.
        reused += update.corpus.rematched < len(graph_store.chunks_and_mentions()[0])
        # From the snapshot, unless the last upkeep relinked every name (a full log entry).
        assert (update.corpus.reread is None) == whole_relink, f"step {step}"
        assert update.synonyms is not None
        whole_relink = update.synonyms.full
        assert not update.synonyms.full
        # Held, synonymy re-reads only the entities logged since (`graph/held_names.py`).
        assert (update.synonyms.reread is not None) <= (keeper == "held")
        names_followed += update.synonyms.reread is not None
        relinked += update.synonyms.relinked
        expected = fresh_snapshot(graph_store, tmp_path, f"fresh{step}", list(live.values()))
        got = graph_snapshot(graph_store)
        assert got == expected, (
            f"seed {seed}, step {step}: {change}: "
            f"only after updates {sorted(set(got[0]) - set(expected[0]))[:5]} "
            f"{sorted(set(got[1]) - set(expected[1]))[:5]}; "
            f"only fresh {sorted(set(expected[0]) - set(got[0]))[:5]} "
            f"{sorted(set(expected[1]) - set(got[1]))[:5]}"
        )
    # Independently of how either side was written: the stored layer is what the pure build
    # makes of the stored chunks (a write that silently dropped rows would pass the comparison
    # above, both sides dropping alike).
    assert corpus_edges(graph_snapshot(graph_store)[1]) == built_edges(graph_store)
    assert any(e[2] == "BELONGS_TO" for e in expected[1])
    assert any(e[2] == "RELATED_TO" for e in expected[1])
    if keeper == "held":  # RELATED_TO was kept by delta between passes (`graph/related_delta.py`)
        held = memos.load().parts
        assert held is not None
        assert held.units[0].related is not None
    # The repair path (every row rewritten, every name re-encoded) finds nothing to change.
    update_entity_layer(graph_store, names, full=True)
    assert graph_snapshot(graph_store) == expected
    names.store.close()
    entities, edges = graph_snapshot(graph_store)
    assert entities
    assert any(e[2] == "SYNONYM_OF" for e in edges)
    assert relinked > 0
    assert rematched > 0
    assert reused > 0
    assert kept_parts > 0
    assert partly_read > 0 or keeper == "files"
    assert names_followed > 0 or keeper == "files"


def test_an_entity_merged_away_goes_in_an_upkeep_from_the_snapshot(
    graph_store: GraphStore, tmp_path: Path
) -> None:
    # A document titled "Gadgets" makes an entity of the plural; one titled "Gadget" then merges
    # the plural into the singular, so every edge of the plural's entity moves away in the
    # sync. From the snapshot the upkeep sweeps only the entities at an end of a written or
    # deleted edge for orphans: the plural's entity must be among them.
    names = name_index(tmp_path / "live", graph_store.ns)
    memos = MemoFiles.under(tmp_path / "layers", graph_store.ns)
    plural = titled("A", "Gadgets", "Gadgets are small tools that fit in a pocket.")
    singular = titled("B", "Gadget", "A Gadget is one of the small tools.")
    write(graph_store, [plural])
    for _ in range(2):  # the first relinks every name: a full log entry, read whole next
        update_entity_layer(graph_store, names, memos=memos)
    before = {e[0] for e in graph_snapshot(graph_store)[0]}
    write(graph_store, [singular])
    update = update_entity_layer(graph_store, names, memos=memos)
    names.store.close()
    assert update.corpus.reread is not None  # the sync started from the snapshot
    # A's title now resolves to the singular's entity: A is computed anew, not reused.
    assert update.corpus.reused == 0
    got = graph_snapshot(graph_store)
    assert got == fresh_snapshot(graph_store, tmp_path, "fresh", [plural, singular])
    assert before - {e[0] for e in got[0]}, "no entity went: the plural did not merge"


def test_a_document_written_again_unchanged_gets_its_edges_back(
    graph_store: GraphStore, tmp_path: Path
) -> None:
    # Deleting a document takes its nodes' edges with it, and those of other documents into
    # it (A's reference to B). Written back unchanged, B reads the same facts and its text
    # matches the same names: only the change log tells that B's edges, and A's edge into
    # B, must be made again rather than kept from the memo.
    names = name_index(tmp_path / "live", graph_store.ns)
    memos = MemoFiles.under(tmp_path / "layers", graph_store.ns)
    a = titled("A", "Gadget Guide", "The Gadget Guide points to B for the Widget Toolkit.")
    a = GeneratedDoc(a.document, (dataclasses.replace(a.chunks[0], references=("B.md",)),), {})
    b = titled("B", "Widget Toolkit", "The Widget Toolkit ships every Gadget.")
    b = GeneratedDoc(b.document, (dataclasses.replace(b.chunks[0], source="B.md"),), {})
    c = titled("C", "Lake Geneva", "Lake Geneva lies between two countries.")
    write(graph_store, [a, b, c])
    for _ in range(2):  # the first relinks every name: a full log entry, read whole next
        update_entity_layer(graph_store, names, memos=memos)
    graph_store.delete_document("B")
    write(graph_store, [b])
    update = update_entity_layer(graph_store, names, memos=memos)
    names.store.close()
    assert update.corpus.reused == 1  # C; A and B are made again
    got = graph_snapshot(graph_store)
    assert got == fresh_snapshot(graph_store, tmp_path, "fresh", [a, b, c])
    assert any(e[2] == "REFERENCES" for e in got[1])


def test_related_kept_by_delta_leaves_what_a_fresh_ingest_builds(
    graph_store: GraphStore, tmp_path: Path
) -> None:
    """Over a corpus large enough that a one-document change mostly leaves the corpus scale in
    its step, held caches keep RELATED_TO by the sweep (`graph/related_delta.py`), not by
    scoring afresh, and the stored graph still equals a fresh ingest."""
    rng = random.Random(11)
    names = name_index(tmp_path / "live", graph_store.ns)
    live = {f"D{i}": generate(rng, f"D{i}", 0) for i in range(30)}
    write(graph_store, list(live.values()))
    memos = HeldMemos(MemoFiles.under(tmp_path / "layers", graph_store.ns))
    update_entity_layer(graph_store, names, memos=memos)
    swept = 0
    for step in range(5):
        before = memos.load().parts
        assert before is not None
        state = before.units[0].related
        assert state is not None
        total = state.total
        change = random_change(rng, graph_store, live, step + 1)
        update_entity_layer(graph_store, names, memos=memos)
        after = memos.load().parts
        assert after is not None
        # The same state, changed in place at the same scale: the sweep ran.
        swept += after.units[0].related is state and state.total == total
        expected = fresh_snapshot(graph_store, tmp_path, f"fresh{step}", list(live.values()))
        assert any(e[2] == "RELATED_TO" for e in expected[1])
        assert graph_snapshot(graph_store) == expected, change
    names.store.close()
    assert swept > 0


def test_an_upkeep_takes_its_last_passes_writes_as_its_own(
    graph_store: GraphStore, tmp_path: Path
) -> None:
    # A change's upkeep writes edges of documents it did not change (a name's new matches,
    # topics' members). The next upkeep finds those keys in the log after its caches' version,
    # but they are its last pass's own writes, which its caches hold: with no other write in
    # between it reads no document again and reuses every one, and the graph stays fresh.
    rng = random.Random(21)
    names = name_index(tmp_path / "live", graph_store.ns)
    live = {f"D{i}": generate(rng, f"D{i}", 0) for i in range(12)}
    write(graph_store, list(live.values()))
    memos = HeldMemos(MemoFiles.under(tmp_path / "layers", graph_store.ns))
    for _ in range(2):  # the first relinks every name: a full log entry, read whole next
        update_entity_layer(graph_store, names, memos=memos)
    reached = 0
    for step in range(6):
        change = random_change(rng, graph_store, live, step + 1)
        before = graph_store.version()
        update_entity_layer(graph_store, names, memos=memos)
        written = graph_store.changes_since(before.version, stamp=before.stamp).keys
        others = document_keys(graph_store, graph_store.documents_content()[0])
        reached += any(
            not keys.isdisjoint(written) for d, keys in others.items() if d != change.split()[1]
        )
        again = update_entity_layer(graph_store, names, memos=memos)
        assert again.corpus.read == 0, f"step {step}: {change}"
        assert again.corpus.reused == len(live), f"step {step}: {change}"
        expected = fresh_snapshot(graph_store, tmp_path, f"fresh{step}", list(live.values()))
        assert graph_snapshot(graph_store) == expected, change
    names.store.close()
    assert reached > 0, "no upkeep wrote another document's edges: nothing was tested"


def test_an_entity_another_writer_changed_is_made_right_by_the_next_upkeep(
    graph_store: GraphStore, tmp_path: Path
) -> None:
    # Held caches vouch for the entity rows the last sync wrote, but only until a write names
    # the entity: one renamed by someone else (a user, a tool) is written back, though the
    # lexicon hands on the very same row.
    rng = random.Random(22)
    live = {f"D{i}": generate(rng, f"D{i}", 0) for i in range(6)}
    write(graph_store, list(live.values()))
    memos = HeldMemos(MemoFiles.under(tmp_path / "layers", graph_store.ns))
    for _ in range(2):  # the first relinks every name: a full log entry, read whole next
        update_entity_layer(graph_store, None, memos=memos)
    expected = graph_snapshot(graph_store)
    stored = graph_store.stored_entities()
    key = min(stored)
    eid = key.split(":", 1)[1]
    graph_store.write_entities([EntityRow(id=eid, name="Renamed Elsewhere")], mode="replace")
    graph_store.touch()
    assert graph_store.stored_entities([key])[key] != stored[key]
    update = update_entity_layer(graph_store, None, memos=memos)
    assert update.corpus.reread is not None  # from the held snapshot, not a whole read
    assert graph_store.stored_entities([key]) == {key: stored[key]}
    assert graph_snapshot(graph_store) == expected
