"""Phase 1 per document, reused for the documents that did not change: the merged tally equals
phase 1 over the whole share. The passes that use it are in `test_indexing_invariant.py`."""

from __future__ import annotations

import random

from rayweave.cluster.types import Chunk, Entity
from rayweave.graph.corpus_phases import tally_names_and_kept
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
