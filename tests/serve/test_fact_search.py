"""Fact search beside vector search: fact hits from a real embedded facts collection, and a graph
store that cannot be asked never failing or holding a query."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from rayweave.cluster.settings import QdrantSettings
from rayweave.cluster.vectors.factory import open_vector_store
from rayweave.cluster.vectors.store import VectorStore
from rayweave.graph.extraction import Extraction, Statement
from rayweave.graph.facts import collect_facts, facts_collection, sync_facts
from rayweave.serve.fact_search import FactSearch
from rayweave.serve.fusion import SPARSE_FACTS

DIM = 8


def encode(texts: list[str]) -> np.ndarray:
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    for i, t in enumerate(texts):
        out[i, len(t) % DIM] = 1.0
    return out


def facts_store(tmp_path: Path) -> VectorStore:
    name = facts_collection("docs")
    store = open_vector_store(QdrantSettings(), path=tmp_path, collection=name)
    fact = Statement(subject="Charles Babbage", predicate="born in", object="Walworth")
    sync_facts(
        store,
        collect_facts({"c1": Extraction(statements=(fact,))}),
        encode,
        name=name,
        dense_dim=DIM,
    )
    return store


def test_facts_come_back_with_what_the_walk_seeds_from(tmp_path: Path) -> None:
    store = facts_store(tmp_path)
    search = FactSearch(lambda: store, lambda: True, top_k=3)
    search.refresh()
    (hit,) = search.search(encode(["Charles Babbage born in Walworth"])[0])
    assert hit.text == "Charles Babbage born in Walworth"
    assert hit.metadata["subject"] == "Charles Babbage"
    assert hit.metadata["object"] == "Walworth"
    assert hit.metadata["chunk_ids"] == ["c1"]
    search.close()


def test_no_facts_no_store_is_opened() -> None:
    opened: list[int] = []

    def open_store() -> VectorStore:
        opened.append(1)
        raise AssertionError("a namespace without facts opens no facts collection")

    search = FactSearch(open_store, lambda: False, top_k=3)
    search.refresh()
    assert search.search(np.ones(DIM, dtype=np.float32)) == []
    assert opened == []


def test_a_failing_check_keeps_the_last_answer_and_never_holds_a_query(tmp_path: Path) -> None:
    store = facts_store(tmp_path)
    answers = iter([True])

    def has_facts() -> bool:
        try:
            return next(answers)
        except StopIteration:
            time.sleep(2.0)  # a graph server that hangs, then refuses
            raise ConnectionError("graph server unreachable") from None

    search = FactSearch(lambda: store, has_facts, top_k=3, recheck_s=0.0)
    search.refresh()
    started = time.perf_counter()
    for _ in range(5):
        assert len(search.search(encode(["Charles Babbage born in Walworth"])[0])) == 1
    assert time.perf_counter() - started < 1.5  # the hanging recheck ran in the background
    search.close()


def test_fewer_facts_than_sections_mark_the_hits_sparse(tmp_path: Path) -> None:
    """One fact in a namespace of three sections is below one per section: the hits say so, and
    an 'auto' fusion then lets the walk vote instead of rank (`serve/fusion.py`)."""
    store = facts_store(tmp_path)
    query = encode(["Charles Babbage born in Walworth"])[0]
    sections = {"n": 3}

    def search(minimum: float) -> FactSearch:
        found = FactSearch(
            lambda: store,
            lambda: True,
            top_k=3,
            sections=lambda: sections["n"],
            min_per_section=minimum,
        )
        found.refresh()
        return found

    (hit,) = search(1.0).search(query)
    assert hit.metadata[SPARSE_FACTS] is True
    (hit,) = search(0.0).search(query)  # 0: never sparse
    assert SPARSE_FACTS not in hit.metadata
    sections["n"] = 1
    (hit,) = search(1.0).search(query)
    assert SPARSE_FACTS not in hit.metadata
    store.close()
