from __future__ import annotations

import asyncio

import pytest

from rayweave.cluster.errors import ConfigError
from rayweave.cluster.settings import Settings
from rayweave.cluster.types import Hit
from rayweave.serve.refine import (
    LlmRefiner,
    TfidfRefiner,
    blend,
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


def test_build_refiner_explains_missing_configuration() -> None:
    settings = Settings(serve={"retrieval": {"refiner": "cross-encoder"}})
    with pytest.raises(ConfigError, match="cross_encoder"):
        build_refiner(settings)
    assert isinstance(build_refiner(Settings()), TfidfRefiner)
