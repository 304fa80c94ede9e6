"""Fact points: distinct statements merged over chunks, and a facts collection kept equal to them
(a real embedded Qdrant engine in a temporary folder)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from rayweave.cluster.errors import NotFoundError
from rayweave.cluster.settings import QdrantSettings
from rayweave.cluster.vectors.factory import open_vector_store
from rayweave.cluster.vectors.store import VectorQuery
from rayweave.graph.extraction import Extraction, Statement
from rayweave.graph.facts import collect_facts, facts_collection, sync_facts

DIM = 16


def encode(texts: list[str]) -> np.ndarray:
    """A deterministic stand-in encoder: equal texts, equal unit vectors."""
    rows = []
    for t in texts:
        seed = int(hashlib.sha256(t.encode()).hexdigest()[:8], 16)
        v = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
        rows.append(v / np.linalg.norm(v))
    return np.stack(rows)


def st(s: str, p: str, o: str) -> Statement:
    return Statement(subject=s, predicate=p, object=o)


EXTRACTIONS = {
    "c1": Extraction(statements=(st("Paris", "is capital of", "France"), st("", "is", "x"))),
    "c2": Extraction(statements=(st("paris", "is  capital of", "France"),)),
    "c3": Extraction(statements=(st("Lyon", "is in", "France"),)),
}


class TestCollectFacts:
    def test_one_fact_per_normalised_statement_with_every_chunk_stating_it(self) -> None:
        facts = collect_facts(EXTRACTIONS)
        assert [f.text for f in facts] == ["Lyon is in France", "Paris is capital of France"]
        paris = facts[1]
        assert paris.chunk_ids == ("c1", "c2")
        assert (paris.subject, paris.object) == ("Paris", "France")

    def test_ids_are_stable_and_empty_arguments_are_dropped(self) -> None:
        again = collect_facts(dict(reversed(list(EXTRACTIONS.items()))))
        assert [f.id for f in again] == [f.id for f in collect_facts(EXTRACTIONS)]
        assert all(f.subject and f.object for f in again)

    def test_a_fact_keeps_the_topic_of_the_first_chunk_stating_it(self) -> None:
        def said(topic: str | None) -> Extraction:
            return Extraction(
                statements=(Statement(subject="A", predicate="b", object="C", topic=topic),)
            )

        facts = collect_facts({"c2": said("Later"), "c1": said("First"), "c0": said(None)})
        assert [(f.topic, f.chunk_ids) for f in facts] == [(None, ("c0", "c1", "c2"))]
        assert collect_facts({"c2": said("Later"), "c1": said("First")})[0].topic == "First"
        assert collect_facts({"c1": said("First")})[0].payload()["topic"] == "First"

    def test_no_statements_no_facts(self) -> None:
        assert collect_facts({"c": Extraction(error="bad json")}) == []


class TestSyncFacts:
    def test_keeps_the_collection_equal_to_the_facts(self, tmp_path: Path) -> None:
        name = facts_collection("docs")
        store = open_vector_store(QdrantSettings(), path=tmp_path, collection=name)
        encoded: list[str] = []

        def counting(texts: list[str]) -> np.ndarray:
            encoded.extend(texts)
            return encode(texts)

        try:
            first = sync_facts(
                store, collect_facts(EXTRACTIONS), counting, name=name, dense_dim=DIM
            )
            assert (first.facts, first.added, first.removed) == (2, 2, 0)
            assert store.count() == 2
            # c1 is deleted: Paris stays (c2 states it), with one chunk; Lyon gains a fact.
            changed = {
                "c2": EXTRACTIONS["c2"],
                "c3": Extraction(statements=(st("Lyon", "is in", "France"),)),
                "c4": Extraction(statements=(st("Lyon", "hosts", "Interpol"),)),
            }
            encoded.clear()
            second = sync_facts(store, collect_facts(changed), counting, name=name, dense_dim=DIM)
            assert (second.added, second.removed) == (1, 0)
            assert encoded == ["Lyon hosts Interpol"]  # only the new fact is encoded
            (paris,) = [p for p in store.scroll(limit=10)[0] if p.payload["subject"] == "Paris"]
            assert paris.payload["chunk_ids"] == ["c2"]
            # A fact whose topic changed is updated in place, not encoded again.
            encoded.clear()
            topical = {
                **changed,
                "c2": Extraction(
                    statements=(
                        Statement(
                            subject="Paris",
                            predicate="is capital of",
                            object="France",
                            topic="Capitals",
                        ),
                    )
                ),
            }
            sync_facts(store, collect_facts(topical), counting, name=name, dense_dim=DIM)
            assert encoded == []
            (paris,) = [p for p in store.scroll(limit=10)[0] if p.payload["subject"] == "Paris"]
            assert paris.payload["topic"] == "Capitals"
            best = store.query(
                VectorQuery(mode="dense", dense=encode(["Lyon hosts Interpol"])[0], limit=1)
            )
            assert best[0].payload["text"] == "Lyon hosts Interpol"

            third = sync_facts(
                store, collect_facts({"c3": changed["c3"]}), counting, name=name, dense_dim=DIM
            )
            assert (third.facts, third.removed) == (1, 2)
            assert store.count() == 1

            sync_facts(store, [], counting, name=name, dense_dim=DIM)
            with pytest.raises(NotFoundError):
                store.spec()
        finally:
            store.close()
