"""Query likelihood under a causal LM: how probable the query is after reading a passage.

Unsupervised passage re-ranking (UPR; Sachan et al., EMNLP 2022) scores a candidate by
`log P(query | prompt(passage))` under a language model that never saw relevance labels: a
generative reader asks "would this passage make someone ask that?", which a bi-encoder's single
vector cannot. The query is the same for every candidate, so the summed log-probability ranks
them without length normalisation.

Rows are padded on the left so that the query's tokens sit at the same positions in every row:
the LM head then runs on those positions only (`logits_to_keep`), not on the passages, which
keeps a 49k-word vocabulary's logits out of memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch loads with the model, not with the serve code that names the types
    from rayweave.models.llm import LocalCausalLM


@dataclass(frozen=True, slots=True, kw_only=True)
class Passage:
    text: str
    code_language: str | None = None
    """Set for source code: code gets a comment-style prompt, prose UPR's question prompt."""


def prompt_parts(passage: Passage) -> tuple[str, str]:
    """(before the passage, between the passage and the query)."""
    if passage.code_language is not None:
        lang = passage.code_language
        label = f"{lang.capitalize()} code" if lang else "code"
        return "", f"\n# Search query that this {label} answers:\n#"
    return "Passage: ", "\nPlease write a question based on this passage.\nQuestion:"


def query_log_likelihoods(
    lm: LocalCausalLM,
    query: str,
    passages: Sequence[Passage],
    *,
    max_passage_tokens: int = 192,
) -> list[float]:
    """`log P(query | prompt(passage))` per passage, summed over the query's tokens.

    Not thread-safe (tokenizer and model): `QueryLikelihoodScorer` serialises calls.
    """
    import torch

    query = " ".join(query.split())
    if not query:
        raise ValueError("query is empty")
    if not passages:
        return []
    tok = lm.tokenizer
    q_ids = tok(" " + query, add_special_tokens=False)["input_ids"]
    rows: list[list[int]] = []
    for p in passages:
        before, after = prompt_parts(p)
        body = tok(before + p.text, add_special_tokens=False)["input_ids"][:max_passage_tokens]
        rows.append(body + tok(after, add_special_tokens=False)["input_ids"] + q_ids)
    width = max(map(len, rows))
    pad = tok.pad_token_id if tok.pad_token_id is not None else (tok.eos_token_id or 0)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, width - len(row) :] = torch.tensor(row)
        mask[i, width - len(row) :] = 1
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    n = len(q_ids)
    target = torch.tensor(q_ids).expand(len(rows), n)
    with torch.inference_mode():
        out = lm.model(
            input_ids=ids.to(lm.device),
            attention_mask=mask.to(lm.device),
            position_ids=positions.to(lm.device),
            logits_to_keep=n + 1,
        )
        # The logit at position t predicts token t+1: the last n+1 positions' first n score q.
        logp = torch.log_softmax(out.logits[:, :n, :].float(), dim=-1)
        scores = logp.gather(2, target.to(lm.device).unsqueeze(-1)).squeeze(-1).sum(-1)
    return [float(s) for s in scores.cpu()]


class QueryLikelihoodScorer:
    """A loaded causal LM bound to the scoring settings; scores in mini-batches."""

    def __init__(
        self, lm: LocalCausalLM, *, max_passage_tokens: int = 192, batch_size: int = 10
    ) -> None:
        self.lm = lm
        self.max_passage_tokens = max_passage_tokens
        self.batch_size = batch_size

    def score(self, query: str, passages: Sequence[Passage]) -> list[float]:
        out: list[float] = []
        with self.lm.lock:
            for start in range(0, len(passages), self.batch_size):
                out.extend(
                    query_log_likelihoods(
                        self.lm,
                        query,
                        passages[start : start + self.batch_size],
                        max_passage_tokens=self.max_passage_tokens,
                    )
                )
        return out
