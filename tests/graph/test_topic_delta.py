"""BELONGS_TO kept by delta: after any sequence of document changes, the edges held, and the
stored edges that the deltas leave, are what making the topics afresh gives."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from rayweave.cluster.settings import GraphSettings
from rayweave.graph.cooccurrence import PairCounts, keyword_topics, topics_from_counts
from rayweave.graph.schema import EdgeRow, TopicRow
from rayweave.graph.topic_delta import BelongsState

Keywords = dict[str, set[str]]


def _counts(docs: Keywords) -> tuple[PairCounts, dict[str, Counter[str]]]:
    counts = PairCounts()
    counts.count_sets(docs.values())
    counts.count_pairs(docs.values())
    return counts, {kw: Counter({kw: 1}) for names in docs.values() for kw in names}


def _fresh(docs: Keywords, cfg: GraphSettings) -> tuple[list[TopicRow], list[EdgeRow]]:
    return topics_from_counts(*_counts(docs), docs, cfg)


def _topics(docs: Keywords, cfg: GraphSettings) -> list[TopicRow]:
    return keyword_topics(*_counts(docs), cfg)


def _by_ends(edges: list[EdgeRow]) -> dict[tuple[str, str], EdgeRow]:
    return {(e.src.id, e.dst.id): e for e in edges}


@pytest.mark.parametrize("seed", range(100))
def test_random_changes_keep_what_fresh_topics_give(seed: int) -> None:
    rng = random.Random(seed)
    vocab = [f"k{i:02d}" for i in range(rng.randint(4, 30))]
    cfg = GraphSettings(topic_min_support=rng.choice([1, 2]), topic_min_npmi=rng.choice([0.0, 0.2]))

    def keywords() -> set[str]:
        return set(rng.sample(vocab, rng.randint(0, min(5, len(vocab)))))

    docs: Keywords = {f"d{i}": keywords() for i in range(rng.randint(3, 40))}
    _, edges = _fresh(docs, cfg)
    state = BelongsState.of(edges)
    stored = _by_ends(edges)  # as the sync leaves the store
    topics_moved = 0
    for step in range(12):
        changed: set[str] = set()
        for _ in range(rng.randint(1, 3)):
            op = rng.random()
            if op < 0.3 and docs:
                doc = rng.choice(sorted(docs))
                del docs[doc]
            elif op < 0.7 and docs:
                doc = rng.choice(sorted(docs))
                docs[doc] = keywords()
            else:
                doc = f"n{step}-{len(changed)}"
                docs[doc] = keywords()
            changed.add(doc)
        before = set(state.edges)
        made, delta = state.update(_topics(docs, cfg), docs, changed)
        topics_moved += set(state.edges) != before
        gone = {(a.id, b.id) for a, b in delta.gone}
        assert gone.isdisjoint(_by_ends(made))
        assert gone <= stored.keys()
        stored = {k: e for k, e in stored.items() if k not in gone} | _by_ends(made)
        _, fresh = _fresh(docs, cfg)
        assert stored == _by_ends(fresh), f"step {step}"
        assert _by_ends(state.all_edges()) == _by_ends(fresh)
        assert state.topics_of == {
            d: {t for (x, t) in _by_ends(fresh) if x == d} for d, _ in _by_ends(fresh)
        }
        # Only what the change can reach comes back: the changed documents' edges, and every
        # edge of a topic that is new.
        new_topics = set(state.edges) - before
        assert all(e.src.id in changed or e.dst.id in new_topics for e in made)
    if seed == 0:
        assert topics_moved  # the sequence made or dissolved a topic at least once


def test_a_document_that_moves_between_topics_is_all_the_delta_holds() -> None:
    cfg = GraphSettings(topic_min_support=1, topic_min_npmi=0.0)
    docs: Keywords = {
        "a": {"ray", "serve"},
        "b": {"ray", "serve"},
        "c": {"qdrant", "vector"},
        "d": {"qdrant", "vector"},
        "e": {"ray"},
    }
    topics, edges = _fresh(docs, cfg)
    state = BelongsState.of(edges)
    docs["e"] = {"qdrant"}  # from the first topic to the second; both topics stay
    assert _topics(docs, cfg) == topics
    made, delta = state.update(topics, docs, {"e"})
    assert [(e.src.id, e.weight) for e in made] == [("e", 0.5)]
    assert [(a.id, b.id) for a, b in delta.gone] == [
        ("e", next(t.id for t in topics if "ray" in t.keywords))
    ]
