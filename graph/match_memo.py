"""The gazetteer pass of the last corpus pass, kept so that the next one matches only what changed.

Matching every chunk against every known name was the largest part of a one-document upkeep on
10,406 documents (docs/experiments/2026-11-27-match-memo.md), and nearly all of it repeats the
previous pass: a chunk's matches change only when its text changes or when a name that can
start at one of its words is added, dropped, re-resolved or changes its casing rule (see
`Gazetteer`). So each pass keeps, per chunk, a digest of its text, the first words its windows
can start with (`window_keys`) and its matches, beside the gazetteer they were made with; the
next pass compares the two gazetteers and matches anew only the new or edited chunks and those
that hold a first word of a changed name. The result equals a full pass, whatever the store
did in between: the memo depends on texts and names only, never on the store's version.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rayweave.cluster.types import Chunk
from rayweave.graph.cache_file import read_cache, write_cache
from rayweave.graph.corpus_phases import Lexicon
from rayweave.graph.mentions import Gazetteer, Match
from rayweave.graph.names import first_words, window_keys
from rayweave.graph.share import Found

if TYPE_CHECKING:
    from rayweave.graph.tally_memo import HeldCounts

log = logging.getLogger(__name__)

# Bump when what a text matches changes for the same names (`mentions._matches`,
# `names.name_ngrams`, `names.normalize_name`): a memo of the old rules is then ignored.
_FORMAT = 1


@dataclass(frozen=True, slots=True)
class MemoRow:
    digest: bytes  # of the chunk's text
    keys: tuple[int, ...]  # its window keys, as indexes into `MatchMemo.words`
    found: Mapping[str, Match]
    # The very text digested, held in memory only: a held input hands the next pass the same
    # string for a chunk it did not read again, which then is not digested again (40k chunks
    # at 10k documents).
    text: str | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class MatchMemo:
    """Every chunk's matches under `forms`/`cased`/`max_ngram` (a `Gazetteer` without its
    derived `starts`); `words` numbers the window keys that rows refer to."""

    max_ngram: int
    forms: Mapping[str, Sequence[str]]
    cased: frozenset[str]
    # Numbered as first met, only ever added to: a later pass adds its new words in place
    # (entries that a pass failing half way added name no row of this memo's).
    words: dict[str, int]
    rows: Mapping[str, MemoRow]
    made: str = ""  # the pass that saved it, named alike in that pass's edge memo
    # Phase 2's counts of these matches, for the next pass to take (then none is left to be
    # used twice, or after a pass that failed half way); held in memory only, not saved.
    counts: list[HeldCounts] = field(default_factory=list, compare=False)

    def take_counts(self) -> HeldCounts | None:
        return self.counts.pop() if self.counts else None


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def changed_forms(memo: MatchMemo, gaz: Gazetteer) -> set[str]:
    """Forms added, dropped or resolved to other ids since the memo, and forms whose casing rule
    changed."""
    old, new = memo.forms, gaz.forms
    changed = {form for form, ids in new.items() if old.get(form) != ids}
    changed.update(form for form in old if form not in new)
    changed |= memo.cased ^ gaz.cased
    return changed


def _changed_forms(memo: MatchMemo, gaz: Gazetteer) -> set[str]:
    """`changed_forms`, from the gazetteer's own account when it was patched from the memo's."""
    if gaz.since is not None and gaz.since[0] is memo.forms:
        return set(gaz.since[1]) | (memo.cased ^ gaz.cased)
    return changed_forms(memo, gaz)


def memo_matches(
    gaz: Gazetteer, chunks: Sequence[Chunk], memo: MatchMemo | None
) -> tuple[Found, MatchMemo, set[str]]:
    """The chunks' matches under `gaz` (equal to `gaz.match` over each text), the memo of them,
    and the ids of the chunks matched anew. The memo's words are added to in place, and the
    matches are shared with the new memo's rows (`Found` is read-only)."""
    words: dict[str, int] = {}
    stale: frozenset[int] = frozenset()
    rows: Mapping[str, MemoRow] = {}
    if memo is not None and memo.max_ngram == gaz.max_ngram:
        words = memo.words
        changed = first_words(_changed_forms(memo, gaz))
        stale = frozenset(words[w] for w in changed if w in words)
        rows = memo.rows
    found: dict[str, Mapping[str, Match]] = {}
    new_rows: dict[str, MemoRow] = {}
    rematched: set[str] = set()
    for chunk in chunks:
        text = chunk.text
        row = rows.get(chunk.id)
        digest = row.digest if row is not None and row.text is text else _digest(text)
        if row is None or row.digest != digest or not stale.isdisjoint(row.keys):
            keys = tuple(words.setdefault(k, len(words)) for k in window_keys(text))
            row = MemoRow(digest=digest, keys=keys, found=gaz.match(text), text=text)
            rematched.add(chunk.id)
        elif row.text is not text:
            row = MemoRow(digest=digest, keys=row.keys, found=row.found, text=text)
        new_rows[chunk.id] = row
        found[chunk.id] = row.found
    new = MatchMemo(
        max_ngram=gaz.max_ngram, forms=gaz.forms, cased=gaz.cased, words=words, rows=new_rows
    )
    return found, new, rematched


class MemoizedMatches:
    """A `FindMatches` (`graph/corpus_phases.py`) that starts from `memo` and leaves the new
    memo and the chunks it matched anew on itself (`made`: the pass that saved `memo`)."""

    def __init__(self, memo: MatchMemo | None) -> None:
        self.memo = memo
        self.made = "" if memo is None else memo.made
        self.rematched_ids: set[str] | None = None

    @property
    def rematched(self) -> int | None:
        return None if self.rematched_ids is None else len(self.rematched_ids)

    def __call__(self, lex: Lexicon, chunks: Sequence[Chunk]) -> Found:
        found, self.memo, self.rematched_ids = memo_matches(lex.gazetteer(), chunks, self.memo)
        return found


def load_memo(path: Path) -> MatchMemo | None:
    """The memo saved at `path`; None when there is none or it cannot be read (it is a cache:
    the pass then matches every chunk)."""
    data = read_cache(path, _FORMAT, what="match memo")
    if data is None:
        return None
    try:
        return MatchMemo(
            max_ngram=int(data["max_ngram"]),
            forms=data["forms"],
            cased=frozenset(data["cased"]),
            words=data["words"],
            rows={cid: MemoRow(*row) for cid, row in data["rows"].items()},
            made=str(data.get("made", "")),
        )
    except (KeyError, TypeError, ValueError) as exc:
        log.warning("match memo %s is malformed (%s); matching every chunk", path, exc)
        return None


def save_memo(path: Path, memo: MatchMemo, *, stop: threading.Event | None = None) -> None:
    rows = {cid: (r.digest, r.keys, r.found) for cid, r in memo.rows.items()}
    write_cache(
        path,
        _FORMAT,
        {
            "max_ngram": memo.max_ngram,
            "forms": memo.forms,
            "cased": memo.cased,
            "words": memo.words,
            "rows": rows,
            "made": memo.made,
        },
        stop=stop,
    )
