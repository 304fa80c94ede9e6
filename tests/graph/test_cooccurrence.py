"""Co-occurrence edges: NPMI, RELATED_TO between entities, keyword topics."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from rayweave.cluster.settings import GraphSettings
from rayweave.cluster.types import Chunk, Level
from rayweave.graph.builders import build_graph
from rayweave.graph.cooccurrence import (
    PairCounts,
    corpus_scale,
    npmi,
    related_edges,
    strongest_per_entity,
)
from rayweave.graph.edges import entity_ref
from rayweave.graph.schema import EdgeRow, EdgeSource, NodeLabel, RelType


def sec(cid: str, doc: str, text: str, **kw: object) -> Chunk:
    return Chunk(id=cid, doc_id=doc, level=Level.SECTION, text=text, **kw)  # type: ignore[arg-type]


def related_rows(units: list[set[str]], settings: GraphSettings) -> list[EdgeRow]:
    counts = PairCounts()
    counts.count_sets(units)
    counts.count_pairs(units)
    return related_edges(counts, settings).rows()


class TestRelatedAndTopics:
    def test_npmi_bounds(self) -> None:
        assert npmi(10, 10, 10, 10) == 1.0
        assert npmi(5, 5, 5, 100) == pytest.approx(1.0)
        assert npmi(1, 50, 50, 100) < 0
        assert npmi(0, 5, 5, 100) == -1.0

    def test_related_needs_support_and_pmi(self) -> None:
        units = [{"a", "b"}, {"a", "b"}, {"a", "c"}, {"d"}, {"e"}, {"f", "c"}]
        got = related_rows(units, GraphSettings(related_min_support=2, related_min_npmi=0.1))
        assert [(e.src.id, e.dst.id) for e in got] == [("a", "b")]
        (ab,) = got
        assert ab.source is EdgeSource.COOCCURRENCE
        assert ab.count == 2
        assert 0 < ab.confidence <= 1
        assert related_rows(units, GraphSettings(related_min_support=3)) == []

    def test_related_caps_edges_per_entity(self) -> None:
        units = [{"hub", f"x{i}"} for i in range(5) for _ in range(2)] + [{"pad"}] * 20
        got = related_rows(units, GraphSettings(related_max_per_entity=2, related_min_npmi=0.0))
        assert sum("hub" in (e.src.id, e.dst.id) for e in got) == 2

    def test_topics_cluster_keywords_and_documents_belong(self) -> None:
        kw_ml = ("embedding", "vector", "retrieval")
        kw_ops = ("kubernetes", "helm", "pod")
        chunks = [sec(f"m{i}", f"m{i}", "x", keywords=kw_ml) for i in range(3)]
        chunks += [sec(f"k{i}", f"k{i}", "x", keywords=kw_ops) for i in range(3)]
        chunks += [sec("mix", "mix", "x", keywords=("embedding", "pod"))]
        batch = build_graph(chunks)
        topics = batch.topics
        belongs = [e for e in batch.edges if e.rel is RelType.BELONGS_TO]
        assert sorted(sorted(t.keywords) for t in topics) == [sorted(kw_ml), sorted(kw_ops)]
        ml = next(t for t in topics if "vector" in t.keywords)
        shares = {e.src.id: e.weight for e in belongs if e.dst.id == ml.id}
        assert shares["m0"] == 1.0
        assert shares["mix"] == pytest.approx(1 / 3, abs=1e-6)
        assert "k0" not in shares
        assert all(
            e.src.label is NodeLabel.DOCUMENT and e.source is EdgeSource.KEYWORDS for e in belongs
        )


def _related_by_the_rule(counts: PairCounts, settings: GraphSettings) -> list[EdgeRow]:
    """`related_edges` spelled out pair by pair: `npmi` per pair, one sort of tuples."""
    total = corpus_scale(counts.sets)
    scored = []
    for (a, b), n in counts.joint.items():
        score = npmi(n, counts.df[a], counts.df[b], total)
        if n >= settings.related_min_support and score >= settings.related_min_npmi:
            scored.append((max(0.0, score) * (n / (n + 1.0)), a, b, n))
    scored.sort(key=lambda s: (-s[0], s[1], s[2]))
    ranked = strongest_per_entity(scored, settings.related_max_per_entity, lambda s: (s[1], s[2]))
    return [
        EdgeRow(
            rel=RelType.RELATED_TO,
            src=entity_ref(a),
            dst=entity_ref(b),
            weight=round(s, 6),
            confidence=round(min(1.0, s), 6),
            source=EdgeSource.COOCCURRENCE,
            count=n,
        )
        for s, a, b, n in ranked
    ]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_related_arrays_equal_the_rule_spelled_out(seed: int) -> None:
    # Few names over many small units: repeated counts make ties in strength, and hubs reach
    # the cap, so both the order and the greedy cap are exercised.
    rng = random.Random(seed)
    names = [f"e{i:02d}" for i in range(40)]
    units = [set(rng.sample(names[: rng.choice([8, 40])], rng.randint(1, 5))) for _ in range(400)]
    counts = PairCounts()
    counts.count_sets(units)
    counts.count_pairs(units)
    settings = GraphSettings(related_min_support=2, related_min_npmi=0.0, related_max_per_entity=3)
    got = related_edges(counts, settings).rows()
    assert got == _related_by_the_rule(counts, settings)
    assert len(got) > 20
    assert max(Counter(e for r in got for e in (r.src.id, r.dst.id)).values()) == 3


def test_uncounted_sets_leave_the_counts_of_the_others() -> None:
    kept = [{"a", "b", "c"}, {"a", "b"}]
    gone = [{"a", "b"}, {"c", "d"}]
    counts = PairCounts()
    counts.count([*kept, *gone])
    counts.uncount(gone)
    alone = PairCounts()
    alone.count(kept)
    assert counts == alone
    assert "d" not in counts.df
    assert ("c", "d") not in counts.joint
    with pytest.raises(ValueError, match="taken back"):
        counts.uncount([{"c", "d"}])
