"""One document view before fusion (`serve/views.py`): units, evidence, and what fusion counts."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rayweave.cluster.types import Hit, Level, view_of
from rayweave.serve.fusion import fuse, promote_linked
from rayweave.serve.views import (
    LIST_RANK,
    MATCHED_IDS,
    MATCHED_LEVELS,
    OUTLINE,
    resolve_list,
    resolve_views,
    with_view,
)

# Document A: summary sA and its only section cA (which holds propositions pA1, pA2).
# Document B: summary sB over two sections cB1, cB2.
STRUCTURE: dict[str, tuple[Level, str | None, tuple[str, ...], bool]] = {
    "sA": (Level.DOCUMENT, None, ("cA",), False),
    "cA": (Level.SECTION, "sA", ("pA1", "pA2"), True),
    "pA1": (Level.PROPOSITION, "cA", (), False),
    "pA2": (Level.PROPOSITION, "cA", (), False),
    "sB": (Level.DOCUMENT, None, ("cB1", "cB2"), False),
    "cB1": (Level.SECTION, "sB", (), False),
    "cB2": (Level.SECTION, "sB", (), False),
}


def hit(chunk: str, score: float = 1.0) -> Hit:
    level, parent, children, sole = STRUCTURE[chunk]
    found = Hit(id=chunk, doc_id=chunk[1], text="", score=score, level=level)
    return with_view(found, view_of(level, chunk, parent_id=parent, children=children, sole=sole))


def outline(found: Hit) -> Hit:
    """`found`, a summary that is only its code's signatures."""
    return replace(found, metadata={**found.metadata, OUTLINE: True})


def ids(hits: list[Hit]) -> list[str]:
    return [h.id for h in hits]


class TestViewOf:
    def test_a_summary_of_one_section_resolves_to_it_in_both_views(self) -> None:
        assert view_of(Level.DOCUMENT, "sA", parent_id=None, children=("cA",)) == ("cA", "cA", True)

    def test_a_summary_of_several_sections_stays_its_own_unit(self) -> None:
        assert view_of(Level.DOCUMENT, "sB", parent_id=None, children=("c1", "c2")) == (
            "sB",
            "sB",
            False,
        )

    def test_a_proposition_folds_into_its_section_only_in_the_section_view(self) -> None:
        assert view_of(Level.PROPOSITION, "p", parent_id="c") == ("p", "c", False)

    def test_a_sole_section_is_its_own_unit_with_a_summary_view(self) -> None:
        assert view_of(Level.SECTION, "c", parent_id="s", sole=True) == ("c", "c", True)
        assert with_view(hit("cB1"), ("cB1", "cB1", False)).metadata == {}


class TestResolveList:
    def test_off_leaves_the_list_as_found(self) -> None:
        found = [hit("sA"), hit("cA")]
        assert resolve_list(found, "off", "max") == found

    def test_summary_and_its_only_section_are_one_candidate_with_two_levels(self) -> None:
        out = resolve_list([hit("sA", 0.9), hit("cB1", 0.8), hit("cA", 0.7)], "summary", "max")
        assert ids(out) == ["cA", "cB1"]
        assert out[0].score == 0.9  # the best view stands for the unit
        assert out[0].level is Level.SECTION
        assert out[0].metadata[MATCHED_LEVELS] == ["document", "section"]
        assert out[0].metadata[MATCHED_IDS] == ["sA", "cA"]

    def test_hierarchy_keeps_working_for_documents_with_several_sections(self) -> None:
        out = resolve_list([hit("sB", 0.9), hit("cB2", 0.8), hit("cB1", 0.7)], "summary", "max")
        assert ids(out) == ["sB", "cB2", "cB1"]
        assert out[0].level is Level.DOCUMENT

    def test_propositions_fold_into_their_section_in_the_section_view(self) -> None:
        found = [hit("pA2", 0.9), hit("cB1", 0.8), hit("pA1", 0.7)]
        assert ids(resolve_list(found, "summary", "max")) == ["pA2", "cB1", "pA1"]
        out = resolve_list(found, "section", "max")
        assert ids(out) == ["cA", "cB1"]
        assert out[0].metadata[MATCHED_LEVELS] == ["proposition"]

    def test_mean_evidence_needs_both_views_to_lead(self) -> None:
        # sA's name resembles the query but its body does not; cB1 has no summary view.
        found = [hit("sA", 0.9), hit("cB1", 0.8), hit("cA", 0.2)]
        out = resolve_list(found, "summary", "mean")
        assert ids(out) == ["cB1", "cA"]
        assert out[1].score == pytest.approx((0.9 + 0.2) / 2)
        # A sole section without its summary in the list: the summary counts at the list's floor.
        alone = resolve_list([hit("cB1", 0.8), hit("cA", 0.6)], "summary", "mean")
        assert [round(h.score, 6) for h in alone] == [0.8, 0.6]
        assert resolve_list([hit("cA", 0.6), hit("cB2", 0.2)], "summary", "mean")[0].score == (
            pytest.approx(0.4)
        )

    def test_content_evidence_ranks_a_unit_where_its_content_stood(self) -> None:
        # sA leads on its summary, but its content (cA) is third: cB1 goes first.
        found = [hit("sA", 0.9), hit("cB1", 0.8), hit("cA", 0.7)]
        out = resolve_list(found, "summary", "content")
        assert ids(out) == ["cB1", "cA"]
        assert [h.metadata.get(LIST_RANK, 2) for h in out] == [2, 3]
        assert out[1].score == 0.7
        assert out[1].metadata[MATCHED_LEVELS] == ["document", "section"]

    def test_content_evidence_puts_a_unit_held_by_its_summary_after_every_content(self) -> None:
        found = [hit("sA", 0.9), hit("cB1", 0.5), hit("cB2", 0.4)]
        out = resolve_list(found, "summary", "content")
        assert ids(out) == ["cB1", "cB2", "cA"]
        assert out[2].score == 0.4  # the list's floor: no content score to stand on
        assert out[2].metadata[LIST_RANK] == 4  # after the list's three chunks
        fused = fuse({"dense": out}, k=60)
        assert ids(fused) == ["cB1", "cB2", "cA"]

    def test_auto_evidence_is_the_content_in_the_dense_list_only(self) -> None:
        found = [hit("sA", 0.9), hit("cB1", 0.8), hit("cA", 0.7)]
        out = resolve_views({"dense": found, "sparse": found}, "summary", "auto")
        assert ids(out["dense"]) == ["cB1", "cA"]
        assert ids(out["sparse"]) == ["cA", "cB1"]  # a name's lexical match keeps its vote

    def test_auto_evidence_keeps_an_outline_summarys_vote(self) -> None:
        # An undocumented function: its signature is the only description it has.
        found = [outline(hit("sA", 0.9)), hit("cB1", 0.8), hit("cA", 0.7)]
        out = resolve_views({"dense": found}, "summary", "auto")["dense"]
        assert ids(out) == ["cA", "cB1"]
        assert out[0].score == 0.9
        assert OUTLINE not in out[0].metadata


class TestFusionOverUnits:
    def test_each_list_votes_once_for_a_unit_and_evidence_is_merged(self) -> None:
        lists = {"dense": [hit("sA"), hit("cB1")], "sparse": [hit("cA"), hit("cB1")]}
        chunks = fuse(lists, k=1)
        assert ids(chunks)[0] == "cB1"  # unresolved, sA and cA split document A's votes
        units = fuse(resolve_views(lists, "summary", "max"), k=1)
        assert ids(units) == ["cA", "cB1"]
        assert units[0].retrievers == ("dense", "sparse")
        assert units[0].metadata[MATCHED_LEVELS] == ["document", "section"]
        assert units[0].metadata[MATCHED_IDS] == ["sA", "cA"]

    def test_evidence_merges_when_only_a_later_list_resolved_the_unit(self) -> None:
        lists = {"dense": [hit("cA")], "sparse": [hit("sA"), hit("cA")]}
        (unit,) = fuse(resolve_views(lists, "summary", "max"))
        assert unit.metadata[MATCHED_LEVELS] == ["section", "document"]
        assert unit.metadata[MATCHED_IDS] == ["cA", "sA"]

    def test_a_unit_keeps_the_rank_its_best_chunk_had_in_its_list(self) -> None:
        # Document A's two chunks lead the dense list; cB1 was third there, and stays third:
        # resolving must not lift it (and with it the weight of every other list's vote).
        dense = resolve_list([hit("sA"), hit("cA"), hit("cB1")], "summary", "max")
        assert [h.metadata[LIST_RANK] for h in dense] == [1, 3]
        fused = {h.id: h.score for h in fuse({"dense": dense}, k=60)}
        assert fused["cB1"] == pytest.approx(1 / 63)

    def test_a_link_from_a_leaders_summary_still_promotes_its_partner(self) -> None:
        from rayweave.cluster.types import GraphPath

        fused = fuse(resolve_views({"dense": [hit("sA"), hit("cB1")]}, "summary", "max"))
        partner = Hit(id="x", doc_id="X", text="", score=0.1)
        ranked = [*fused, partner]
        link = GraphPath(nodes=("sA", "e", "x"), relationships=("MENTIONS", "EXPLAINS"))
        links = [Hit(id="x", doc_id="X", text="", score=1.0, paths=(link,))]
        out = promote_linked(ranked, links, lead=1, depth=5, limit=1)
        assert ids(out) == ["cA", "x", "cB1"]
