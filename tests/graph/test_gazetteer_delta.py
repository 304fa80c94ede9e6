"""The gazetteer patched from the last pass's: after any sequence of document changes it matches
what a fresh gazetteer matches, and it names every form whose ids changed."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

import pytest

from rayweave.cluster.settings import GraphSettings
from rayweave.cluster.types import Chunk, ContentType, Document, Level
from rayweave.graph.corpus_phases import lexicon, tally_names_and_kept
from rayweave.graph.mentions import Gazetteer
from rayweave.graph.name_memo import MemoizedNames
from rayweave.graph.store.change_log import StoreVersion

from .generated_corpus import GeneratedDoc, change_some, generate, share_of


def _as_sets(forms: Mapping[str, Sequence[str]]) -> dict[str, frozenset[str]]:
    return {form: frozenset(ids) for form, ids in forms.items()}


def _same(got: Gazetteer, fresh: Gazetteer) -> None:
    assert _as_sets(got.forms) == _as_sets(fresh.forms)
    assert all(len(set(ids)) == len(ids) for ids in got.forms.values())  # ambiguity counts ids
    assert got.cased == fresh.cased
    assert got.starts == fresh.starts
    assert got.max_ngram == fresh.max_ngram


def _page(doc_id: str, text: str, title: str) -> GeneratedDoc:
    chunk = Chunk(id=f"{doc_id}-s0", doc_id=doc_id, level=Level.SECTION, text=text, title=title)
    document = Document(
        id=doc_id, source=f"{doc_id}.md", title=title, content_type=ContentType.MARKDOWN, text=""
    )
    return GeneratedDoc(document=document, chunks=(chunk,), mentions={})


class Passes:
    def __init__(self) -> None:
        self.names: MemoizedNames | None = None
        self.version = 0
        self.last: Gazetteer | None = None

    def run(self, docs: dict[str, GeneratedDoc], changed: set[str] | None) -> Gazetteer:
        self.version += 1
        memo = None if self.names is None else self.names.memo(StoreVersion("s", self.version))
        self.names = MemoizedNames(memo, changed=None if changed is None else frozenset(changed))
        tally, _ = self.names(share_of(docs))
        got = self.names.lexicon(tally, GraphSettings()).gazetteer()
        fresh = lexicon(tally_names_and_kept(share_of(docs))[0], GraphSettings()).gazetteer()
        _same(got, fresh)
        if got.since is not None:
            # What the match memo compares: every form whose ids changed, and no other.
            assert self.last is not None
            assert got.since[0] is self.last.forms
            was, now = _as_sets(self.last.forms), _as_sets(got.forms)
            differ = {f for f in was.keys() | now.keys() if was.get(f) != now.get(f)}
            assert got.since[1] == differ
        self.last = got
        return got


@pytest.mark.parametrize("seed", range(12))
def test_random_changes_patch_to_what_a_fresh_gazetteer_holds(seed: int) -> None:
    rng = random.Random(seed)
    docs = {f"D{i}": generate(rng, f"D{i}", 0) for i in range(rng.randint(6, 14))}
    passes = Passes()
    assert passes.run(docs, None).since is None  # nothing to patch
    patched = 0
    for version in range(1, 12):
        changed = change_some(rng, docs, version, ids=18)
        patched += passes.run(docs, changed).since is not None
    assert patched == 11


def test_a_plural_merging_into_its_singular_moves_the_plural_s_forms() -> None:
    """A name that arrives can change which entity another name's forms resolve to, without
    the other's counts changing: its forms are remade too."""
    docs = {
        "A": _page("A", "Widget Toolkits ship widgets.", "Widget Toolkits"),
        "B": _page("B", "Sundials need the sun.", "Sundials"),
    }
    passes = Passes()
    before = passes.run(docs, None)
    docs["C"] = _page("C", "A Widget Toolkit is a library.", "Widget Toolkit")
    after = passes.run(docs, {"C"})
    assert after.since is not None
    assert before.forms["widget toolkits"] != after.forms["widget toolkits"]
    assert "widget toolkits" in after.since[1]
