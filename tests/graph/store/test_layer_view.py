"""The layer view's index answers what a walk over every edge answers, through any sequence of
the mutations that keep it, and is dropped by any other."""

from __future__ import annotations

import pickle
import random

import pytest

from rayweave.graph.schema import EdgeColumns, EdgeSource, RelType
from rayweave.graph.store.layer_sync import _unmade
from rayweave.graph.store.layer_view import EdgeKey, LayerView

_COLUMNS = [
    EdgeColumns(
        rel=RelType.RELATED_TO,
        source=EdgeSource.COOCCURRENCE,
        src=[],
        dst=[],
        weight=[],
        confidence=[],
        count=[],
    )
]
_COLUMN_FORM = {"weight": 0.5, "confidence": 1.0, "source": "cooccurrence", "count": 2}
_CHUNKS = [f"c{i}" for i in range(12)]
_ENTITIES = [f"e{i}" for i in range(10)]


def _edge(rng: random.Random) -> tuple[EdgeKey, dict[str, object]]:
    kind = rng.randrange(5)
    chunk, entity, other = rng.choice(_CHUNKS), rng.choice(_ENTITIES), rng.choice(_ENTITIES)
    if kind == 0:
        return ("MENTIONS", "Section", "Entity", chunk, entity), {"source": "gazetteer"}
    if kind == 1:
        return ("BELONGS_TO", "Document", "Topic", chunk, f"t{rng.randrange(3)}"), {}
    if kind == 2:  # mostly a columns' form; now and then a merged row's
        form = dict(_COLUMN_FORM) if rng.random() < 0.8 else {**_COLUMN_FORM, "why": "llm"}
        return ("RELATED_TO", "Entity", "Entity", entity, other), form
    if kind == 3:
        return ("USES", "Entity", "Entity", entity, other), {"source": "llm"}
    return ("BELONGS_TO", "Entity", "Topic", entity, f"t{rng.randrange(3)}"), {}


def _mutate(view: LayerView, rng: random.Random) -> None:
    for _ in range(rng.randrange(1, 8)):
        step = rng.random()
        if step < 0.5:
            k, props = _edge(rng)
            view.put(k, props, vouched=props == _COLUMN_FORM and rng.random() < 0.5)
        elif step < 0.8 and view:
            view.take(rng.choice(sorted(view)))
        else:
            view.merge(dict(_edge(rng) for _ in range(3)))


@pytest.mark.parametrize("seed", range(40))
def test_the_index_finds_what_the_walk_finds(seed: int) -> None:
    rng = random.Random(seed)
    view = LayerView(dict(_edge(rng) for _ in range(30)))
    view.indexed()
    for _ in range(6):
        _mutate(view, rng)
        assert view.index is not None
        walked = LayerView(view)  # no index: the walk
        seen = set(rng.sample(sorted(view), k=len(view) // 2)) if view else set()
        standing = set(rng.sample(_CHUNKS, k=rng.randrange(len(_CHUNKS))))
        settled = rng.choice([frozenset(), frozenset({"BELONGS_TO"})])
        for by_delta in (False, True):
            args = (seen, standing, _COLUMNS)
            fast = _unmade(view, *args, by_delta=by_delta, settled=settled)
            slow = _unmade(walked, *args, by_delta=by_delta, settled=settled)
            assert sorted(fast.rest) == sorted(slow.rest)
            assert sorted(fast.typed) == sorted(slow.typed)
            assert fast.foreign == slow.foreign
        keys = set(rng.sample(_CHUNKS + _ENTITIES, k=3))
        assert sorted(view.touching(keys)) == sorted(walked.touching(keys))
        kept, fresh = view.index, LayerView(view).indexed()
        assert (kept.ends, kept.own, kept.typed) == (fresh.ends, fresh.own, fresh.typed)
        assert kept.topic_types == fresh.topic_types
        assert kept.unvouched <= fresh.unvouched  # a fresh build vouches for none


def test_a_merged_form_stays_foreign_until_a_sync_vouches_for_it() -> None:
    k = ("RELATED_TO", "Entity", "Entity", "a", "b")
    view = LayerView({k: {**_COLUMN_FORM, "why": "llm"}})
    view.indexed()
    check = {"seen": set(), "standing": set(), "columns": _COLUMNS, "by_delta": True}
    assert _unmade(view, **check).foreign  # type: ignore[arg-type]
    assert _unmade(view, **check).foreign  # type: ignore[arg-type]
    view.put(k, dict(_COLUMN_FORM), vouched=True)
    assert not _unmade(view, **check).foreign  # type: ignore[arg-type]


def test_any_other_mutation_drops_the_index_and_pickling_never_writes_it() -> None:
    k = ("MENTIONS", "Section", "Entity", "c", "e")
    view = LayerView({k: {}})
    for mutate in (
        lambda v: v.__setitem__(k, {"x": 1}),
        lambda v: v.pop(k),
        lambda v: v.update({k: {}}),
        lambda v: v.clear(),
        lambda v: v.setdefault(("USES", "Section", "Entity", "c", "f")),
    ):
        view.indexed()
        mutate(view)
        assert view.index is None
    view = LayerView({k: {"w": 1}})
    view.indexed()
    back = pickle.loads(pickle.dumps(view))
    assert isinstance(back, LayerView)
    assert back == view
    assert back.index is None
