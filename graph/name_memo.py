"""Phase 1 of the last corpus pass, per document, held so that the next one recomputes only the
documents a write touched.

A document's name tally (`corpus_phases.tally_names`: its candidate names, keywords, references)
is a function of its own chunks alone, and tallies merge by key in any order, as the cluster
rebuild's shares do. So a process that holds the pass's input (`graph/corpus_content.py`)
knows which documents changed since the last pass. The merged tally is carried too: the next
pass takes back what the changed and deleted documents gave then and adds what they give now
(every count in a tally subtracts, `NameTally.unmerge`), instead of merging every document's
tally again (2.6 s of a one-document upkeep at 10k documents). The tallies are held only in
memory, beside the content they were computed from; reused only when that content is the one
this pass started from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from rayweave.cluster.settings import GraphSettings
from rayweave.cluster.types import Chunk
from rayweave.graph.corpus_phases import Lexicon, NameTally, lexicon, tally_names_and_kept
from rayweave.graph.entities import CollectedNames, EntityResolver, RowMemo
from rayweave.graph.gazetteer_delta import FormIndex, index_gazetteer, patched_gazetteer
from rayweave.graph.mentions import Gazetteer
from rayweave.graph.schema import EntityRow
from rayweave.graph.share import Kept, Share
from rayweave.graph.store.change_log import StoreVersion


@dataclass(frozen=True, slots=True)
class NameMemo:
    """Each document's phase 1 over the content at `at`, and their merged tally."""

    at: StoreVersion
    documents: Mapping[str, tuple[NameTally, Kept]]
    # For the next pass to take, and change as it goes (then none is left to be used twice, or
    # after a pass that failed half way: that pass merges every document's tally anew), with
    # the entity rows and the gazetteer index of its lexicon.
    merged: list[Merged] = field(default_factory=list, compare=False)

    def take_merged(self) -> Merged | None:
        return self.merged.pop() if self.merged else None


@dataclass(frozen=True, slots=True)
class Merged:
    """The merged tally of a pass, with its lexicon's entity rows and gazetteer index."""

    names: NameTally
    rows: RowMemo | None = None
    forms: FormIndex | None = None


class MemoizedNames:
    """A `NamesOf` (`graph/corpus_phases.py`) that reuses `memo`'s tally of every document not
    in `changed` (None: reuse nothing), and keeps every document's for the next pass."""

    def __init__(self, memo: NameMemo | None, *, changed: AbstractSet[str] | None) -> None:
        self._old: Mapping[str, tuple[NameTally, Kept]] = {}
        merged = None
        if memo is not None and changed is not None:
            self._old, merged = memo.documents, memo.take_merged()
        self._merged: NameTally | None = None if merged is None else merged.names
        self._rows: RowMemo | None = None if merged is None else merged.rows
        self._forms: FormIndex | None = None if merged is None else merged.forms
        self._changed = changed or frozenset()
        self.documents: dict[str, tuple[NameTally, Kept]] = {}
        self.total: NameTally | None = None
        self.touched: set[str] | None = None  # names whose counts changed in the carried tally
        self.rows: RowMemo | None = None
        self.forms: FormIndex | None = None
        self.moved: set[str] | None = None  # names whose rows or forms were remade (None: all)
        self.reused = 0

    def __call__(self, share: Share) -> tuple[NameTally, Kept]:
        if share.documents:  # titles are placed by the documents' order in the whole share
            self._old, self.documents, self._merged = {}, {}, None
            return tally_names_and_kept(share)
        grouped: dict[str, list[Chunk]] = {}
        for c in share.chunks:
            grouped.setdefault(c.doc_id, []).append(c)
        # The carried tally less the documents that went; else a fresh one (merging into it
        # leaves the held tallies as they are).
        names, carried = (NameTally(), False) if self._merged is None else (self._merged, True)
        touched: set[str] = set()
        if carried:
            for doc_id in self._old.keys() - grouped.keys():
                names.unmerge(gone := self._old[doc_id][0])
                touched.update(gone.candidates)
        titles: dict[str, str] = {}
        headings: dict[str, str] = {}
        definitions: dict[str, list[tuple[str, bool]]] = {}
        doc_keywords: dict[str, set[str]] = {}
        for doc_id, own in grouped.items():
            was = self._old.get(doc_id)
            found = None if doc_id in self._changed else was
            if found is None:
                found = tally_names_and_kept(Share(own, share.mentions, share.extractions))
                if carried and was is not None:
                    names.unmerge(was[0])
                    touched.update(was[0].candidates)
                if carried:
                    names.merge(found[0])
                    touched.update(found[0].candidates)
            else:
                self.reused += 1
            self.documents[doc_id] = found
            tally, kept = found
            if not carried:
                names.merge(tally)
            titles.update(kept.names.titles)
            headings.update(kept.names.headings)
            definitions.update(kept.names.definitions)
            doc_keywords.update(kept.doc_keywords)
        collected = CollectedNames(titles=titles, headings=headings, definitions=definitions)
        self._merged, self.total = None, names
        self.touched = touched if carried else None
        return names, Kept(names=collected, doc_keywords=doc_keywords)

    def lexicon(
        self,
        names: NameTally,
        settings: GraphSettings,
        *,
        known: Mapping[str, Sequence[str]] | None = None,
    ) -> Lexicon:
        """The lexicon of `names`, remaking the entity rows and gazetteer forms of only the
        names the carried tally changed at (all of them after a pass that merged every
        document's tally)."""
        carried = self.touched is not None and names is self.total
        previous = self._rows if carried else None
        index, self._forms = (self._forms if carried else None), None  # patched in place

        def rows(resolver: EntityResolver) -> list[EntityRow]:
            self.moved = resolver.moved_since(previous, self.touched or ())
            made, self.rows = resolver.rows_since(previous, self.moved)
            return made

        def gazetteer_of(
            resolver: EntityResolver, rows: Sequence[EntityRow], max_ngram: int
        ) -> Gazetteer:
            assert self.rows is not None  # the lexicon's rows are made first
            groups = self.rows.rows
            if index is None or self.moved is None or resolver.known:
                made, self.forms = index_gazetteer(resolver, groups, max_ngram)
                return made
            self.forms = index
            return patched_gazetteer(index, resolver, groups, max_ngram, self.moved)

        return lexicon(names, settings, known=known, rows=rows, gazetteer_of=gazetteer_of)

    def memo(self, at: StoreVersion) -> NameMemo:
        """The memo for the next pass, which carries this pass's merged tally: the pass's
        lexicon takes it over (`corpus_phases.lexicon`), and is done with it by then."""
        merged = [] if self.total is None else [Merged(self.total, self.rows, self.forms)]
        return NameMemo(at=at, documents=self.documents, merged=merged)
