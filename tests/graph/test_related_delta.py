"""RELATED_TO kept by delta: after any sequence of changes, the kept pairs, their weights and
counts, and the state held for the next change are what scoring the counts afresh gives."""

from __future__ import annotations

import random
from collections.abc import Sequence
from collections.abc import Set as AbstractSet

import pytest

from rayweave.cluster.settings import GraphSettings
from rayweave.graph.cooccurrence import PairCounts, corpus_scale, related_edges
from rayweave.graph.related_delta import RelatedState, UnitsChange
from rayweave.graph.schema import EdgeColumns

Units = list[AbstractSet[str]]


def rows(cols: EdgeColumns) -> list[tuple[str, str, float, int]]:
    return sorted(zip(cols.src, cols.dst, cols.weight, cols.count, strict=True))


def assert_as_fresh(
    state: RelatedState, got: EdgeColumns, counts: PairCounts, cfg: GraphSettings
) -> None:
    assert rows(got) == rows(related_edges(counts, cfg))
    _, fresh = RelatedState.scored(counts, cfg)
    assert state.kept == fresh.kept
    assert state.kept_keys == fresh.kept_keys
    assert {x: sorted(ys) for x, ys in state.partners.items()} == {
        x: sorted(ys) for x, ys in fresh.partners.items()
    }


def change(
    state: RelatedState,
    counts: PairCounts,
    gone: Sequence[AbstractSet[str]],
    new: Sequence[AbstractSet[str]],
    cfg: GraphSettings,
) -> EdgeColumns:
    """The columns of `counts` changed so, by delta; what the delta says moved, applied to the
    columns before, gives them."""
    before = {pair: (w, n) for pair, (_, w, n) in state.kept.items()}
    counts.uncount(gone)
    counts.count(new)
    cols, delta = state.rescored(counts, UnitsChange.of(gone, new), cfg)
    if delta is not None:
        now = {(s, d): (w, n) for s, d, w, n in rows(delta.now)}
        assert now.keys().isdisjoint(delta.gone)
        applied = {p: v for p, v in {**before, **now}.items() if p not in set(delta.gone)}
        assert sorted((*p, *v) for p, v in applied.items()) == rows(cols)
    return cols


def test_units_change_is_net() -> None:
    moved = UnitsChange.of(gone=[{"a", "b"}, {"b", "c"}], new=[{"a", "b"}, {"c", "d"}])
    assert moved.df == {"b": -1, "d": 1}
    assert moved.joint == {("b", "c"): -1, ("c", "d"): 1}


def test_a_hub_that_loses_a_document_reshuffles_the_cap_of_a_name_it_never_met() -> None:
    """`hub` reaches the cap with its strongest pairs; once one document less names it, its
    pairs score otherwise and the cap keeps another set, which frees or takes a place at `x`,
    a name no changed unit holds."""
    cfg = GraphSettings(related_max_per_entity=2, related_min_support=1, related_min_npmi=-1.0)
    docs: dict[str, Units] = {
        "d1": [{"hub", "a"}, {"hub", "a"}, {"hub", "b"}],
        "d2": [{"hub", "c"}, {"c", "x"}, {"x", "y"}, {"x", "z"}],
        "d3": [{"hub", "a", "b"}, {"y", "z"}, {"a"}],
        "d4": [{"b", "x"}, {"c"}, {"z"}],
    }
    counts = PairCounts()
    for units in docs.values():
        counts.count(units)
    cols, state = RelatedState.scored(counts, cfg)
    assert rows(cols) == rows(related_edges(counts, cfg))
    before = set(state.kept)
    got = change(state, counts, docs.pop("d3"), [], cfg)
    assert_as_fresh(state, got, counts, cfg)
    assert set(state.kept) != before


def test_a_step_of_the_corpus_scale_rescores_every_pair() -> None:
    cfg = GraphSettings(related_max_per_entity=3, related_min_support=1)
    counts = PairCounts()
    counts.count([{"a", "b"}, {"b", "c"}, {"a", "c", "d"}])
    _, state = RelatedState.scored(counts, cfg)
    new = [{"a", "d"}, {"c", "d"}, {"b", "d"}, {"a", "b"}]
    assert corpus_scale(counts.sets) != corpus_scale(counts.sets + len(new))
    got = change(state, counts, [], new, cfg)
    assert_as_fresh(state, got, counts, cfg)
    assert state.total == corpus_scale(counts.sets)


@pytest.mark.parametrize("seed", range(150))
def test_random_changes_keep_what_fresh_scoring_gives(seed: int) -> None:
    rng = random.Random(seed)
    names = [f"n{i:03d}" for i in range(rng.randint(5, 60))]
    hubs = names[:3]  # in half of all units: a change moves every one of their pairs

    def units() -> Units:
        out: Units = []
        for _ in range(rng.randint(1, 4)):
            unit = set(rng.sample(names, rng.randint(1, min(6, len(names)))))
            if rng.random() < 0.5:
                unit.add(rng.choice(hubs))
            out.append(unit)
        return out

    cfg = GraphSettings(
        related_max_per_entity=rng.choice([1, 2, 3, 10]),
        related_min_support=rng.choice([1, 2]),
        related_min_npmi=rng.choice([-1.0, 0.0, 0.1]),
    )
    docs = {d: units() for d in range(rng.randint(5, 80))}
    counts = PairCounts()
    for u in docs.values():
        counts.count(u)
    _, state = RelatedState.scored(counts, cfg)
    for _ in range(12):
        gone: Units = []
        new: Units = []
        picked: set[int] = set()
        for _ in range(rng.randint(1, 3)):
            free = [d for d in docs if d not in picked]
            op = rng.random()
            if op < 0.3 and free:
                d = rng.choice(free)
                gone += docs.pop(d)
            elif op < 0.6 and free:
                d = rng.choice(free)
                gone += docs[d]
                docs[d] = units()
                new += docs[d]
            else:
                d = max([*docs, *picked], default=0) + 1
                docs[d] = units()
                new += docs[d]
            picked.add(d)
        got = change(state, counts, gone, new, cfg)
        assert_as_fresh(state, got, counts, cfg)
