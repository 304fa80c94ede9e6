"""Which corpus facts a document's phase 3 read, and which of them have moved since.

`recording` wraps a pass's `Facts` so that every lookup a document's rules make is written
down with its answer (the gazetteer is not wrapped: `graph/match_memo.py` already knows which
chunks a change of names can reach). A part computed from recorded facts stays right for as
long as each of those lookups would answer the same, which `moved` checks for a whole table
of them at once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from typing import Any, Literal, get_args

from rayweave.graph.document_edges import Facts
from rayweave.graph.entities import Resolves
from rayweave.graph.schema import NodeRef

Kind = Literal["resolve", "symbol", "generic", "target", "frequent"]
KINDS: tuple[Kind, ...] = get_args(Kind)
Reads = dict[Kind, dict[str, Any]]  # kind -> key -> the answer read


def recording(facts: Facts) -> tuple[Facts, Reads]:
    """`facts` answering as before, and the table every answer is written to."""
    reads: Reads = {kind: {} for kind in KINDS}
    watched = dataclasses.replace(
        facts,
        resolver=_Resolver(facts.resolver, reads["resolve"]),
        symbols=_Members(facts.symbols, reads["symbol"]),
        generic=_Members(facts.generic, reads["generic"]),
        targets=_Lookups(facts.targets, reads["target"]),
        frequent=_Answers(facts.frequent, reads["frequent"]),
    )
    return watched, reads


def answer(facts: Facts, kind: Kind, key: str) -> Any:
    """What `facts` answer now to a lookup of `kind`, as `recording` writes it down."""
    if kind == "resolve":
        return tuple(facts.resolver.resolve(key))
    if kind == "symbol":
        return key in facts.symbols
    if kind == "generic":
        return key in facts.generic
    if kind == "target":
        return facts.targets.get(key)
    return facts.frequent(key)


def moved(
    reads: Reads, facts: Facts, *, among: Mapping[Kind, AbstractSet[str]] | None = None
) -> dict[Kind, set[str]]:
    """Per kind, the keys of `reads` that `facts` now answer otherwise. `among`: for the kinds
    it names, the only keys that can answer otherwise (as the names a lexicon moved, for
    "resolve"); the others are not asked."""
    out: dict[Kind, set[str]] = {}
    for kind, table in reads.items():
        only = None if among is None else among.get(kind)
        if only is None:
            out[kind] = {key for key, old in table.items() if answer(facts, kind, key) != old}
        else:
            out[kind] = {
                key for key in only if key in table and answer(facts, kind, key) != table[key]
            }
    return out


class _Resolver:
    __slots__ = ("_inner", "_log")

    def __init__(self, inner: Resolves, log: dict[str, Any]) -> None:
        self._inner, self._log = inner, log

    def resolve(self, norm: str) -> list[str]:
        ids = self._inner.resolve(norm)
        self._log[norm] = tuple(ids)
        return ids


class _Members(AbstractSet[str]):
    """A set that may only be asked whether it holds something (iterating would read it all)."""

    __slots__ = ("_inner", "_log")

    def __init__(self, inner: AbstractSet[str], log: dict[str, Any]) -> None:
        self._inner, self._log = inner, log

    def __contains__(self, key: object) -> bool:
        held = key in self._inner
        self._log[str(key)] = held
        return held

    def __iter__(self) -> Iterator[str]:
        raise TypeError("a recorded set answers membership only")

    def __len__(self) -> int:
        raise TypeError("a recorded set answers membership only")


class _Lookups(Mapping[str, NodeRef]):
    """A mapping that may only be asked for keys (`get`, `[]`, `in` go through `__getitem__`)."""

    __slots__ = ("_inner", "_log")

    def __init__(self, inner: Mapping[str, NodeRef], log: dict[str, Any]) -> None:
        self._inner, self._log = inner, log

    def __getitem__(self, key: str) -> NodeRef:
        value = self._inner.get(key)
        self._log[key] = value
        if value is None:
            raise KeyError(key)
        return value

    def __iter__(self) -> Iterator[str]:
        raise TypeError("a recorded mapping answers lookups only")

    def __len__(self) -> int:
        raise TypeError("a recorded mapping answers lookups only")


class _Answers:
    __slots__ = ("_inner", "_log")

    def __init__(self, inner: Callable[[str], bool], log: dict[str, Any]) -> None:
        self._inner, self._log = inner, log

    def __call__(self, key: str) -> bool:
        value = self._inner(key)
        self._log[key] = value
        return value


__all__ = ["KINDS", "Kind", "Reads", "answer", "moved", "recording"]
