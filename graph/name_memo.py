"""Phase 1 of the last corpus pass, per document, held so that the next one recomputes only the
documents a write touched.

A document's name tally (`corpus_phases.tally_names`: its candidate names, keywords, references)
is a function of its own chunks alone, and tallies merge by key in any order, as the cluster
rebuild's shares do. So a process that holds the pass's input (`graph/corpus_content.py`)
knows which documents changed since the last pass, and the merged tally is every other
document's tally from then, plus the changed ones computed anew: at 10k documents the merge
costs 0.46 s against 1.3 s for the phase. The tallies are held only in memory, beside the
content they were computed from; reused only when that content is the one this pass started
from.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from rayweave.cluster.types import Chunk
from rayweave.graph.corpus_phases import NameTally, tally_names_and_kept
from rayweave.graph.entities import CollectedNames
from rayweave.graph.share import Kept, Share
from rayweave.graph.store.change_log import StoreVersion


@dataclass(frozen=True, slots=True)
class NameMemo:
    """Each document's phase 1 over the content at `at`."""

    at: StoreVersion
    documents: Mapping[str, tuple[NameTally, Kept]]


class MemoizedNames:
    """A `NamesOf` (`graph/corpus_phases.py`) that reuses `memo`'s tally of every document not
    in `changed` (None: reuse nothing), and keeps every document's for the next pass."""

    def __init__(self, memo: NameMemo | None, *, changed: AbstractSet[str] | None) -> None:
        self._old = memo.documents if memo is not None and changed is not None else {}
        self._changed = changed or frozenset()
        self.documents: dict[str, tuple[NameTally, Kept]] = {}
        self.reused = 0

    def __call__(self, share: Share) -> tuple[NameTally, Kept]:
        if share.documents:  # titles are placed by the documents' order in the whole share
            self._old, self.documents = {}, {}
            return tally_names_and_kept(share)
        grouped: dict[str, list[Chunk]] = {}
        for c in share.chunks:
            grouped.setdefault(c.doc_id, []).append(c)
        names = NameTally()  # fresh: merging into it leaves the held tallies as they are
        titles: dict[str, str] = {}
        headings: dict[str, str] = {}
        definitions: dict[str, list[tuple[str, bool]]] = {}
        doc_keywords: dict[str, set[str]] = {}
        for doc_id, own in grouped.items():
            found = None if doc_id in self._changed else self._old.get(doc_id)
            if found is None:
                found = tally_names_and_kept(Share(own, share.mentions, share.extractions))
            else:
                self.reused += 1
            self.documents[doc_id] = found
            tally, kept = found
            names.merge(tally)
            titles.update(kept.names.titles)
            headings.update(kept.names.headings)
            definitions.update(kept.names.definitions)
            doc_keywords.update(kept.doc_keywords)
        collected = CollectedNames(titles=titles, headings=headings, definitions=definitions)
        return names, Kept(names=collected, doc_keywords=doc_keywords)

    def memo(self, at: StoreVersion) -> NameMemo:
        return NameMemo(at=at, documents=self.documents)
