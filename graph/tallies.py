"""Taking counts back out of a corpus tally, so that a change is counted by its delta.

A tally of the corpus (name, document and pair frequencies) is a sum over its documents. An
update takes a changed document's old counts back and adds its new ones, and the result must
equal a tally of the corpus counted anew: so no key is left at 0 (a fresh count never holds
one), and taking back more than was added is a bug in the caller, not a count below 0.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Mapping
from typing import TypeVar

_K = TypeVar("_K", bound=Hashable)


def take(counts: Counter[_K], other: Mapping[_K, int]) -> None:
    """Subtract `other` from `counts`."""
    for key, n in other.items():
        _set(counts, key, counts.get(key, 0) - n)


def take_each(counts: Counter[_K], keys: Iterable[_K]) -> None:
    """Subtract 1 for every key in `keys` (repeats count again)."""
    for key in keys:
        _set(counts, key, counts.get(key, 0) - 1)


def _set(counts: Counter[_K], key: _K, left: int) -> None:
    if left > 0:
        counts[key] = left
    elif left == 0:
        del counts[key]
    else:
        raise ValueError(f"{key!r} taken back more often than it was counted")
