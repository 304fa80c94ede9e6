from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from tests_support import CODE_SNIPPETS as CODE

from rayweave.models.likelihood import (
    Passage,
    QueryLikelihoodScorer,
    prompt_parts,
    query_log_likelihoods,
)
from rayweave.models.llm import LocalCausalLM, load_local_causal_lm
from rayweave.models.precision import plan_execution

from .conftest import SMOLLM


@pytest.fixture(scope="module")
def tiny_lm(tiny_causal_lm_dir: Path) -> LocalCausalLM:
    return load_local_causal_lm(
        str(tiny_causal_lm_dir), plan_execution(device="cpu", precision="fp32")
    )


def _reference(lm: LocalCausalLM, query: str, passage: Passage, max_tokens: int) -> float:
    """The same log-likelihood from one unpadded row and the full logits."""
    tok = lm.tokenizer
    before, after = prompt_parts(passage)
    body = tok(before + passage.text, add_special_tokens=False)["input_ids"][:max_tokens]
    q = tok(" " + query, add_special_tokens=False)["input_ids"]
    ids = torch.tensor([body + tok(after, add_special_tokens=False)["input_ids"] + q])
    with torch.inference_mode():
        logp = torch.log_softmax(lm.model(input_ids=ids).logits[0].float(), dim=-1)
    start = ids.shape[1] - len(q)
    return float(sum(logp[start - 1 + i, t] for i, t in enumerate(q)))


def test_left_padded_batch_equals_each_row_alone(tiny_lm: LocalCausalLM) -> None:
    passages = [
        Passage(text="retry failed tasks with exponential backoff " * 6),
        Passage(text="def add(a, b):\n    return a + b", code_language="python"),
        Passage(text="short"),
    ]
    batch = query_log_likelihoods(tiny_lm, "how to retry", passages, max_passage_tokens=24)
    assert len(batch) == 3
    for p, got in zip(passages, batch, strict=True):
        assert got < 0
        assert math.isfinite(got)
        assert got == pytest.approx(_reference(tiny_lm, "how to retry", p, 24), abs=1e-3)


def test_scorer_batches_and_keeps_order(tiny_lm: LocalCausalLM) -> None:
    passages = [Passage(text=f"passage number {i} " * (i + 1)) for i in range(5)]
    whole = QueryLikelihoodScorer(tiny_lm, batch_size=10).score("number", passages)
    split = QueryLikelihoodScorer(tiny_lm, batch_size=2).score("number", passages)
    assert whole == pytest.approx(split, abs=1e-3)
    assert QueryLikelihoodScorer(tiny_lm).score("number", []) == []


def test_empty_query_is_rejected(tiny_lm: LocalCausalLM) -> None:
    with pytest.raises(ValueError, match="query is empty"):
        query_log_likelihoods(tiny_lm, "  ", [Passage(text="x")])


def test_code_and_prose_prompts_differ() -> None:
    assert "Python code" in prompt_parts(Passage(text="x", code_language="python"))[1]
    assert "code answers" in prompt_parts(Passage(text="x", code_language=""))[1]
    assert prompt_parts(Passage(text="x"))[0] == "Passage: "


@pytest.mark.slow
@pytest.mark.parametrize(
    ("query", "best"),
    [("python read a file", 0), ("how to sort a dictionary by value in python", 2)],
)
def test_smollm2_prefers_the_code_that_answers(query: str, best: int) -> None:
    lm = load_local_causal_lm(SMOLLM, plan_execution(device="cpu", precision="fp32"))
    scores = QueryLikelihoodScorer(lm).score(
        query, [Passage(text=t, code_language="python") for t in CODE]
    )
    assert max(range(3), key=scores.__getitem__) == best


@pytest.mark.slow
def test_smollm2_prefers_the_passage_that_answers() -> None:
    lm = load_local_causal_lm(SMOLLM, plan_execution(device="cpu", precision="fp32"))
    prose = QueryLikelihoodScorer(lm).score(
        "Which river flows through Paris?",
        [
            Passage(text="The Danube flows through Vienna and Budapest."),
            Passage(text="The Seine is the river that flows through Paris."),
        ],
    )
    assert prose[1] > prose[0]
