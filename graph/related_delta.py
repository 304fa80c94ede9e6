"""RELATED_TO kept by delta between upkeeps: what `related_edges` gives, at the cost of the pairs
a change moves rather than of every pair in the corpus.

`related_edges` scores every co-occurring pair and keeps, strongest first, each pair whose two
names both have fewer than `related_max_per_entity` pairs kept before it (a greedy cap). At 10k
documents that is 1.5M pairs scored and sorted for each one-document upkeep (about 1 s).

A change of some documents moves the counts of the names in their units. A pair's strength is a
function of its joint count and its two names' counts, so only the pairs at a name whose count
moved, and the pairs whose joint count moved, score anew; nothing else does while the corpus
scale (`corpus_scale`) stays in its step. The greedy is then repaired in key order (strongest
first, ties by the names), like a sweep: a moved pair leaves its old place and takes its new
one, and a pair whose decision flips changes its names' kept counts from there on. A later pair
of a name decides anew only while that name's kept count before it differs from what it was
(`delta`); elsewhere every decision stands. A pair's kept count before its key is read off the
name's kept keys (at most the cap of them), which the sweep keeps current below its position.

What is held between passes (`RelatedState`): each name's co-occurring partners (to find a moved
name's pairs), and the kept pairs with their keys, weights and counts. The scores of pairs not
kept are not held, but computed for the names the sweep walks. At 10k documents (1.5M
co-occurring pairs, 248k kept) that is 111 MB, and a one-document change costs 0.15 s where
scoring afresh costs 0.85 s; the first scoring that keeps the state costs 1.7 s.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from itertools import combinations, repeat
from operator import itemgetter

import numpy as np

from rayweave.cluster.settings import GraphSettings
from rayweave.graph.cooccurrence import (
    PairCounts,
    corpus_scale,
    related_columns,
    related_strength,
    scored_related,
)
from rayweave.graph.schema import ColumnsDelta, EdgeColumns

Pair = tuple[str, str]
Key = tuple[float, str, str]  # (-strength, a, b): the greedy's order, ties by the names
_INSERT, _LEAVE = 0, 1  # at one key, a pair takes its new place before its old one is left


@dataclass(frozen=True, slots=True)
class UnitsChange:
    """How taking back some units and counting others moved the counts: by name and by pair,
    net, none at 0."""

    df: Mapping[str, int]
    joint: Mapping[Pair, int]

    @classmethod
    def of(cls, gone: Iterable[AbstractSet[str]], new: Iterable[AbstractSet[str]]) -> UnitsChange:
        df: Counter[str] = Counter()
        joint: Counter[Pair] = Counter()
        for names in new:
            df.update(names)
            joint.update(combinations(sorted(names), 2))
        for names in gone:
            df.subtract(names)
            joint.subtract(combinations(sorted(names), 2))
        return cls(
            df={n: v for n, v in df.items() if v}, joint={p: v for p, v in joint.items() if v}
        )


@dataclass(slots=True)
class RelatedState:
    """What the last scoring of `counts` leaves for the next: see module docstring."""

    rule: tuple[int, float, int]  # min support, min NPMI, cap: the settings it was kept under
    total: float  # the corpus scale it was scored at
    partners: dict[str, list[str]]  # name -> every name it co-occurs with
    kept: dict[Pair, tuple[Key, float, int]]  # the kept pairs: key, weight and count as stored
    kept_keys: dict[str, list[Key]]  # name -> its kept pairs' keys, in order

    @classmethod
    def scored(
        cls,
        counts: PairCounts,
        settings: GraphSettings,
        partners: dict[str, list[str]] | None = None,
    ) -> tuple[EdgeColumns, RelatedState]:
        """`related_edges` of `counts`, and the state to keep them by delta from (`partners`:
        the index of these counts, when held already)."""
        pairs = scored_related(counts, settings)
        name = pairs.names.__getitem__
        a = list(map(name, pairs.a.tolist()))
        b = list(map(name, pairs.b.tolist()))
        strength = pairs.strength.tolist()
        weight = list(map(round, strength, repeat(6)))  # as `ScoredRelated.columns` stores
        joint = pairs.joint.astype(np.int64).tolist()
        kept: dict[Pair, tuple[Key, float, int]] = {}
        kept_keys: dict[str, list[Key]] = {}
        for x, y, s, w, n in zip(a, b, strength, weight, joint, strict=True):  # strongest first
            key = (-s, x, y)
            kept[(x, y)] = (key, w, n)
            kept_keys.setdefault(x, []).append(key)
            kept_keys.setdefault(y, []).append(key)
        state = cls(
            rule=_rule(settings),
            total=corpus_scale(counts.sets),
            partners=partner_index(counts) if partners is None else partners,
            kept=kept,
            kept_keys=kept_keys,
        )
        return related_columns(a, b, weight, joint), state  # the names mapped once

    def rescored(
        self, counts: PairCounts, change: UnitsChange, settings: GraphSettings
    ) -> tuple[EdgeColumns, ColumnsDelta | None]:
        """`related_edges` of `counts`, which are the counts this state was kept for, changed by
        `change`, in no particular order; keeps the state for them. With them, what can differ
        from the columns of the state as it was (None: scored afresh, anything can)."""
        self._move_partners(counts, change)
        if self.rule != _rule(settings) or self.total != corpus_scale(counts.sets):
            cols, fresh = RelatedState.scored(counts, settings, self.partners)
            self.total, self.rule, self.kept, self.kept_keys = (
                fresh.total,
                fresh.rule,
                fresh.kept,
                fresh.kept_keys,
            )
            return cols, None
        sweep = _Sweep(self, counts, settings)
        sweep.run(_moved_pairs(self.partners, change))
        return self.columns(), self._delta(sweep.changed)

    def _delta(self, changed: Iterable[Pair]) -> ColumnsDelta:
        now = [pair for pair in changed if pair in self.kept]
        return ColumnsDelta(
            now=_as_columns(now, [self.kept[pair] for pair in now]),
            gone=[pair for pair in changed if pair not in self.kept],
        )

    def columns(self) -> EdgeColumns:
        return _as_columns(list(self.kept), list(self.kept.values()))

    def _move_partners(self, counts: PairCounts, change: UnitsChange) -> None:
        for (a, b), moved in change.joint.items():
            now = counts.joint.get((a, b), 0)
            if now - moved == 0:  # a pair that was not counted before
                self.partners.setdefault(a, []).append(b)
                self.partners.setdefault(b, []).append(a)
            elif now == 0:
                for x, y in ((a, b), (b, a)):
                    self.partners[x].remove(y)
                    if not self.partners[x]:
                        del self.partners[x]


def _as_columns(pairs: list[Pair], held: list[tuple[Key, float, int]]) -> EdgeColumns:
    """Kept pairs as columns, from their held weights and counts. Mapped in C: a `round` and a
    look-up of the count per pair took 0.3 s at 10k documents."""
    return related_columns(
        list(map(itemgetter(0), pairs)),
        list(map(itemgetter(1), pairs)),
        list(map(itemgetter(1), held)),
        list(map(itemgetter(2), held)),
    )


def partner_index(counts: PairCounts) -> dict[str, list[str]]:
    """Every name's co-occurring names."""
    out: dict[str, list[str]] = {}
    for a, b in counts.joint:
        out.setdefault(a, []).append(b)
        out.setdefault(b, []).append(a)
    return out


def _rule(settings: GraphSettings) -> tuple[int, float, int]:
    return (
        settings.related_min_support,
        settings.related_min_npmi,
        settings.related_max_per_entity,
    )


def _moved_pairs(partners: Mapping[str, list[str]], change: UnitsChange) -> set[Pair]:
    """The pairs whose strength can have moved: every pair at a name whose count moved, and
    every pair whose joint count did (gone ones included)."""
    out = set(change.joint)
    for x in change.df:
        for y in partners.get(x, ()):
            out.add((x, y) if x < y else (y, x))
    return out


class _Sweep:
    """One repair of the greedy cap, in key order (see module docstring)."""

    def __init__(self, state: RelatedState, counts: PairCounts, settings: GraphSettings) -> None:
        self.state = state
        self.counts = counts
        self.settings = settings
        self.cap = settings.related_max_per_entity
        self.delta: Counter[str] = Counter()  # name -> kept count now less before, here
        self.heap: list[tuple[Key, int]] = []
        self.queued: set[tuple[Key, int]] = set()
        self.order: dict[str, list[Key]] = {}  # name -> its candidate pairs' keys now, in order
        # The pairs whose kept place, weight or count may differ from before: the moved ones
        # and those whose decision flipped; every other kept pair is as it was.
        self.changed: set[Pair] = set()

    def run(self, moved: set[Pair]) -> None:
        state = self.state
        self.changed |= moved
        new = dict(zip(moved, self.keys(list(moved)), strict=True))
        for pair, key in new.items():
            old = state.kept.get(pair)
            if old is not None:
                self.push(old[0], _LEAVE)
            if key is not None:
                self.push(key, _INSERT)
        while self.heap:
            key, kind = heapq.heappop(self.heap)
            pair = (key[1], key[2])
            if kind == _LEAVE:  # a moved pair's old place, kept before: it stops counting
                if new[pair] != key:  # else its new place, decided first, holds the key
                    self.mark(key, kept=False)
                    self.drop(pair, key)
                self.shift(key, -1)
                continue
            counted = [bisect_left(state.kept_keys.get(x, ()), key) for x in pair]
            keep = all(n < self.cap for n in counted)
            was = pair not in new and pair in state.kept  # a moved pair's old place leaves apart
            if pair in new or keep != was:
                self.mark(key, kept=keep)
                if keep:
                    state.kept[pair] = (key, round(-key[0], 6), self.counts.joint[pair])
                else:
                    self.drop(pair, key)
            if keep != was:
                self.shift(key, 1 if keep else -1)
            else:
                for x in pair:
                    if self.delta[x]:
                        self.push_next(x, key)

    def shift(self, key: Key, by: int) -> None:
        """Both names of the pair at `key` count `by` more kept pairs from here on than before."""
        for x in key[1:]:
            self.delta[x] += by
            self.push_next(x, key)

    def drop(self, pair: Pair, key: Key) -> None:
        """`pair` no longer kept at `key` (kept at another key, it stays)."""
        was = self.state.kept.get(pair)
        if was is not None and was[0] == key:
            del self.state.kept[pair]

    def mark(self, key: Key, *, kept: bool) -> None:
        self.changed.add((key[1], key[2]))
        lists = self.state.kept_keys
        for x in key[1:]:
            keys = lists.get(x, [])
            i = bisect_left(keys, key)
            held = i < len(keys) and keys[i] == key
            if kept and not held:
                keys.insert(i, key)
                lists[x] = keys
            elif held and not kept:
                del keys[i]
                if not keys:
                    del lists[x]

    def push(self, key: Key, kind: int) -> None:
        if (key, kind) not in self.queued:
            self.queued.add((key, kind))
            heapq.heappush(self.heap, (key, kind))

    def push_next(self, x: str, key: Key) -> None:
        """Queue `x`'s next candidate pair after `key`, when its kept count there has moved."""
        if not self.delta[x]:
            return
        order = self.order.get(x)
        if order is None:
            order = self.order[x] = self.candidates(x)
        i = bisect_right(order, key)
        if i < len(order):
            self.push(order[i], _INSERT)

    def candidates(self, x: str) -> list[Key]:
        pairs = [(x, y) if x < y else (y, x) for y in self.state.partners.get(x, ())]
        return sorted(k for k in self.keys(pairs) if k is not None)

    def keys(self, pairs: list[Pair]) -> list[Key | None]:
        """Each pair's key now (None: not a candidate), scored as `scored_related` scores."""
        counts, cfg = self.counts, self.settings
        joint = np.fromiter((counts.joint.get(p, 0) for p in pairs), np.float64, len(pairs))
        df = counts.df
        a = np.fromiter((df[p[0]] for p in pairs), np.float64, len(pairs))
        b = np.fromiter((df[p[1]] for p in pairs), np.float64, len(pairs))
        support = joint >= cfg.related_min_support
        ok = np.zeros(len(pairs), dtype=bool)
        strength = np.zeros(len(pairs))
        if support.any():
            passed, scored = related_strength(
                joint[support], a[support], b[support], self.state.total, cfg
            )
            ok[support] = passed
            strength[support] = scored
        return [
            (-s, p[0], p[1]) if good else None
            for p, s, good in zip(pairs, strength.tolist(), ok.tolist(), strict=True)
        ]
