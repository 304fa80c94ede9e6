"""Phase 1 per document, reused for the documents that did not change, and the merged tally
carried from pass to pass: it equals phase 1 over the whole share. The passes that use it are
in `test_indexing_invariant.py`."""

from __future__ import annotations

import random

import pytest

from rayweave.cluster.settings import GraphSettings
from rayweave.cluster.types import Chunk, Entity
from rayweave.graph.corpus_phases import NameTally, lexicon, tally_names_and_kept
from rayweave.graph.name_memo import MemoizedNames
from rayweave.graph.share import Share
from rayweave.graph.store.change_log import StoreVersion

from .generated_corpus import GeneratedDoc, generate


def _share(docs: dict[str, GeneratedDoc]) -> Share:
    chunks: list[Chunk] = sorted((c for g in docs.values() for c in g.chunks), key=lambda c: c.id)
    mentions: dict[str, list[Entity]] = {
        cid: list(ents) for g in docs.values() for cid, ents in g.mentions.items()
    }
    return Share(chunks, mentions, {})


def test_held_tallies_merge_to_the_whole_phase_and_only_changed_documents_are_recomputed() -> None:
    rng = random.Random(3)
    docs = {f"D{i}": generate(rng, f"D{i}", 0) for i in range(8)}
    first = MemoizedNames(None, changed=None)
    assert first(_share(docs)) == tally_names_and_kept(_share(docs))
    assert first.reused == 0
    at = StoreVersion(stamp="s", version=1)
    docs["D2"] = generate(rng, "D2", 1)  # edited
    docs["D9"] = generate(rng, "D9", 1)  # added
    del docs["D5"]
    second = MemoizedNames(first.memo(at), changed=frozenset({"D2", "D5", "D9"}))
    assert second(_share(docs)) == tally_names_and_kept(_share(docs))
    assert second.reused == 6
    assert set(second.memo(at).documents) == set(docs)
    # Without knowing what changed, nothing is reused.
    blind = MemoizedNames(second.memo(at), changed=None)
    blind(_share(docs))
    assert blind.reused == 0


def test_the_carried_tally_equals_a_fresh_one_after_every_pass() -> None:
    rng = random.Random(11)
    docs = {f"D{i}": generate(rng, f"D{i}", 0) for i in range(10)}
    names = MemoizedNames(None, changed=None)
    names(_share(docs))
    for version in range(1, 13):
        changed: set[str] = set()
        for _ in range(rng.randint(1, 3)):
            doc = f"D{rng.randrange(14)}"
            if doc in docs and rng.random() < 0.4:
                del docs[doc]
            else:
                docs[doc] = generate(rng, doc, version)
            changed.add(doc)
        memo = names.memo(StoreVersion(stamp="s", version=version))
        names = MemoizedNames(memo, changed=frozenset(changed))
        tally, kept = names(_share(docs))
        fresh = tally_names_and_kept(_share(docs))
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
    first(_share(docs))
    memo = first.memo(StoreVersion(stamp="s", version=1))
    MemoizedNames(memo, changed=frozenset({"D1"}))  # took it, then failed before its memo
    docs["D1"] = generate(rng, "D1", 1)
    again = MemoizedNames(memo, changed=frozenset({"D1"}))
    assert again(_share(docs)) == tally_names_and_kept(_share(docs))  # merged every document
    assert again.reused == 3


def test_taking_back_what_was_never_merged_is_an_error() -> None:
    rng = random.Random(2)
    one, other = (tally_names_and_kept(_share({d: generate(rng, d, 0)}))[0] for d in "AB")
    total = NameTally()
    total.merge(one)
    with pytest.raises(ValueError, match=r"never merged|more often"):
        total.unmerge(other)
    total = NameTally()
    total.merge(one)
    total.unmerge(one)
    assert total == NameTally()
