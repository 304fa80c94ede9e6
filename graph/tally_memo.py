"""Phase 2's counts of the last corpus pass, carried so that the next one counts only the
documents that changed.

Phase 2 (`corpus_phases.tally_matches`) counts, over every chunk, the units and the chunks that
name each entity: what decides which names are too common to link and how rare a co-mention
is. A document's share of those counts is a function of its chunks and their gazetteer matches
alone (units never span documents). So a pass that holds the last one's counts takes back what
the documents read since, or holding a chunk matched anew, gave then and adds what they give
now, instead of counting every chunk (0.13 s of a one-document upkeep at 10k documents). What
they gave then is counted again from the last pass's input and match memo, which the pass holds
anyway: nothing per document is kept. Reference targets, which keep the lowest rank offered and
cannot be taken back, are found afresh.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Protocol

from rayweave.cluster.types import Chunk
from rayweave.graph.corpus_phases import Lexicon, MatchTally, match_counts, tally_matches
from rayweave.graph.edges import reference_targets
from rayweave.graph.match_memo import MatchMemo, MemoizedMatches
from rayweave.graph.share import Found, Share


@dataclass(frozen=True, slots=True)
class HeldCounts:
    """Phase 2's counts as a pass left them (its tally, targets aside), under its
    `has_sections`, which decides every unit."""

    has_sections: bool
    tally: MatchTally


class HoldsChunks(Protocol):
    """A document's content, as `graph/corpus_content.py` holds it."""

    @property
    def chunks(self) -> Sequence[Chunk]: ...


class MemoizedTally:
    """A `TallyOf` (`graph/corpus_phases.py`) that starts from the counts held with `memo` (the
    match memo that `matches` starts from): `before` is the input of the pass that left them,
    `after` this pass's, `read` the documents that differ between the two (None: not known).
    It counts every chunk when it cannot start from them, and leaves the counts for the next
    pass on itself (`held`)."""

    def __init__(
        self,
        memo: MatchMemo | None,
        *,
        before: Mapping[str, HoldsChunks] | None,
        after: Mapping[str, HoldsChunks],
        read: AbstractSet[str] | None,
        matches: MemoizedMatches,
    ) -> None:
        fits = memo is not None and before is not None and read is not None
        self._memo = memo if fits else None
        self._start = None if memo is None or not fits else memo.take_counts()
        self._before: Mapping[str, HoldsChunks] = before or {}
        self._after = after
        self._read: AbstractSet[str] = read or frozenset()
        self._matches = matches
        self.held: HeldCounts | None = None
        self.recounted: int | None = None  # documents counted again (None: every chunk)

    def __call__(self, share: Share, lex: Lexicon, found: Found) -> MatchTally:
        tally = self._carried(share, lex, found)
        if tally is None:
            tally = tally_matches(share, lex, found)
        else:
            tally.targets = reference_targets(share.chunks, share.documents, lex.references)
        self.held = HeldCounts(lex.has_sections, tally)
        return tally

    def _carried(self, share: Share, lex: Lexicon, found: Found) -> MatchTally | None:
        start, memo, rematched = self._start, self._memo, self._matches.rematched_ids
        self._start = None  # changed in place from here: used once
        if start is None or memo is None or rematched is None:
            return None
        if start.has_sections != lex.has_sections:
            return None
        redo = set(self._read)
        if rematched:
            redo.update(c.doc_id for c in share.chunks if c.id in rematched)
        if 2 * len(redo) > len(self._after):  # counting every chunk is then cheaper
            return None
        old = memo.rows
        tally = start.tally
        for doc_id in sorted(redo):
            was = self._before.get(doc_id)
            if was is not None:
                if any(c.id not in old for c in was.chunks):
                    return None  # the memo does not hold what this document gave
                then = {c.id: old[c.id].found for c in was.chunks}
                tally.take_counts(match_counts(was.chunks, then, has_sections=lex.has_sections))
            now = self._after.get(doc_id)
            if now is not None:
                own = {c.id: found[c.id] for c in now.chunks}
                tally.merge(match_counts(now.chunks, own, has_sections=lex.has_sections))
        self.recounted = len(redo)
        return tally
