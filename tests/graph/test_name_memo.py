"""Phase 1 per document, reused for the documents that did not change, and the merged tally
carried from pass to pass: it equals phase 1 over the whole share. The passes that use it are
in `test_indexing_invariant.py`."""

from __future__ import annotations

import random

import pytest

from rayweave.cluster.settings import GraphSettings
from rayweave.graph.corpus_phases import NameTally, lexicon, tally_names_and_kept
from rayweave.graph.name_memo import MemoizedNames
from rayweave.graph.store.change_log import StoreVersion

from .generated_corpus import change_some, generate, share_of


def test_held_tallies_merge_to_the_whole_phase_and_only_changed_documents_are_recomputed() -> None:
    rng = random.Random(3)
    docs = {f"D{i}": generate(rng, f"D{i}", 0) for i in range(8)}
    first = MemoizedNames(None, changed=None)
    assert first(share_of(docs)) == tally_names_and_kept(share_of(docs))
    assert first.reused == 0
    at = StoreVersion(stamp="s", version=1)
    docs["D2"] = generate(rng, "D2", 1)  # edited
    docs["D9"] = generate(rng, "D9", 1)  # added
    del docs["D5"]
    second = MemoizedNames(first.memo(at), changed=frozenset({"D2", "D5", "D9"}))
    assert second(share_of(docs)) == tally_names_and_kept(share_of(docs))
    assert second.reused == 6
    assert set(second.memo(at).documents) == set(docs)
    # Without knowing what changed, nothing is reused.
    blind = MemoizedNames(second.memo(at), changed=None)
    blind(share_of(docs))
    assert blind.reused == 0


def test_the_carried_tally_equals_a_fresh_one_after_every_pass() -> None:
    rng = random.Random(11)
    docs = {f"D{i}": generate(rng, f"D{i}", 0) for i in range(10)}
    names = MemoizedNames(None, changed=None)
    names(share_of(docs))
    for version in range(1, 13):
        changed = change_some(rng, docs, version, ids=14)
        memo = names.memo(StoreVersion(stamp="s", version=version))
        names = MemoizedNames(memo, changed=frozenset(changed))
        tally, kept = names(share_of(docs))
        fresh = tally_names_and_kept(share_of(docs))
        assert (tally, kept) == fresh, version
        assert names.reused == len(docs.keys() - changed)
        assert memo.take_merged() is None  # taken by this pass, which changed it
        # Its lexicon remakes only some entity rows, and they are every row a fresh one makes.
        rows = names.lexicon(tally, GraphSettings()).rows
        assert rows == lexicon(fresh[0], GraphSettings()).rows, version


def test_a_pass_that_took_the_carried_tally_leaves_none_to_the_next() -> None:
    rng = random.Random(5)
    docs = {f"D{i}": generate(rng, f"D{i}", 0) for i in range(4)}
    first = MemoizedNames(None, changed=None)
    first(share_of(docs))
    memo = first.memo(StoreVersion(stamp="s", version=1))
    MemoizedNames(memo, changed=frozenset({"D1"}))  # took it, then failed before its memo
    docs["D1"] = generate(rng, "D1", 1)
    again = MemoizedNames(memo, changed=frozenset({"D1"}))
    assert again(share_of(docs)) == tally_names_and_kept(share_of(docs))  # merged every document
    assert again.reused == 3


def test_taking_back_what_was_never_merged_is_an_error() -> None:
    rng = random.Random(2)
    one, other = (tally_names_and_kept(share_of({d: generate(rng, d, 0)}))[0] for d in "AB")
    total = NameTally()
    total.merge(one)
    with pytest.raises(ValueError, match=r"never merged|more often"):
        total.unmerge(other)
    total = NameTally()
    total.merge(one)
    total.unmerge(one)
    assert total == NameTally()
