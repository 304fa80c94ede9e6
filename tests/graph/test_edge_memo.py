"""Each document's phase 3 kept from pass to pass: what an upkeep reuses and recomputes gives
exactly what a fresh build gives, after any sequence of corpus changes.

The passes here run as the upkeep runs them (match memo, edge memo, the same pass token), with
the store's edges simulated as the sync leaves them: a reused document's own edges stay as
the pass that computed them wrote them. So a reuse that a changed fact should have prevented
shows as an edge the fresh build does not make.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from rayweave.cluster.settings import GraphSettings
from rayweave.cluster.types import Chunk, Entity, Level
from rayweave.graph.builders import build_graph
from rayweave.graph.cooccurrence import PairCounts
from rayweave.graph.edge_memo import (
    EdgeMemo,
    MemoizedParts,
    load_edge_memo,
    save_edge_memo,
)
from rayweave.graph.match_memo import MatchMemo, MemoizedMatches
from rayweave.graph.name_memo import MemoizedNames, NameMemo
from rayweave.graph.related_delta import RelatedState
from rayweave.graph.schema import EdgeRow, GraphBatch, NodeLabel, RelType
from rayweave.graph.store.change_log import StoreVersion

from .generated_corpus import GeneratedDoc, generate

AT = StoreVersion(stamp="s", version=1)


def _own(e: EdgeRow) -> bool:
    return e.src.label is not NodeLabel.ENTITY and e.dst.label is not NodeLabel.TOPIC


def _belongs(e: EdgeRow) -> bool:
    return e.rel is RelType.BELONGS_TO


class Upkeep:
    """Passes over a changing corpus with both memos, and the own edges the store holds."""

    def __init__(self, settings: GraphSettings) -> None:
        self.settings = settings
        self.matches: MatchMemo | None = None
        self.parts: EdgeMemo | None = None
        self.stored: dict[str, set[str]] = {}  # document -> its own edges as written
        self.belongs: dict[tuple[str, str], str] = {}  # BELONGS_TO as written, by its ends
        self.by_delta = 0  # passes whose BELONGS_TO came by delta
        self.inputs: dict[str, object] = {}  # document -> its chunks and mentions, last run
        self.names: NameMemo | None = None
        self.moved: list[int | None] = []  # names the lexicon remade, per run (None: all)
        self.runs = 0

    def run(
        self, chunks: list[Chunk], mentions: dict[str, list[Entity]]
    ) -> tuple[GraphBatch, set[str]]:
        find = MemoizedMatches(self.matches)
        # What a held corpus content tells the upkeep: the documents read as the last run did.
        inputs = {
            d: [(c, mentions.get(c.id)) for c in chunks if c.doc_id == d]
            for d in {c.doc_id for c in chunks}
        }
        same = {d for d, held in inputs.items() if self.inputs.get(d) == held}
        read = frozenset(inputs.keys() | self.inputs.keys()) - same
        self.inputs = dict(inputs)
        # Phase 1 carried as the actor carries it, its lexicon telling the memo which names moved.
        names = MemoizedNames(self.names, changed=read if self.names is not None else None)
        parts = MemoizedParts(
            self.parts,
            same_input=same,
            matches=find,
            at=AT,
            blocked=frozenset(),
            held=True,
            names=names,
            owned=True,  # the memo's table carried on, as a keeper that hands it over lets
        )
        batch = build_graph(
            chunks, mentions, settings=self.settings, names_of=names, find=find, parts_of=parts
        )
        self.runs += 1
        self.moved.append(None if names.moved is None else len(names.moved))
        self.names = names.memo(StoreVersion(stamp="s", version=self.runs))
        made = f"pass-{self.runs}"
        assert find.memo is not None
        self.matches = dataclasses.replace(find.memo, made=made)
        self.parts = parts.memo(made, AT)
        computed = own_by_document(batch, chunks)
        docs = {c.doc_id for c in chunks}
        self.stored = {
            d: self.stored[d] if d in parts.reused else computed.get(d, set()) for d in docs
        }
        # BELONGS_TO as the sync leaves it: the edges a delta hands over, less what it says went.
        belongs = {(e.src.id, e.dst.id): repr(e) for e in batch.edges if _belongs(e)}
        if parts.belongs_delta is None:
            self.belongs = belongs
        else:
            self.by_delta += 1
            for a, b in parts.belongs_delta.gone:
                assert (a.id, b.id) not in belongs
                self.belongs.pop((a.id, b.id))
            self.belongs.update(belongs)
        return batch, parts.reused


def own_by_document(batch: GraphBatch, chunks: list[Chunk]) -> dict[str, set[str]]:
    doc_of = {c.id: c.doc_id for c in chunks}
    out: dict[str, set[str]] = {}
    for e in batch.edges:
        if _own(e):
            doc = e.src.id if e.src.label is NodeLabel.DOCUMENT else doc_of[e.src.id]
            out.setdefault(doc, set()).add(repr(e))
    return out


def check_equals_fresh(up: Upkeep, batch: GraphBatch, chunks: list[Chunk], mentions: dict) -> None:
    fresh = build_graph(chunks, mentions, settings=up.settings)
    expected = own_by_document(fresh, chunks)
    assert {d: e for d, e in up.stored.items() if e} == expected
    assert sorted(repr(e) for e in batch.edges if not _own(e) and not _belongs(e)) == sorted(
        repr(e) for e in fresh.edges if not _own(e) and not _belongs(e)
    )
    assert sorted(up.belongs.values()) == sorted(repr(e) for e in fresh.edges if _belongs(e))
    assert batch.entities == fresh.entities
    assert batch.topics == fresh.topics


def check_units_counted_anew(up: Upkeep) -> None:
    """The units' counts carried from pass to pass are those of counting every document, and
    so is the RELATED_TO scoring carried with them."""
    assert up.parts is not None
    (held,) = up.parts.units
    fresh = PairCounts()
    for entry in up.parts.documents.values():
        fresh.count(entry.tally.units)
    assert held.counts == fresh
    assert 0 not in held.counts.df.values()
    assert 0 not in held.counts.joint.values()
    # RELATED_TO's state, kept by delta, is the one scoring them afresh leaves.
    assert held.related is not None
    _, scored = RelatedState.scored(fresh, up.settings)
    assert held.related.kept == scored.kept
    assert held.related.kept_keys == scored.kept_keys
    assert {x: sorted(ys) for x, ys in held.related.partners.items()} == {
        x: sorted(ys) for x, ys in scored.partners.items()
    }
    # And BELONGS_TO's, the edges the store holds.
    assert held.belongs is not None
    assert sorted(repr(e) for e in held.belongs.all_edges()) == sorted(up.belongs.values())


def page(doc_id: str, text: str, **fields: object) -> Chunk:
    return Chunk(id=f"{doc_id}-s0", doc_id=doc_id, level=Level.SECTION, text=text, **fields)  # type: ignore[arg-type]


def test_an_unchanged_corpus_reuses_every_document_and_a_fresh_memo_none() -> None:
    up = Upkeep(GraphSettings())
    chunks = [page("A", "Quartz clocks keep time."), page("B", "Pendulum clocks swing.")]
    assert up.run(chunks, {})[1] == set()
    first = up.parts
    assert first is not None
    assert len(first.units) == 1
    batch, reused = up.run(chunks, {})
    assert reused == {"A", "B"}
    assert not first.units  # the next pass took them: none is left to be taken twice
    assert not [e for e in batch.edges if _own(e)]  # the store holds them already
    check_equals_fresh(up, batch, chunks, {})


def test_a_keyword_that_becomes_frequent_recomputes_the_documents_that_hold_it() -> None:
    # No name changes, so the gazetteer pass matches nothing anew: only the recorded
    # keyword answer tells that A's topics moved.
    up = Upkeep(GraphSettings(topic_min_support=2))
    a = page("A", "Quartz clocks keep time.", keywords=("lighthouse", "quartz"))
    b = page("B", "Pendulum clocks swing.", keywords=("lighthouse", "quartz"))
    c = page("C", "Sundials need the sun.", keywords=("granite",))
    up.run([a, c], {})
    batch, reused = up.run([a, b, c], {})
    assert reused == {"C"}
    check_equals_fresh(up, batch, [a, b, c], {})


def test_a_reference_whose_target_arrives_recomputes_the_referring_document() -> None:
    up = Upkeep(GraphSettings())
    a = page("A", "See the guide for setup.", references=("guide.md",))
    other = page("C", "Sundials need the sun.")
    guide = Chunk(
        id="g-s0", doc_id="g", level=Level.SECTION, text="Setup steps.", source="guide.md"
    )
    up.run([a, other], {})
    batch, reused = up.run([a, other, guide], {})
    assert reused == {"C"}
    assert any(e.rel.value == "REFERENCES" for e in batch.edges)
    check_equals_fresh(up, batch, [a, other, guide], {})


def test_a_changed_mention_under_the_same_text_recomputes_its_document() -> None:
    # The digest covers each mention's every field: an alias alone decides an edge here.
    up = Upkeep(GraphSettings())
    a = page("A", "The Quartz Clock keeps time.")
    b = page("B", "Sundials need the sun.")
    named = Entity(id="e1", name="Quartz Clock", kind="product")
    up.run([a, b], {a.id: [named]})
    aliased = dataclasses.replace(named, aliases=("QC",))
    batch, reused = up.run([a, b], {a.id: [aliased]})
    assert reused == {"B"}
    check_equals_fresh(up, batch, [a, b], {a.id: [aliased]})
    batch, reused = up.run([a, b], {a.id: [aliased]})
    assert reused == {"A", "B"}


@pytest.mark.parametrize("sentence_links", [False, True])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_changes_give_what_a_fresh_build_gives(seed: int, sentence_links: bool) -> None:
    rng = random.Random(seed)
    up = Upkeep(GraphSettings(sentence_links=sentence_links))
    live: dict[str, GeneratedDoc] = {f"D{i}": generate(rng, f"D{i}", 0) for i in range(8)}
    reused_total = 0
    for step in range(12):
        chunks = [c for g in live.values() for c in g.chunks]
        mentions = {cid: ents for g in live.values() for cid, ents in g.mentions.items()}
        batch, reused = up.run(chunks, mentions)
        reused_total += len(reused)
        check_equals_fresh(up, batch, chunks, mentions)
        check_units_counted_anew(up)
        op = rng.choice(["add", "edit", "delete", "keywords"]) if len(live) > 4 else "add"
        doc_id = f"D{100 + step}" if op == "add" else rng.choice(sorted(live))
        if op == "delete":
            del live[doc_id]
        elif op == "keywords":  # the same text under other keywords: no name changes
            g = live[doc_id]
            words = ("lighthouse", rng.choice(["harbor", "granite", "magazine"]))
            live[doc_id] = dataclasses.replace(
                g, chunks=tuple(dataclasses.replace(c, keywords=words) for c in g.chunks)
            )
        else:
            live[doc_id] = generate(rng, doc_id, step + 1)
    assert reused_total > 0
    assert up.by_delta > 0
    assert any(n is not None for n in up.moved[1:])  # the memo asked only the moved names


def test_the_memo_survives_a_file_and_another_pass_is_not_used(tmp_path: Path) -> None:
    up = Upkeep(GraphSettings())
    chunks = [page("A", "Quartz clocks keep time."), page("B", "Pendulum clocks swing.")]
    up.run(chunks, {})
    assert up.parts is not None
    path = tmp_path / "ns.parts.pickle"
    save_edge_memo(path, up.parts)
    loaded = load_edge_memo(path)
    assert loaded == up.parts
    find = MemoizedMatches(up.matches)
    # Another snapshot version, or another pass's match memo: every document is computed.
    for at, made in ((StoreVersion(stamp="s", version=2), None), (AT, "another pass")):
        if made is not None:
            assert up.matches is not None
            find = MemoizedMatches(dataclasses.replace(up.matches, made=made))
        parts = MemoizedParts(loaded, matches=find, at=at, blocked=frozenset())
        build_graph(chunks, {}, settings=up.settings, find=find, parts_of=parts)
        assert parts.reused == set()
    path.write_bytes(b"torn")
    assert load_edge_memo(path) is None


def test_related_state_is_kept_only_for_a_memo_held_in_memory() -> None:
    """Building the state costs twice a plain scoring: a memo that only a file keeps (which
    drops the units) is not handed one, a held memo is."""
    chunks = [
        page("A", "Quartz Clocks and Pendulum Clocks keep time."),
        page("B", "Pendulum Clocks and Quartz Clocks swing."),
    ]
    for held in (False, True):
        find = MemoizedMatches(None)
        parts = MemoizedParts(None, matches=find, at=AT, blocked=frozenset(), held=held)
        build_graph(chunks, {}, settings=GraphSettings(), find=find, parts_of=parts)
        memo = parts.memo("pass", AT)
        assert memo is not None
        (units,) = memo.units
        assert (units.related is not None) is held
