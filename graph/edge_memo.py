"""Phase 3 of the last corpus pass, per document, kept so that the next one recomputes only the
documents that a change can reach.

A document's part (`graph/document_edges.py`) is a function of its own chunks and of the
corpus facts it read, and a one-document change moves the own edges of almost no other
document (docs/experiments/2026-11-28-collector-pause.md: at most one of 10,405). So each pass
keeps, per document, a digest of what it holds, the keys of the facts its rules read
(`graph/fact_reads.py`) and its tally, with one table of every answer read. The next pass
reuses a document's part when its digest is the same, no fact it read answers otherwise, the
gazetteer pass matched none of its chunks anew (its sentences' matches are then unchanged
too, `graph/match_memo.py`) and no write since has touched its nodes.

A reused document's own edges are not recomputed at all: the store holds them already,
because the pass that kept the memo synced them and nothing has touched their ends since. So
the memo must come from the same pass as the layer snapshot the sync starts from and the match
memo the gazetteer pass starts from: it names the snapshot's version, and a token saved in
both memos. Otherwise it is ignored, and every document is computed (and recorded) anew.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import pickle
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Protocol

from rayweave.cluster.settings import GraphSettings
from rayweave.cluster.types import Chunk, Entity
from rayweave.graph.cache_file import read_cache, write_cache
from rayweave.graph.cooccurrence import (
    PairCounts,
    keyword_topics,
    related_edges,
    topics_from_counts,
)
from rayweave.graph.corpus_phases import Parts
from rayweave.graph.document_edges import DocumentPart, DocumentTally, Facts, document_part
from rayweave.graph.fact_reads import KINDS, Kind, Reads, moved, recording
from rayweave.graph.match_memo import MemoizedMatches
from rayweave.graph.related_delta import RelatedState, UnitsChange
from rayweave.graph.schema import ColumnsDelta, EdgeColumns, EdgeRow, RowsDelta, TopicRow
from rayweave.graph.share import Found, Kept, Share, document_share, documents_of
from rayweave.graph.store.change_log import StoreVersion
from rayweave.graph.topic_delta import BelongsState

log = logging.getLogger(__name__)

# Bump when what a document's part is, or what it reads, changes for the same inputs.
_FORMAT = 1


@dataclass(frozen=True, slots=True)
class MemoEntry:
    digest: bytes  # of the document's chunks, their extractors' output and its kept names
    reads: Mapping[Kind, tuple[str, ...]]  # the keys of the facts its part read, by kind
    tally: DocumentTally


@dataclass(frozen=True, slots=True, kw_only=True)
class EdgeMemo:
    """Every document's phase 3 as the pass `made` left it: the snapshot it synced from is at
    `at`; `header` names what every part depends on alike (settings, format)."""

    made: str
    at: StoreVersion
    header: str
    facts: Reads  # every answer a kept part read (and, carried on, some no part reads now)
    documents: Mapping[str, MemoEntry]
    # The documents' units counted, for the next pass to take (then none is left to be used
    # twice, or after a pass that failed half way); not saved to files.
    units: list[HeldUnits] = field(default_factory=list, compare=False)

    def take_units(self) -> HeldUnits | None:
        return self.units.pop() if self.units else None


@dataclass(frozen=True, slots=True)
class HeldUnits:
    """The documents' units counted (`PairCounts.count`), and RELATED_TO as scored of exactly
    these counts, to keep by delta (None: not scored); BELONGS_TO as the same pass made it."""

    counts: PairCounts
    related: RelatedState | None = None
    belongs: BelongsState | None = None


def _header(facts: Facts) -> str:
    return f"{_FORMAT}|{facts.has_sections}|{facts.settings!r}"


# A slots dataclass pickles field by field in Python (`dataclasses.fields` per object): as
# tuples of its fields, 10k documents' chunks and mentions digest in a third of the time.
_CHUNK_FIELDS = attrgetter(*(f.name for f in dataclasses.fields(Chunk)))
_ENTITY_FIELDS = attrgetter(*(f.name for f in dataclasses.fields(Entity)))


def _digest(doc_id: str, share: Share, kept: Kept) -> bytes:
    ids = [c.id for c in share.chunks]
    held = (
        [_CHUNK_FIELDS(c) for c in share.chunks],
        [_entity_fields(share.mentions.get(i)) for i in ids],
        [share.extractions.get(i) for i in ids],
        kept.names,
        sorted(kept.doc_keywords.get(doc_id, ())),
    )
    blob = pickle.dumps(held, protocol=pickle.HIGHEST_PROTOCOL)
    return hashlib.blake2b(blob, digest_size=16).digest()


def _entity_fields(mentions: Sequence[Entity] | None) -> list[tuple[object, ...]] | None:
    return None if mentions is None else [_ENTITY_FIELDS(e) for e in mentions]


class MovesNames(Protocol):
    """A pass's phase 1 that knows which names its lexicon remade since the last pass's
    (`graph/name_memo.py`; None: every name)."""

    @property
    def moved(self) -> AbstractSet[str] | None: ...


class MemoizedParts:
    """A `PartsOf` (`graph/corpus_phases.py`) that reuses `memo`'s part of every document it
    may, and records what the others read.

    `same_input`: the documents whose chunks, mentions and extractions are known to be those
    the memo's pass read (their digests are then the memo's, not computed again: 1.0 s of a
    one-document upkeep at 10k documents); `matches`: the pass's gazetteer pass, run before the
    call, from the match memo of the memo's pass; `at`: the version of the layer snapshot this
    pass syncs from, which must be the memo's; `blocked`: the documents whose stored edges a
    write may have changed since (None: reuse nothing, as when the layer is read whole);
    `held`: whether the memo it leaves is held in memory for the next pass, which is then
    handed RELATED_TO's state to keep by delta (building it costs twice a plain scoring, lost
    with a memo that only files keep); `names`: the pass's phase 1, whose lexicon says which
    names' resolution can have moved (then only those of the memo's are asked again); `owned`:
    the memo is the pass's to change in place (its keeper handed it over,
    `MemoKeeper.hand_over`), so its table of answers read is carried on, not copied key by key
    for every reused document (423k keys, 0.06 s of a one-document upkeep at 10k documents).
    Leaves what to keep (`memo`), the ids of the documents it reused, whose edges it leaves
    out, and what of RELATED_TO moved when kept by delta (`related_delta`, for the sync to
    compare alone) on itself; hands on the documents' units counted from the memo's counts
    (`_units`)."""

    def __init__(
        self,
        memo: EdgeMemo | None,
        *,
        same_input: AbstractSet[str] | None = None,
        matches: MemoizedMatches,
        at: StoreVersion | None,
        blocked: AbstractSet[str] | None,
        held: bool = False,
        names: MovesNames | None = None,
        owned: bool = False,
    ) -> None:
        fits = memo is not None and memo.made == matches.made != "" and memo.at == at
        self._old = memo if fits and blocked is not None else None
        self._matches = matches
        # The names whose resolution can have moved since the memo's pass, from its lexicon:
        # known to be that pass's only when the input is (`same_input`).
        self._names = names if same_input is not None else None
        self._blocked: AbstractSet[str] = blocked or frozenset()
        self._same: AbstractSet[str] = same_input or frozenset()
        self._held = held
        self._owned = owned
        self.reused: set[str] = set()
        self._kept: tuple[str, Reads, dict[str, MemoEntry], PairCounts] | None = None
        # RELATED_TO as last scored, and how the counts moved since (None: count afresh).
        self._related: tuple[RelatedState, UnitsChange] | None = None
        self._scored: RelatedState | None = None  # as scored of the counts handed on
        # What of RELATED_TO can differ from what the last pass synced, when kept by delta.
        self.related_delta: ColumnsDelta | None = None
        # BELONGS_TO as the last pass made it and the documents changed since (None: afresh),
        # as made of this pass's topics, and what of it went when kept by delta.
        self._belongs: tuple[BelongsState, frozenset[str]] | None = None
        self._made_belongs: BelongsState | None = None
        self.belongs_delta: RowsDelta | None = None

    def __call__(self, share: Share, facts: Facts, found: Found, kept: Kept) -> Parts:
        header = _header(facts)
        rematched = self._matches.rematched_ids
        old = self._old if rematched is not None and self._old is not None else None
        if old is not None and old.header != header:
            old = None
        changed = {}
        if old is not None:
            names = None if self._names is None else self._names.moved
            changed = moved(old.facts, facts, among=None if names is None else {"resolve": names})
        parts: list[DocumentPart] = []
        entries: dict[str, MemoEntry] = {}
        # Carried on, a key no document reads any more stays: it is asked again only when a
        # document reads it anew, which records the answer of the time.
        carried = old is not None and self._owned
        table: Reads = old.facts if old is not None and carried else {k: {} for k in KINDS}
        for doc_id, chunks in documents_of(share, kept):
            entry = None if old is None else old.documents.get(doc_id)
            split = None  # the document's own share, made only when it is needed
            if entry is not None and doc_id in self._same:
                digest = entry.digest
            else:
                split = document_share(doc_id, chunks, share, kept)
                digest = _digest(doc_id, *split)
            if (
                old is not None
                and entry is not None
                and entry.digest == digest
                and doc_id not in self._blocked
                and rematched is not None
                and rematched.isdisjoint(c.id for c in chunks)
                and all(changed[kind].isdisjoint(keys) for kind, keys in entry.reads.items())
            ):
                parts.append(DocumentPart(edges=[], tally=entry.tally))
                self.reused.add(doc_id)
                for kind, keys in () if carried else entry.reads.items():
                    answers, was = table[kind], old.facts[kind]  # as before, by the check
                    for key in keys:
                        answers[key] = was[key]
            else:
                one, own = split or document_share(doc_id, chunks, share, kept)
                watched, reads = recording(facts)
                part = document_part(doc_id, one, watched, found, own)
                parts.append(part)
                entry = MemoEntry(
                    digest=digest,
                    reads={kind: tuple(answers) for kind, answers in reads.items() if answers},
                    tally=part.tally,
                )
                for kind, answers in reads.items():
                    table[kind].update(answers)
            entries[doc_id] = entry
        units, self._related, belongs = _units(old, entries, self.reused)
        if belongs is not None and old is not None:
            rewritten = (entries.keys() | old.documents.keys()) - self.reused
            self._belongs = (belongs, frozenset(rewritten))
        self._kept = (header, table, entries, units)
        return Parts(parts, units, related=self.related, topics=self.topics)

    def related(self, counts: PairCounts, settings: GraphSettings) -> EdgeColumns:
        """`related_edges` of the counts handed on, by delta from the last pass's scoring where
        it has one (`graph/related_delta.py`); the state is kept for the next."""
        kept = self._kept
        if kept is None or counts is not kept[3] or not self._held:  # nothing to keep it for
            return related_edges(counts, settings)
        if self._related is None:
            cols, self._scored = RelatedState.scored(counts, settings)
            return cols
        state, change = self._related
        self._related = None  # changed in place from here: used once
        cols, self.related_delta = state.rescored(counts, change, settings)
        self._scored = state
        return cols

    def topics(
        self,
        counts: PairCounts,
        surface: Mapping[str, Counter[str]],
        doc_keywords: Mapping[str, set[str]],
        settings: GraphSettings,
    ) -> tuple[list[TopicRow], list[EdgeRow]]:
        """`topics_from_counts`; from the last pass's BELONGS_TO where it has it, only the edges
        that can differ from those (`graph/topic_delta.py`, `belongs_delta` saying which went).
        The edges are kept for the next pass."""
        if self._kept is None or not self._held:  # nothing to keep them for
            return topics_from_counts(counts, surface, doc_keywords, settings)
        if self._belongs is None:
            topics, edges = topics_from_counts(counts, surface, doc_keywords, settings)
            self._made_belongs = BelongsState.of(edges)
            return topics, edges
        state, changed = self._belongs
        self._belongs = None  # changed in place from here: used once
        topics = keyword_topics(counts, surface, settings)
        edges, self.belongs_delta = state.update(topics, doc_keywords, changed)
        self._made_belongs = state
        return topics, edges

    def memo(self, made: str, at: StoreVersion) -> EdgeMemo | None:
        """What to keep for the next pass, saved as pass `made` from a snapshot at `at` (None
        before a call)."""
        if self._kept is None:
            return None
        header, table, entries, units = self._kept
        held = HeldUnits(units, self._scored, self._made_belongs)
        return EdgeMemo(
            made=made, at=at, header=header, facts=table, documents=entries, units=[held]
        )


def _units(
    old: EdgeMemo | None, entries: Mapping[str, MemoEntry], reused: AbstractSet[str]
) -> tuple[PairCounts, tuple[RelatedState, UnitsChange] | None, BelongsState | None]:
    """The units of `entries` counted: the old memo's counts (taken from it), less its
    documents that were not reused, plus their new parts; every document counted when it has
    none. At 10k documents, counting them all took 1.5 s of a one-document upkeep's profile.
    The counts are kept as they are returned: whoever reads them must not change them. With
    them, the old counts' RELATED_TO scoring and how the counts moved since, and the old pass's
    BELONGS_TO, when held."""
    held = None if old is None else old.take_units()
    if old is None or held is None:
        counts = PairCounts()
        for entry in entries.values():
            counts.count(entry.tally.units)
        return counts, None, None
    gone = [u for d, was in old.documents.items() if d not in reused for u in was.tally.units]
    new = [u for d, entry in entries.items() if d not in reused for u in entry.tally.units]
    held.counts.uncount(gone)
    held.counts.count(new)
    related = None if held.related is None else (held.related, UnitsChange.of(gone, new))
    return held.counts, related, held.belongs


def load_edge_memo(path: Path) -> EdgeMemo | None:
    """The memo saved at `path`; None when there is none or it cannot be read (it is a cache:
    the pass then computes every document)."""
    data = read_cache(path, _FORMAT, what="edge memo")
    if data is None:
        return None
    try:
        return EdgeMemo(
            made=str(data["made"]),
            at=StoreVersion(stamp=data["stamp"], version=data["version"]),
            header=str(data["header"]),
            facts=data["facts"],
            documents={d: MemoEntry(*row) for d, row in data["documents"].items()},
        )
    except (KeyError, TypeError, ValueError) as exc:
        log.warning("edge memo %s is malformed (%s); computing every document", path, exc)
        return None


def save_edge_memo(path: Path, memo: EdgeMemo, *, stop: threading.Event | None = None) -> None:
    documents = {d: (e.digest, e.reads, e.tally) for d, e in memo.documents.items()}
    write_cache(
        path,
        _FORMAT,
        {
            "made": memo.made,
            "stamp": memo.at.stamp,
            "version": memo.at.version,
            "header": memo.header,
            "facts": memo.facts,
            "documents": documents,
        },
        stop=stop,
    )
