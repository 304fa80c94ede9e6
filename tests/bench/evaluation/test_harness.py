"""The evaluation harness: its pure parts, and one whole run over a tiny BEIR folder."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from rayweave.bench.evaluation.beir import BeirDataset
from rayweave.bench.evaluation.harness import (
    EVAL_DEADLINE_MS,
    GRAPH_LISTS,
    OnlyLists,
    _with_sparse_bm25,
    _without_deadline,
    document_ranking,
    first_queries,
    paired_difference,
    per_query_scores,
    run_eval,
    slug,
    variants,
)
from rayweave.cluster.beir import BeirDocument
from rayweave.cluster.settings import RetrievalSettings, Settings
from rayweave.cluster.types import Hit
from rayweave.serve.fusion import FusionRanker
from rayweave.serve.schemas import ContentScope, Profile, QueryType
from rayweave.serve.search import RetrievalPlan


def test_chunk_hits_map_to_documents_at_their_best_rank() -> None:
    assert document_ranking(["d2", "d1", "d2", "d3", "d1"]) == ["d2", "d1", "d3"]


def test_per_query_scores_cover_every_reported_metric() -> None:
    scores = per_query_scores(["a", "x", "b"], {"a": 1, "b": 1})
    assert scores["mrr@10"] == 1.0
    assert scores["recall@2"] == 0.5
    assert scores["all_relevant@5"] == 1.0
    assert scores["precision@10"] == pytest.approx(0.2)


def test_paired_difference_is_deterministic_and_brackets_the_mean() -> None:
    a, b = [1.0, 0.5, 1.0, 0.0] * 10, [0.5, 0.5, 0.0, 0.0] * 10
    mean, lo, hi = paired_difference(a, b)
    assert mean == pytest.approx(0.375)
    assert lo <= mean <= hi
    assert paired_difference(a, b) == (mean, lo, hi)
    assert paired_difference([], []) == (0.0, 0.0, 0.0)


def test_variants_ablation_ladder_and_explicit_profiles() -> None:
    ladder = variants([], ablation=True, default_profile="hybrid+graph")
    names = [v.name for v in ladder]
    assert names[:6] == ["bm25", "sparse", "dense", "graph", "hybrid", "hybrid+graph"]
    assert ladder[0].bm25
    assert ladder[3].only == GRAPH_LISTS
    assert ladder[-1].hierarchical is True
    assert [v.profile for v in variants(["dense"], ablation=False, default_profile="hybrid")] == [
        Profile.DENSE
    ]
    assert variants([], ablation=False, default_profile="hybrid")[0].profile is Profile.HYBRID
    with pytest.raises(ValueError, match="nope"):
        variants(["nope"], ablation=False, default_profile="hybrid")


def test_a_list_alone_is_that_list_through_the_whole_fusion() -> None:
    plan = RetrievalPlan(
        profile=Profile.GRAPH, query_type=QueryType.GENERAL, scope=ContentScope.DOCS
    )
    lists = {
        "dense": [Hit(id="d", doc_id="D", text="", score=1.0)],
        "graph": [Hit(id="g", doc_id="G", text="", score=0.5)],
    }
    alone = OnlyLists(FusionRanker(RetrievalSettings()), GRAPH_LISTS)
    assert [h.id for h in asyncio.run(alone.fuse(lists, plan))] == ["g"]


def test_lists_the_plan_mutes_beside_dense_still_rank_alone() -> None:
    # A web-phrased code question's plan weighs the graph lists 0 beside dense.
    plan = RetrievalPlan(
        profile=Profile.GRAPH,
        query_type=QueryType.CODE,
        scope=ContentScope.CODE,
        weights={"dense": 1.0, "graph": 0.0, "graph-expand": 0.0},
    )
    lists = {
        "dense": [Hit(id="d", doc_id="D", text="", score=1.0)],
        "graph": [Hit(id=i, doc_id=i, text="", score=1.0) for i in ("g3", "g1", "g2")],
    }
    alone = OnlyLists(FusionRanker(RetrievalSettings()), GRAPH_LISTS)
    assert [h.id for h in asyncio.run(alone.fuse(lists, plan))] == ["g3", "g1", "g2"]


def test_slug_and_settings_overrides_leave_the_original_alone() -> None:
    assert slug("hotpotqa dev/../x") == "hotpotqa-dev-x"
    base = Settings()
    quality = _without_deadline(base)
    assert quality.serve.deadline_ms == max(base.serve.deadline_ms, EVAL_DEADLINE_MS)
    assert _with_sparse_bm25(quality).models.sparse_kind == "bm25"
    assert base.models.sparse_kind != "bm25"
    assert base.serve.deadline_ms != quality.serve.deadline_ms


def test_first_queries_keeps_judged_queries_in_file_order_and_the_whole_corpus() -> None:
    data = BeirDataset(
        name="t",
        corpus={d: BeirDocument(id=d, title="", text=d) for d in ("d1", "d2")},
        queries={"q1": "a", "q2": "unjudged", "q3": "b", "q4": "c"},
        qrels={"q1": {"d1": 1}, "q3": {"d2": 1}, "q4": {"d1": 1}},
    )
    head = first_queries(data, 2)
    assert list(head.queries) == ["q1", "q3"]
    assert set(head.qrels) == {"q1", "q3"}
    assert head.corpus == data.corpus
    assert first_queries(data, None) is data
    with pytest.raises(ValueError, match="max_queries"):
        first_queries(data, 0)


HOTPOT_LIKE = [
    ("d1", "Arthur's Magazine", "Arthur's Magazine was an American literary periodical "
     "published in Philadelphia. In 1846 it was merged into Godey's Lady's Book."),
    ("d2", "Godey's Lady's Book", "Godey's Lady's Book was a women's magazine published in "
     "Philadelphia by Louis A. Godey from 1830 to 1878."),
    ("d3", "First for Women", "First for Women is a women's magazine published by Bauer Media "
     "Group in the USA."),
    ("d4", "Bauer Media Group", "Bauer Media Group is a German media company based in Hamburg."),
    ("d5", "Hamburg", "Hamburg is the second-largest city in Germany, on the river Elbe."),
    ("d6", "Elbe", "The Elbe is one of the major rivers of Central Europe."),
]  # fmt: skip
QUERIES = {
    "q1": ("Which magazine was Arthur's Magazine merged into?", {"d1": 1, "d2": 1}),
    "q2": ("In which city is the publisher of First for Women based?", {"d3": 1, "d4": 1}),
    "q3": ("Which river flows through Hamburg?", {"d5": 1, "d6": 1}),
}


@pytest.mark.integration
def test_run_eval_ingests_scores_and_reports_per_query(
    ray_stack: Settings, graph_connection: object, tmp_path: Path
) -> None:
    folder = tmp_path / "tiny-beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "title": t, "text": x}) + "\n" for i, t, x in HOTPOT_LIKE)
    )
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, (t, _) in QUERIES.items())
    )
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n"
        + "".join(f"{q}\t{d}\t{r}\n" for q, (_, rel) in QUERIES.items() for d, r in rel.items())
    )
    report_path = tmp_path / "report.json"
    out = io.StringIO()

    report = run_eval(
        ray_stack,
        folder,
        profiles=["dense", "hybrid+graph"],
        fresh=True,
        report_path=report_path,
        console=Console(file=out),
    )

    assert report.collection == "eval-tiny-beir"
    assert report.queries == 3
    assert [r.name for r in report.results] == ["dense", "hybrid+graph"]
    for result in report.results:
        assert set(result.per_query) == set(QUERIES)
        # Six documents, two relevant per query: everything relevant is in the first five.
        assert result.scores["recall@5"] == 1.0
        assert all(0.0 <= v <= 1.0 for v in result.scores.values())
        # The title-named passage answers first.
        assert result.per_query["q1"]["mrr@10"] == 1.0
    # without a terminal each phase ends with a progress line: ingest, then each profile's queries
    log = out.getvalue()
    assert "ingest eval-tiny-beir: 6/6 documents" in log
    assert "queries dense: 3/3 queries" in log
    assert "queries hybrid+graph: 3/3 queries" in log
    saved = json.loads(report_path.read_text())
    assert saved["results"][1]["per_query"]["q1"]["recall@5"] == 1.0
    assert set(saved["results"][0]["scores"]) == set(report.results[0].scores)
