from __future__ import annotations

import asyncio

import pytest
from tests_support import CODE_SNIPPETS as CODE

from rayweave.cluster.errors import ConfigError
from rayweave.cluster.settings import Settings
from rayweave.cluster.types import Hit
from rayweave.serve.refine import (
    LikelihoodRefiner,
    LlmRefiner,
    TfidfRefiner,
    above,
    blend,
    blend_standardised,
    build_refiner,
    parse_ranking,
    tfidf_scores,
)


def hit(i: str, text: str) -> Hit:
    return Hit(id=i, doc_id=i, text=text, score=1.0)


def test_tfidf_prefers_rare_query_terms() -> None:
    texts = ["the queue retries failed tasks", "the queue is fast", "the the the"]
    scores = tfidf_scores("retries failed", texts)
    assert scores[0] > scores[1] >= scores[2]
    assert all(0.0 <= s <= 1.0 + 1e-9 for s in scores)


def test_blend_keeps_a_voice_for_the_fused_order() -> None:
    hits = [hit("a", ""), hit("b", ""), hit("c", "")]
    assert next(h.id for h in blend(hits, [0.0, 0.0, 1.0], weight=0.3)) == "a"
    assert next(h.id for h in blend(hits, [0.0, 0.0, 1.0], weight=0.9)) == "c"


def test_tfidf_refiner_moves_the_matching_statement_up() -> None:
    hits = [
        hit("a", "installation steps for linux"),
        hit("b", "how to retry failed tasks with backoff"),
    ]
    out = asyncio.run(TfidfRefiner(weight=0.8).refine("retry failed tasks", hits, None))
    assert out[0].id == "b"


@pytest.mark.parametrize(
    ("reply", "expected"),
    [("[3, 1, 2]", [2, 0, 1]), ("2 > 2 > 9", [1, 0, 2]), ("no idea", [0, 1, 2])],
)
def test_parse_ranking(reply: str, expected: list[int]) -> None:
    assert parse_ranking(reply, 3) == expected


class _FixedChat:
    """A real ChatModel implementation with a canned policy (a model-free LLM stand-in)."""

    def complete(
        self, messages: list[dict[str, str]], *, max_tokens: int = 256, temperature: float = 0.0
    ) -> str:
        return "[2, 1]"


def test_llm_refiner_applies_the_models_ranking() -> None:
    hits = [hit("a", "x"), hit("b", "y"), hit("c", "z")]
    out = asyncio.run(LlmRefiner(_FixedChat(), window=2, weight=1.0).refine("q", hits, None))
    assert [h.id for h in out] == ["b", "a", "c"]
    assert [h.score for h in out] == sorted((h.score for h in out), reverse=True)


def test_build_refiner_explains_missing_configuration() -> None:
    settings = Settings(serve={"retrieval": {"refiner": "cross-encoder"}})
    with pytest.raises(ConfigError, match="cross_encoder"):
        build_refiner(settings)
    assert isinstance(build_refiner(Settings()), TfidfRefiner)


def test_blend_standardised_weight_decides() -> None:
    hits = [Hit(id=i, doc_id=i, text="", score=s) for i, s in (("a", 3.0), ("b", 2.0), ("c", 1.0))]
    assert [h.id for h in blend_standardised(hits, [0.0, 0.5, 1.0], weight=0.0)] == ["a", "b", "c"]
    assert [h.id for h in blend_standardised(hits, [0.0, 0.5, 1.0], weight=2.0)] == ["c", "b", "a"]
    # Equal relevance carries no information: the fused order stands.
    assert [h.id for h in blend_standardised(hits, [1.0, 1.0, 1.0], weight=9.0)] == ["a", "b", "c"]


def test_likelihood_refiner_needs_a_local_model() -> None:
    settings = Settings(
        serve={"retrieval": {"refiner": "likelihood", "likelihood_model": "openai:http://x/v1#m"}}
    )
    with pytest.raises(ConfigError, match="local causal LM"):
        build_refiner(settings)


@pytest.mark.slow
def test_likelihood_refiner_lifts_the_answer_and_keeps_the_tail_below() -> None:
    refiner = build_refiner(
        Settings(serve={"retrieval": {"refiner": "likelihood", "refine_window": 3}})
    )
    assert isinstance(refiner, LikelihoodRefiner)
    code = {"content_type": "code", "language": "python"}
    hits = [
        Hit(id=f"c{i}", doc_id=f"c{i}", text=t, score=1.0 - i / 10, metadata=code)
        for i, t in enumerate(CODE)
    ]
    hits += [Hit(id="t1", doc_id="t1", text="tail one", score=0.2)]
    hits += [Hit(id="t2", doc_id="t2", text="tail two", score=0.1)]
    out = asyncio.run(refiner.refine("how to sort a dictionary by value in python", hits, None))
    assert out[0].id == "c2"
    assert [h.id for h in out[3:]] == ["t1", "t2"]
    assert [h.score for h in out] == sorted((h.score for h in out), reverse=True)


def test_above_keeps_a_rescored_head_over_the_tail() -> None:
    head = [
        Hit(id="a", doc_id="a", text="", score=-1.0),
        Hit(id="b", doc_id="b", text="", score=-2.0),
    ]
    tail = [Hit(id="c", doc_id="c", text="", score=0.5)]
    out = above(head, tail)
    assert [h.id for h in out] == ["a", "b", "c"]
    assert [h.score for h in out] == [2.5, 1.5, 0.5]  # head's gaps kept, lifted over the tail
    high = [Hit(id="a", doc_id="a", text="", score=9.0)]
    assert above(high, tail) == high + tail  # already sorted: untouched
