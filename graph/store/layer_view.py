"""The synced edges as stored, with an index by node that a held view keeps between upkeeps.

A sync must find the stored edges it did not make (`GraphLayerSync.sync_edges`), and a
snapshot's refresh the edges at the nodes written since (`graph/layer_snapshot.py`). Walking
every edge for both cost 0.17 s of a one-document upkeep at 10k documents (670k edges), where
the change reaches a few hundred. The index answers both from the nodes the change names: each
node's edges, each chunk's or document's own edges, the edges from entities by type, and the
edges between entities whose stored form no sync has vouched for (a merged row, a re-read).

The view is a dict, so every reader is unchanged. Only `put`, `take` and `merge` keep the
index; any other mutation drops it, and it is built again only when asked (one walk, 1-2 s at
10k documents), which the upkeep actor does for the view it holds. A view that is read once
(an upkeep in its own process) is never indexed: the walk it replaces costs less.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from rayweave.graph.schema import NodeLabel

EdgeKey = tuple[str, str, str, str, str]  # (type, start label, end label, start key, end key)
Props = dict[str, Any]
_ENTITY, _TOPIC = NodeLabel.ENTITY.value, NodeLabel.TOPIC.value
COLUMN_FORM = ("weight", "confidence", "source", "count")  # what a columns' edge stores


def column_form(props: Mapping[str, Any], source: str) -> bool:
    """Whether `props` is the stored form of a columns' edge from `source` (nothing merged)."""
    return len(props) == len(COLUMN_FORM) and props.get("source") == source


@dataclass(slots=True)
class ViewIndex:
    """`ends`: node key -> the edges at it; `own`: chunk or document key -> the edges from it;
    `typed`: (type, end label) -> the edges from entities; `topic_types`: how many edges from
    chunks or documents end at a topic, by type; `unvouched`: edges between entities whose form
    may not be a columns' form (`column_form`)."""

    ends: dict[str, set[EdgeKey]] = field(default_factory=dict)
    own: dict[str, set[EdgeKey]] = field(default_factory=dict)
    typed: dict[tuple[str, str], set[EdgeKey]] = field(default_factory=dict)
    topic_types: Counter[str] = field(default_factory=Counter)
    unvouched: set[EdgeKey] = field(default_factory=set)

    def add(self, k: EdgeKey) -> None:
        t, la, lb, s, d = k
        self.ends.setdefault(s, set()).add(k)
        self.ends.setdefault(d, set()).add(k)
        if la != _ENTITY:
            self.own.setdefault(s, set()).add(k)
            if lb == _TOPIC:
                self.topic_types[t] += 1
        else:
            self.typed.setdefault((t, lb), set()).add(k)
            if lb == _ENTITY:
                self.unvouched.add(k)

    def remove(self, k: EdgeKey) -> None:
        t, la, lb, s, d = k
        _discard(self.ends, s, k)
        _discard(self.ends, d, k)
        if la != _ENTITY:
            _discard(self.own, s, k)
            if lb == _TOPIC:
                self.topic_types[t] -= 1
        else:
            _discard(self.typed, (t, lb), k)
            self.unvouched.discard(k)


def _discard(sets: dict[Any, set[EdgeKey]], at: Any, k: EdgeKey) -> None:
    keys = sets.get(at)
    if keys is not None:
        keys.discard(k)
        if not keys:
            del sets[at]


class LayerView(dict[EdgeKey, Props]):
    """Each synced edge's stored properties, by key (see module docstring)."""

    __slots__ = ("_index",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._index: ViewIndex | None = None

    def __reduce__(self) -> tuple[Any, ...]:  # the index is rebuilt when asked, never written
        return (LayerView, (dict(self),))

    @property
    def index(self) -> ViewIndex | None:
        """The index, when one is kept (None: not built, or dropped by a mutation)."""
        return self._index

    def indexed(self) -> ViewIndex:
        """The index, built first when none is kept."""
        if self._index is None:
            index = ViewIndex()
            for k in self:
                index.add(k)
            self._index = index
        return self._index

    def put(self, k: EdgeKey, props: Props, *, vouched: bool = False) -> None:
        """Set `k`'s properties; `vouched`: they are a columns' form (the sync wrote them so)."""
        index = self._index
        if index is not None and k not in self:
            index.add(k)
        dict.__setitem__(self, k, props)
        if index is not None and k[1] == _ENTITY and k[2] == _ENTITY:
            if vouched:
                index.unvouched.discard(k)
            else:
                index.unvouched.add(k)

    def take(self, k: EdgeKey) -> None:
        dict.__delitem__(self, k)
        if self._index is not None:
            self._index.remove(k)

    def merge(self, edges: Mapping[EdgeKey, Props]) -> None:
        for k, props in edges.items():
            self.put(k, props)

    def touching(self, keys: AbstractSet[str]) -> list[EdgeKey]:
        """The edges with an end among `keys`, from the index when one is kept."""
        index = self._index
        if index is None:
            return [k for k in self if k[3] in keys or k[4] in keys]
        found: set[EdgeKey] = set()
        for key in keys:
            found.update(index.ends.get(key, ()))
        return list(found)

    # Any other mutation drops the index.
    def __setitem__(self, k: EdgeKey, props: Props) -> None:
        self._index = None
        super().__setitem__(k, props)

    def __delitem__(self, k: EdgeKey) -> None:
        self._index = None
        super().__delitem__(k)

    def __ior__(self, other: Any) -> LayerView:  # type: ignore[override,misc]
        self._index = None
        super().__ior__(other)
        return self

    def update(self, *args: Any, **kwargs: Any) -> None:
        self._index = None
        super().update(*args, **kwargs)

    def pop(self, *args: Any) -> Any:
        self._index = None
        return super().pop(*args)

    def popitem(self) -> tuple[EdgeKey, Props]:
        self._index = None
        return super().popitem()

    def setdefault(self, k: EdgeKey, default: Props | None = None) -> Props:
        self._index = None
        return super().setdefault(k, {} if default is None else default)

    def clear(self) -> None:
        self._index = None
        super().clear()


def as_view(edges: Mapping[EdgeKey, Props] | None) -> LayerView:
    """`edges` as a view: itself when it is one, else a copy."""
    if isinstance(edges, LayerView):
        return edges
    return LayerView(edges or {})


def unmade_by_index(
    view: LayerView,
    index: ViewIndex,
    seen: AbstractSet[EdgeKey],
    standing: AbstractSet[str],
    source: Mapping[str, str],
    *,
    by_delta: bool,
    settled: AbstractSet[str],
) -> tuple[list[EdgeKey], list[EdgeKey], bool]:
    """What `layer_sync._unmade` finds, from the index: the edges from chunks or documents that
    are not standing (all of a chunk's, when edges to topics of an unsettled type are stored),
    the edges from entities of types other than the columns', and the unvouched ones between
    entities (made vouched when they are in a columns' form)."""
    rest: list[EdgeKey] = []
    typed: list[EdgeKey] = []
    foreign = False
    walk_all = any(n and t not in settled for t, n in index.topic_types.items())
    starts: Iterable[str] = index.own.keys() if walk_all else index.own.keys() - standing
    for s in starts:
        moved = s not in standing
        for k in index.own[s]:
            if (moved or k[2] == _TOPIC) and k[0] not in settled and k not in seen:
                rest.append(k)
    for (t, end), keys in index.typed.items():
        if t in source and end == _ENTITY:
            if not by_delta:
                typed.extend(keys)
        else:
            rest.extend(k for k in keys if k not in seen)
    if by_delta:
        vouched = []
        for k in index.unvouched:
            if k[0] in source:
                if column_form(view[k], source[k[0]]):
                    vouched.append(k)
                else:
                    foreign = True
        index.unvouched.difference_update(vouched)
    return rest, typed, foreign
