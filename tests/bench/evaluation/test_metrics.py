import math

import pytest

from rayweave.bench.evaluation.metrics import (
    all_relevant_at_k,
    dcg_at_k,
    evaluate,
    mrr_at_k,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
)

# Two relevant documents (a, b); the ranking finds b at rank 2 and a at rank 4.
RANKING = ["x", "b", "y", "a", "z"]
REL = {"a": 1, "b": 1, "n": 0}


class TestNdcg:
    def test_hand_computed_binary(self) -> None:
        dcg = 1 / math.log2(3) + 1 / math.log2(5)
        ideal = 1 / math.log2(2) + 1 / math.log2(3)
        assert ndcg_at_k(RANKING, REL, 10) == pytest.approx(dcg / ideal)
        assert ndcg_at_k(RANKING, REL, 10) == pytest.approx(0.6509209)

    def test_cut_at_k(self) -> None:
        # Only b (rank 2) is inside the top 3.
        assert ndcg_at_k(RANKING, REL, 3) == pytest.approx(
            (1 / math.log2(3)) / (1 + 1 / math.log2(3))
        )

    def test_graded_relevance_uses_linear_gain(self) -> None:
        rel = {"a": 2, "b": 1}
        dcg = 1 / math.log2(2) + 2 / math.log2(3)
        ideal = 2 / math.log2(2) + 1 / math.log2(3)
        assert ndcg_at_k(["b", "a"], rel, 10) == pytest.approx(dcg / ideal)
        assert dcg_at_k(["b", "a"], rel, 10) == pytest.approx(dcg)

    def test_perfect_and_empty(self) -> None:
        assert ndcg_at_k(["a", "b", "x"], REL, 10) == pytest.approx(1.0)
        assert ndcg_at_k([], REL, 10) == 0.0
        assert ndcg_at_k(["a"], {"a": 0}, 10) == 0.0

    def test_duplicates_count_once(self) -> None:
        # A chunked pipeline returning b twice must not be rewarded twice.
        assert ndcg_at_k(["b", "b", "a"], REL, 10) == pytest.approx(ndcg_at_k(["b", "a"], REL, 10))
        assert precision_at_k(["b", "b"], REL, 2) == 0.5

    def test_bad_k(self) -> None:
        with pytest.raises(ValueError, match="k must be"):
            ndcg_at_k(RANKING, REL, 0)


class TestOtherMetrics:
    def test_mrr(self) -> None:
        assert mrr_at_k(RANKING, REL, 10) == pytest.approx(0.5)
        assert mrr_at_k(RANKING, REL, 1) == 0.0

    def test_recall_is_fraction_found(self) -> None:
        assert recall_at_k(RANKING, REL, 2) == pytest.approx(0.5)
        assert recall_at_k(RANKING, REL, 4) == pytest.approx(1.0)

    def test_all_relevant(self) -> None:
        assert all_relevant_at_k(RANKING, REL, 3) == 0.0
        assert all_relevant_at_k(RANKING, REL, 4) == 1.0

    def test_precision(self) -> None:
        assert precision_at_k(RANKING, REL, 5) == pytest.approx(0.4)
        assert precision_at_k(["b"], REL, 5) == pytest.approx(0.2)


class TestEvaluate:
    def test_means_over_judged_queries_and_missing_runs_score_zero(self) -> None:
        qrels = {"q1": REL, "q2": {"c": 1}, "q3": {"d": 0}}
        run = {"q1": RANKING}
        scores = evaluate(run, qrels, ks=(2, 10))
        # q3 has no relevant document: not counted; q2 has no run: counts as 0.
        assert scores.num_queries == 2
        assert scores["ndcg@10"] == pytest.approx(0.6509209 / 2)
        assert scores["recall@2"] == pytest.approx(0.25)
        assert scores["mrr@10"] == pytest.approx(0.25)

    def test_unknown_metric_and_empty_qrels(self) -> None:
        with pytest.raises(ValueError, match="unknown metrics"):
            evaluate({}, {"q": {"a": 1}}, metrics=("map",))
        with pytest.raises(ValueError, match="no query"):
            evaluate({}, {"q": {"a": 0}})
        with pytest.raises(KeyError, match="no metric"):
            evaluate({"q": ["a"]}, {"q": {"a": 1}}, ks=(1,))["ndcg@10"]
