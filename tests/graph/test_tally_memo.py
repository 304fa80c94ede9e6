"""Phase 2's counts carried from pass to pass: after any sequence of document changes they
equal counting every chunk afresh, and only the changed documents are counted again."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence

import pytest

from rayweave.cluster.settings import GraphSettings
from rayweave.cluster.types import Chunk, Level
from rayweave.graph.corpus_phases import FRESH_NAMES, MatchTally, tally_matches
from rayweave.graph.match_memo import MatchMemo, MemoizedMatches
from rayweave.graph.share import Share
from rayweave.graph.tally_memo import MemoizedTally

from .generated_corpus import NAMES


@dataclasses.dataclass(frozen=True)
class Doc:
    chunks: tuple[Chunk, ...]


def _document(rng: random.Random, doc_id: str, version: int, sections: bool) -> Doc:
    """A summary, and sections with propositions under some (or the summary alone)."""
    title = rng.choice(NAMES)
    prefix = f"{doc_id}-v{version}"
    summary = f"{title} names {' and '.join(rng.sample(NAMES, 2))}."
    chunks = [
        Chunk(id=f"{prefix}-d", doc_id=doc_id, level=Level.DOCUMENT, text=summary, title=title)
    ]
    for k in range(rng.randint(1, 3) if sections else 0):
        sid = f"{prefix}-s{k}"
        named = rng.sample(NAMES, rng.randint(1, 3))
        text = f"{title} runs beside {' and '.join(named)}."
        chunks.append(
            Chunk(id=sid, doc_id=doc_id, level=Level.SECTION, text=text, title=title, position=k)
        )
        for j in range(rng.randint(0, 2)):
            chunks.append(
                Chunk(
                    id=f"{sid}-p{j}",
                    doc_id=doc_id,
                    level=Level.PROPOSITION,
                    text=f"{rng.choice(NAMES)} replaced {rng.choice(NAMES)}.",
                    parent_id=sid,
                )
            )
    return Doc(tuple(chunks))


class Passes:
    """Passes as the upkeep runs them: the match memo, and the counts held with it."""

    def __init__(self, *, broken: bool = False) -> None:
        self.memo: MatchMemo | None = None
        self.before: dict[str, Doc] | None = None
        self.recounted: list[int | None] = []
        self.broken = broken  # count again only the documents read, not those matched anew

    def run(self, docs: dict[str, Doc]) -> tuple[MatchTally, MatchTally]:
        chunks = sorted((c for d in docs.values() for c in d.chunks), key=lambda c: c.id)
        share = Share(chunks)
        names, _ = FRESH_NAMES(share)
        lex = FRESH_NAMES.lexicon(names, GraphSettings())
        read = None
        if self.before is not None:
            read = {
                d for d in self.before.keys() | docs.keys() if self.before.get(d) != docs.get(d)
            }
        find = MemoizedMatches(self.memo)
        tally = MemoizedTally(self.memo, before=self.before, after=docs, read=read, matches=find)
        found = find(lex, chunks)
        if self.broken and find.rematched_ids is not None:
            find.rematched_ids = {c.id for d in read or () for c in docs.get(d, Doc(())).chunks}
        got = tally(share, lex, found)
        self.recounted.append(tally.recounted)
        assert find.memo is not None
        assert tally.held is not None
        self.memo = dataclasses.replace(find.memo, counts=[tally.held])
        self.before = dict(docs)
        afresh = FRESH_NAMES.lexicon(FRESH_NAMES(share)[0], GraphSettings())
        return got, tally_matches(share, afresh)


def _same(got: MatchTally, fresh: MatchTally) -> bool:
    # A Counter compares a key held at 0 equal to none: a fresh count never holds one.
    zeros = 0 in got.unit_df.values() or 0 in got.chunk_df.values()
    return got == fresh and not zeros


def _changes(rng: random.Random, docs: dict[str, Doc], step: int, sections: Sequence[bool]) -> None:
    for n in range(rng.randint(1, 2)):
        op = rng.choice(["add", "edit", "delete"]) if len(docs) > 3 else "add"
        doc_id = f"D{step}-{n}" if op == "add" else rng.choice(sorted(docs))
        if op == "delete":
            del docs[doc_id]
        else:
            docs[doc_id] = _document(rng, doc_id, step + 1, rng.choice(sections))


@pytest.mark.parametrize("seed", range(40))
def test_random_changes_count_what_a_fresh_count_gives(seed: int) -> None:
    rng = random.Random(seed)
    # Mostly documents with sections; some seeds let the corpus lose and regain them, which
    # changes every unit and so counts every chunk again.
    sections = (True,) if seed % 4 else (True, False)
    docs = {f"D{i}": _document(rng, f"D{i}", 0, True) for i in range(rng.randint(16, 30))}
    passes = Passes()
    for step in range(10):
        got, fresh = passes.run(docs)
        assert _same(got, fresh), f"step {step}"
        _changes(rng, docs, step, sections)
    assert passes.recounted[0] is None  # nothing to start from
    if seed % 4:
        assert any(n is not None for n in passes.recounted[1:])


def test_an_unchanged_corpus_counts_no_document_again() -> None:
    rng = random.Random(0)
    docs = {f"D{i}": _document(rng, f"D{i}", 0, True) for i in range(6)}
    passes = Passes()
    passes.run(docs)
    got, fresh = passes.run(docs)
    assert _same(got, fresh)
    assert passes.recounted == [None, 0]
    # The counts were taken: a second pass from the same memo counts every chunk.
    assert passes.memo is not None
    assert passes.memo.take_counts() is not None
    assert passes.memo.take_counts() is None


def test_a_new_name_recounts_the_documents_it_is_matched_in() -> None:
    """A document that arrives titled with a name others hold changes their matches, not their
    text: without counting those documents again the counts go wrong."""

    def doc(doc_id: str, title: str, text: str) -> Doc:
        return Doc(
            (Chunk(id=f"{doc_id}-s0", doc_id=doc_id, level=Level.SECTION, text=text, title=title),)
        )

    docs = {
        "A": doc("A", "Quartz", "Quartz clocks keep time near Lake Geneva."),
        "B": doc("B", "Pendulum", "Pendulum clocks swing by Lake Geneva."),
        **{f"C{i}": doc(f"C{i}", f"Sundial {i}", "Sundials need the sun.") for i in range(6)},
    }
    for broken in (False, True):
        passes = Passes(broken=broken)
        passes.run(dict(docs))
        got, fresh = passes.run({**docs, "G": doc("G", "Lake Geneva", "Lake Geneva is a lake.")})
        assert _same(got, fresh) is not broken
        assert passes.recounted[1] == (1 if broken else 3)
