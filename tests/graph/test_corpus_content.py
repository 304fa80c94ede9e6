"""The corpus pass's input followed through the change log equals a whole read, reading only the
documents a write touched."""

from __future__ import annotations

import dataclasses
import random

import pytest

from rayweave.graph.corpus_content import read_content
from rayweave.graph.store import GraphStore

from .generated_corpus import generate, random_change, write

pytestmark = pytest.mark.integration


def test_the_content_followed_through_the_log_equals_a_whole_read(graph_store: GraphStore) -> None:
    rng = random.Random(5)
    live = {f"D{i}": generate(rng, f"D{i}", 0) for i in range(6)}
    write(graph_store, list(live.values()))
    held, read = read_content(graph_store, None)
    assert read is None
    assert held.flat() == graph_store.documents_content()
    for step in range(8):
        change = random_change(rng, graph_store, live, step + 1)
        held, read = read_content(graph_store, held)
        assert read is not None
        assert len(read) == 1, change  # an add, an edit or a delete touches one document
        assert held.flat() == graph_store.documents_content(), change
        assert set(held.documents) == set(live)
    held, read = read_content(graph_store, held)
    assert read == frozenset()  # nothing written since


def test_an_entry_that_cannot_name_its_keys_reads_whole(graph_store: GraphStore) -> None:
    rng = random.Random(6)
    write(graph_store, [generate(rng, f"D{i}", 0) for i in range(3)])
    held, _ = read_content(graph_store, None)
    graph_store.mark_all()
    graph_store.touch()
    again, read = read_content(graph_store, held)
    assert read is None
    assert again.flat() == graph_store.documents_content()


def test_its_own_passs_entries_read_nothing_again(graph_store: GraphStore) -> None:
    rng = random.Random(7)
    write(graph_store, [generate(rng, f"D{i}", 0) for i in range(3)])
    held, _ = read_content(graph_store, None)
    held = dataclasses.replace(held, made="pass-1")
    with graph_store.writing_as("pass-1"):  # the keeping pass's edges around D0
        graph_store.mark([graph_store.key("D0")])
        graph_store.touch()
    again, read = read_content(graph_store, held)
    assert read == frozenset()
    graph_store.mark([graph_store.key("D0")])  # anyone else: D0 may have been written anew
    graph_store.touch()
    _, read = read_content(graph_store, again)
    assert read == {"D0"}
