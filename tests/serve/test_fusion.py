from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import ClassVar, Literal

import pytest

from rayweave.cluster.settings import RetrievalSettings
from rayweave.cluster.types import GraphPath, Hit
from rayweave.serve.fusion import (
    FACT_WALK,
    LINKS,
    SPARSE_FACTS,
    FusionRanker,
    aggregate,
    anchored_fusion,
    cap_per_document,
    collapse_duplicates,
    fact_ranking_for,
    fuse,
    promote_linked,
    reciprocal_rank_fusion,
    walk_first,
    weighted_score_fusion,
)
from rayweave.serve.schemas import ContentScope, Profile, QueryType
from rayweave.serve.search import RetrievalPlan

PLAN = RetrievalPlan(profile=Profile.GRAPH, query_type=QueryType.GENERAL, scope=ContentScope.DOCS)


def h(i: str, score: float = 1.0, doc: str | None = None, **kw: object) -> Hit:
    return Hit(id=i, doc_id=doc or i, text=i, score=score, **kw)  # type: ignore[arg-type]


class TestReciprocalRankFusion:
    def test_scores_follow_the_formula(self) -> None:
        fused = reciprocal_rank_fusion({"a": [h("x"), h("y")], "b": [h("y"), h("z")]}, k=60)
        scores = {f.id: f.score for f in fused}
        assert scores["y"] == pytest.approx(1 / 62 + 1 / 61)
        assert scores["x"] == pytest.approx(1 / 61)
        assert scores["z"] == pytest.approx(1 / 62)
        assert [f.id for f in fused] == ["y", "x", "z"]

    def test_weights_let_a_strong_list_dominate(self) -> None:
        lists = {"dense": [h("d1"), h("d2")], "sparse": [h("s1"), h("d2")]}
        equal = {f.id: f.score for f in reciprocal_rank_fusion(lists)}
        weighted = reciprocal_rank_fusion(lists, weights={"dense": 1.0, "sparse": 0.2})
        assert equal["s1"] == pytest.approx(equal["d1"])  # equal weights: a lexical-only hit ties
        assert [f.id for f in weighted] == ["d2", "d1", "s1"]
        assert weighted[2].score == pytest.approx(0.2 / 61)

    def test_records_which_retrievers_found_each_hit_and_merges_paths(self) -> None:
        p1 = GraphPath(nodes=("q", "e", "x"), relationships=("MENTIONS", "EXPLAINS"))
        fused = reciprocal_rank_fusion({"dense": [h("x")], "graph": [h("x", paths=(p1,))]})
        assert fused[0].retrievers == ("dense", "graph")
        assert fused[0].paths == (p1,)

    def test_duplicates_within_a_list_count_once_at_their_best_rank(self) -> None:
        fused = reciprocal_rank_fusion({"a": [h("x"), h("x"), h("y")]}, k=0)
        assert {f.id: f.score for f in fused} == {"x": 1.0, "y": 0.5}

    def test_empty_lists_and_bad_k(self) -> None:
        assert reciprocal_rank_fusion({"a": []}) == []
        with pytest.raises(ValueError, match="k must be"):
            reciprocal_rank_fusion({"a": [h("x")]}, k=-1)


class TestWeightedScoreFusion:
    def test_min_max_normalises_each_list(self) -> None:
        fused = weighted_score_fusion(
            {"a": [h("x", 10), h("y", 0)], "b": [h("y", 0.9), h("x", 0.1)]}
        )
        scores = {f.id: f.score for f in fused}
        assert scores == {"x": pytest.approx(1.0), "y": pytest.approx(1.0)}

    def test_constant_list_counts_one_per_hit(self) -> None:
        assert weighted_score_fusion({"a": [h("x", 3), h("y", 3)]})[0].score == pytest.approx(1.0)

    def test_unknown_method_names_the_valid_ones(self) -> None:
        with pytest.raises(ValueError, match="'rrf', 'weighted', 'dbsf'"):
            fuse({}, method="borda")  # type: ignore[arg-type]


class TestAggregate:
    def test_one_hit_per_document_with_decayed_support(self) -> None:
        hits = [h("c1", 1.0, doc="A"), h("c2", 0.9, doc="B"), h("c3", 0.5, doc="A")]
        out = aggregate(hits, decay=0.5)
        assert [x.doc_id for x in out] == ["A", "B"]
        assert out[0].score == pytest.approx(1.25)
        assert out[0].id == "c1"  # the best chunk represents its document


class TestAnchoredFusion:
    LISTS: ClassVar[dict[str, list[Hit]]] = {
        "dense": [h("a"), h("b"), h("c")],
        "sparse": [h("b"), h("a"), h("c")],
        # a short graph list that would outvote the vector lists' leader under plain RRF
        "graph": [h("c"), h("d")],
        "graph-expand": [h("c")],
    }

    def test_vector_leader_stays_first_and_graph_reorders_the_rest(self) -> None:
        plain = [h.id for h in fuse(self.LISTS, weights={"sparse": 0.7})]
        assert plain[0] == "c"
        anchored = anchored_fusion(self.LISTS, anchor_top=1, weights={"sparse": 0.7})
        assert [h.id for h in anchored] == ["a", "c", "b", "d"]
        scores = [h.score for h in anchored]
        assert scores == sorted(scores, reverse=True)
        assert set(anchored[1].retrievers) == {"dense", "sparse", "graph", "graph-expand"}

    def test_zero_anchor_or_vector_only_lists_are_plain_fusion(self) -> None:
        plain = [h.id for h in fuse(self.LISTS)]
        assert [h.id for h in anchored_fusion(self.LISTS, anchor_top=0)] == plain
        vector = {k: v for k, v in self.LISTS.items() if k in ("dense", "sparse")}
        assert [h.id for h in anchored_fusion(vector, anchor_top=2)] == [h.id for h in fuse(vector)]


def link(seed: str, target_doc: str) -> Hit:
    path = GraphPath(nodes=(seed, "entity", target_doc), relationships=("MENTIONS", "EXPLAINS"))
    return h(f"{target_doc}-summary", doc=target_doc, paths=(path,))


class TestPromoteLinked:
    # Fused order: leader a (chunks a1, a2), then documents b..g; the leader's chunk a1 links to
    # e and g, another chunk (c1) links to b.
    FUSED: ClassVar[list[Hit]] = [
        h("a1", 0.9, "a"),
        h("b1", 0.8, "b"),
        h("a2", 0.7, "a"),
        h("c1", 0.6, "c"),
        h("d1", 0.5, "d"),
        h("e1", 0.4, "e"),
        h("e2", 0.35, "e"),
        h("f1", 0.3, "f"),
        h("g1", 0.2, "g"),
    ]
    LINKS: ClassVar[list[Hit]] = [link("a1", "g"), link("c1", "b"), link("a1", "e")]

    def test_the_leaders_partners_move_up_behind_it_in_fused_order(self) -> None:
        out = promote_linked(self.FUSED, self.LINKS, lead=1, depth=20, limit=3)
        assert [x.id for x in out] == ["a1", "e1", "g1", "b1", "a2", "c1", "d1", "e2", "f1"]
        scores = [x.score for x in out]
        assert scores == sorted(scores, reverse=True)
        assert out[1].retrievers[-1] == LINKS
        assert out[1].paths[-1].nodes == ("a1", "entity", "e")
        assert out[3] == self.FUSED[1]  # not linked from the leader: untouched

    def test_depth_and_limit_bound_what_moves(self) -> None:
        # e is the 4th document after the leader, g the 6th.
        shallow = promote_linked(self.FUSED, self.LINKS, lead=1, depth=4, limit=3)
        assert [x.id for x in shallow][:3] == ["a1", "e1", "b1"]
        one = promote_linked(self.FUSED, self.LINKS, lead=1, depth=20, limit=1)
        assert [x.id for x in one][:3] == ["a1", "e1", "b1"]
        too_shallow = promote_linked(self.FUSED, self.LINKS, lead=1, depth=3, limit=3)
        assert too_shallow == self.FUSED

    def test_nothing_moves_without_leaders_links_or_room(self) -> None:
        assert promote_linked(self.FUSED, self.LINKS, lead=0, depth=20, limit=3) == self.FUSED
        assert promote_linked(self.FUSED, self.LINKS, lead=1, depth=20, limit=0) == self.FUSED
        assert promote_linked(self.FUSED, [], lead=1, depth=20, limit=3) == self.FUSED
        assert promote_linked(self.FUSED[:1], self.LINKS, lead=1, depth=20, limit=3) == [
            self.FUSED[0]
        ]

    def test_ranker_reads_links_but_never_fuses_them(self) -> None:
        lists = {
            "dense": [h("a1", doc="a"), h("b1", doc="b"), h("c1", doc="c")],
            "graph-expand": [h("b1", doc="b")],
            LINKS: [link("a1", "c"), link("a1", "z")],
        }
        ranker = FusionRanker(RetrievalSettings())
        out = asyncio.run(ranker.fuse(lists, plan=PLAN))
        assert [x.id for x in out] == ["a1", "c1", "b1"]  # z is linked but no retriever found it
        off = FusionRanker(RetrievalSettings(link_promote=0))
        assert [x.id for x in asyncio.run(off.fuse(lists, plan=PLAN))] == ["a1", "b1", "c1"]

    def test_the_plan_decides_the_anchor(self) -> None:
        # The class whose docstring names the error leads the vector lists; the page that says
        # how to fix it is second there but also reached over SOLVES.
        lists = {
            "dense": [h("class1", doc="code"), h("fix1", doc="docs")],
            "sparse": [h("class1", doc="code"), h("fix1", doc="docs")],
            "graph": [h("fix1", doc="docs")],
        }
        ranker = FusionRanker(RetrievalSettings())
        anchored = asyncio.run(ranker.fuse(lists, plan=PLAN))
        free = asyncio.run(ranker.fuse(lists, plan=replace(PLAN, anchor_top=0)))
        assert [x.id for x in anchored] == ["class1", "fix1"]
        assert [x.id for x in free] == ["fix1", "class1"]


def test_cap_per_document_moves_a_documents_extra_hits_below_the_others() -> None:
    hits = [h("a1", 0.9, "a"), h("a2", 0.8, "a"), h("a3", 0.7, "a"), h("b1", 0.6, "b")]
    out = cap_per_document(hits, max_per_document=2)
    assert [x.id for x in out] == ["a1", "a2", "b1", "a3"]
    assert [x.score for x in out] == [0.9, 0.8, 0.6, 0.6]
    assert [x.id for x in cap_per_document(hits, max_per_document=0)] == ["a1", "a2", "a3", "b1"]


def test_collapse_duplicates_folds_copies_from_other_documents_into_the_best_hit() -> None:
    text = "Set RAYWEAVE_HOME to move the store."
    hits = [
        Hit(id="a1", doc_id="a", text=text, score=0.9, source="/one/docs/a.md"),
        Hit(id="b1", doc_id="b", text="Another passage.", score=0.8, source="/one/docs/b.md"),
        Hit(id="c1", doc_id="c", text=f"  {text}\n", score=0.7, source="/two/docs/a.md"),
        Hit(id="d1", doc_id="d", text=text, score=0.6, source="/three/docs/a.md"),
        Hit(id="e1", doc_id="e", text="Elsewhere.", score=0.5, source="/x/e.md"),
    ]
    out = collapse_duplicates(hits)
    assert [x.id for x in out] == ["a1", "b1", "e1"]
    assert out[0].duplicates == ("/two/docs/a.md", "/three/docs/a.md")
    assert [x.score for x in out] == [0.9, 0.8, 0.5]
    assert [x.duplicates for x in out[1:]] == [(), ()]


def test_collapse_duplicates_keeps_repeats_within_one_document_unlisted() -> None:
    # A section whose only proposition repeats it, or one document repeating a line: one slot,
    # and no copy elsewhere to name.
    hits = [
        h("a1", 0.9, "a"),
        Hit(id="a2", doc_id="a", text="a1", score=0.8, level="section"),
        h("b1", 0.7, "b"),
    ]
    out = collapse_duplicates(hits)
    assert [x.id for x in out] == ["a1", "b1"]
    assert out[0].duplicates == ()
    textless = [Hit(id=i, doc_id=i, text="", score=0.5) for i in ("img1", "img2")]
    assert [x.id for x in collapse_duplicates(textless)] == ["img1", "img2"]


def test_collapse_duplicates_folds_a_passage_into_an_earlier_hit_of_its_document() -> None:
    # The quickstart's own query: a class section holding `should_retry` and `delay` ranked 3rd,
    # `should_retry` alone as its proposition 5th; both showed the same first 300 characters.
    method = "def should_retry(self, error, attempt):\n    return attempt < self.max_attempts"
    section = f"{method}\n\ndef delay(self, attempt):\n    return 2.0"
    hits = [
        Hit(id="s", doc_id="retry", text=section, score=0.9, level="section"),
        Hit(id="o", doc_id="other", text=method, score=0.8, level="proposition"),
        Hit(id="p", doc_id="retry", text=f"  {method}\n", score=0.7, level="proposition"),
        Hit(id="d", doc_id="retry", text="def delay(self, attempt):", score=0.6),
    ]
    out = collapse_duplicates(hits)
    # Another document's copy of the method stays (it is no copy of the whole section), and
    # names the document that also holds it word for word.
    assert [x.id for x in out] == ["s", "o"]
    assert [x.duplicates for x in out] == [(), ("retry",)]


@pytest.mark.parametrize("order", [(0, 1, 2, 3), (0, 3, 1, 2), (3, 0, 2, 1), (1, 2, 0, 3)])
def test_collapse_duplicates_of_two_checkouts_does_not_depend_on_which_copy_ranks_first(
    order: tuple[int, ...],
) -> None:
    # CI: one checkout's proposition ranked above the other checkout's section that holds it
    # (int8 scores of the copies near-tie); the section's copy was dropped as "held" by its own
    # document's passage and the proposition kept with no copy named.
    section = "A lease is a time-bounded claim. Renew it before it expires."
    part = "A lease is a time-bounded claim."
    hits = [
        Hit(id="sa", doc_id="a", text=section, score=0.9, source="/one/leases.md"),
        Hit(id="pb", doc_id="b", text=part, score=0.8, source="/two/leases.md"),
        Hit(id="pa", doc_id="a", text=part, score=0.7, source="/one/leases.md"),
        Hit(id="sb", doc_id="b", text=section, score=0.6, source="/two/leases.md"),
    ]
    out = collapse_duplicates([hits[i] for i in order])
    assert len(out) == 1
    other = {"/one/leases.md": ("/two/leases.md",), "/two/leases.md": ("/one/leases.md",)}
    assert out[0].duplicates == other[out[0].source or ""]


def test_collapse_duplicates_folds_a_section_ranked_after_a_passage_it_holds() -> None:
    # The same query after the classifier fix: the method 2nd, its class section 6th.
    part = "Retries back off exponentially."
    hits = [
        Hit(id="p", doc_id="a", text=part, score=0.9, level="proposition"),
        Hit(id="b", doc_id="b", text=f"{part} Elsewhere.", score=0.85),
        Hit(id="s", doc_id="a", text=f"{part} The ceiling is max_delay.", score=0.8),
        Hit(id="t", doc_id="a", text="Jitter spreads retries.", score=0.7),
    ]
    assert [x.id for x in collapse_duplicates(hits)] == ["p", "b", "t"]


class TestFactWalk:
    """A walk seeded by facts ranks on its own ('walk') or votes like graph-expand ('fused')."""

    LISTS: ClassVar[dict[str, list[Hit]]] = {
        "dense": [h("a"), h("b"), h("c")],
        "sparse": [h("a"), h("c")],
        FACT_WALK: [h("c", 0.5), h("z", 0.2)],
    }

    def plan(self) -> RetrievalPlan:
        return RetrievalPlan(
            profile=Profile.GRAPH,
            query_type=QueryType.MULTI_HOP,
            scope=ContentScope.DOCS,
            weights={"dense": 1.0, "sparse": 0.7, "graph-expand": 0.4},
        )

    def test_walk_first_keeps_the_walk_order_then_the_rest(self) -> None:
        out = walk_first([h("c", 0.5), h("z", 0.2)], [h("a", 0.9), h("c", 0.8), h("b", 0.1)])
        assert [x.id for x in out] == ["c", "z", "a", "b"]
        scores = [x.score for x in out]
        assert scores == sorted(scores, reverse=True)

    def test_the_walk_ranks_when_fact_ranking_is_walk(self) -> None:
        ranker = FusionRanker(RetrievalSettings(fact_ranking="walk"))
        fused = asyncio.run(ranker.fuse(self.LISTS, self.plan()))
        assert [x.id for x in fused] == ["c", "z", "a", "b"]

    def test_auto_fuses_a_walk_over_sparse_facts_and_walk_still_walks(self) -> None:
        sparse = {
            **self.LISTS,
            FACT_WALK: [replace(x, metadata={SPARSE_FACTS: True}) for x in self.LISTS[FACT_WALK]],
        }
        auto = FusionRanker(RetrievalSettings(fact_ranking="auto"), extractor="file:x.json")
        assert [x.id for x in asyncio.run(auto.fuse(self.LISTS, self.plan()))][:2] == ["c", "z"]
        assert [x.id for x in asyncio.run(auto.fuse(sparse, self.plan()))][:2] == ["a", "c"]
        forced = FusionRanker(RetrievalSettings(fact_ranking="walk"))
        assert [x.id for x in asyncio.run(forced.fuse(sparse, self.plan()))][:2] == ["c", "z"]

    def test_the_walk_votes_as_graph_expand_when_fused(self) -> None:
        ranker = FusionRanker(RetrievalSettings(fact_ranking="fused"))
        fused = asyncio.run(ranker.fuse(self.LISTS, self.plan()))
        assert [x.id for x in fused][:2] == ["a", "c"]  # dense's leader stays first
        assert {x.id for x in fused} == {"a", "b", "c", "z"}


@pytest.mark.parametrize(
    ("mode", "extractor", "expected"),
    [
        ("auto", "openai:http://127.0.0.1:8000/v1#m", "walk"),
        ("auto", "file:/data/openie.json", "walk"),
        ("auto", "local:model.gguf", "walk"),
        ("auto", "rules", "fused"),
        ("auto", None, "fused"),
        ("walk", "rules", "walk"),
        ("fused", "openai:http://127.0.0.1:8000/v1#m", "fused"),
    ],
)
def test_auto_fact_ranking_walks_only_on_model_made_facts(
    mode: Literal["auto", "walk", "fused"], extractor: str | None, expected: str
) -> None:
    assert fact_ranking_for(mode, extractor) == expected


class TestDistributionBasedScoreFusion:
    def test_each_list_maps_mean_plus_minus_three_sd_onto_0_1(self) -> None:
        fused = fuse({"a": [h("x", 3), h("y", 2), h("z", 1)], "b": [h("z", 5)]}, method="dbsf")
        scores = {f.id: f.score for f in fused}
        sd = (2 / 3) ** 0.5
        assert scores["y"] == pytest.approx(0.5)  # the mean sits in the middle
        assert scores["x"] == pytest.approx((3 - (2 - 3 * sd)) / (6 * sd))
        assert scores["z"] == pytest.approx((1 - (2 - 3 * sd)) / (6 * sd) + 1.0)
        assert [f.id for f in fused] == ["z", "x", "y"]

    def test_scores_beyond_three_sd_are_clamped(self) -> None:
        hits = [h("out", 1000.0), *(h(f"h{i}", 1.0) for i in range(20))]
        assert fuse({"a": hits}, method="dbsf")[0].score == pytest.approx(1.0)

    def test_a_constant_list_counts_one_per_hit(self) -> None:
        assert fuse({"a": [h("x", 2), h("y", 2)]}, method="dbsf")[1].score == pytest.approx(1.0)
