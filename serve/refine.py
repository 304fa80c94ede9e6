"""Refinement of the fused candidates: TF-IDF statement reranking (graphrag-toolkit's default),
ColBERT-style MaxSim, a cross-encoder, query likelihood under a local LM (UPR), or a chat LLM.

Every refiner blends its own relevance with the fused rank instead of replacing it: a refiner
that is weak on some query then nudges, it cannot wreck, the ranking (the fusion already
combines several independent signals).
"""

from __future__ import annotations

import asyncio
import math
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Protocol, runtime_checkable

from rayweave.cluster.errors import ConfigError
from rayweave.cluster.settings import Settings
from rayweave.cluster.types import Hit
from rayweave.models.likelihood import Passage, QueryLikelihoodScorer
from rayweave.models.protocols import ChatModel
from rayweave.serve.search import Refiner, RetrievalPlan

_TOKEN = re.compile(r"[a-z0-9]+")


def _terms(text: str) -> list[str]:
    return _TOKEN.findall(text.casefold())


def tfidf_scores(query: str, texts: Sequence[str]) -> list[float]:
    """Cosine between the query and each text in a TF-IDF space built over the candidates
    (the candidate set is the collection: rare-among-candidates terms discriminate best)."""
    docs = [Counter(_terms(t)) for t in texts]
    n = len(docs)
    df: Counter[str] = Counter()
    for d in docs:
        df.update(d.keys())
    idf = {t: math.log((1 + n) / (1 + c)) + 1.0 for t, c in df.items()}
    q = Counter(_terms(query))
    qv = {t: (1 + math.log(c)) * idf.get(t, math.log(1 + n) + 1.0) for t, c in q.items()}
    qn = math.sqrt(sum(v * v for v in qv.values())) or 1.0
    out = []
    for d in docs:
        dv = {t: (1 + math.log(c)) * idf[t] for t, c in d.items()}
        dn = math.sqrt(sum(v * v for v in dv.values())) or 1.0
        out.append(sum(qv[t] * dv.get(t, 0.0) for t in qv) / (qn * dn))
    return out


def blend(hits: Sequence[Hit], relevance: Sequence[float], *, weight: float) -> list[Hit]:
    """Reorder by `(1-weight) * rank_score + weight * normalised relevance`; rank_score is
    1/(1+rank) so the fused order keeps a voice."""
    if not hits:
        return []
    lo, hi = min(relevance), max(relevance)
    span = (hi - lo) or 1.0
    scored = [
        h.evolve(score=(1 - weight) / (1 + i) + weight * (r - lo) / span)
        for i, (h, r) in enumerate(zip(hits, relevance, strict=True))
    ]
    scored.sort(key=lambda h: -h.score)
    return scored


def zscores(values: Sequence[float]) -> list[float]:
    """Standard scores within one candidate list (all 0 when the values are all equal)."""
    n = len(values)
    if n == 0:
        return []
    mean = sum(values) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / n)
    return [(v - mean) / std if std > 0 else 0.0 for v in values]


def blend_standardised(
    hits: Sequence[Hit], relevance: Sequence[float], *, weight: float
) -> list[Hit]:
    """Reorder by `z(fused score) + weight * z(relevance)`: both signals on one scale, so that
    the weight means the same for every query however peaked either score distribution is."""
    fused = zscores([h.score for h in hits])
    rel = zscores(relevance)
    scored = [h.evolve(score=f + weight * r) for h, f, r in zip(hits, fused, rel, strict=True)]
    scored.sort(key=lambda h: -h.score)
    return scored


def above(head: list[Hit], tail: list[Hit]) -> list[Hit]:
    """`head + tail` for a refiner that rescored only its window: the head's scores are shifted
    when needed so that the list stays sorted (clients read scores as a ranking)."""
    if not head or not tail:
        return head + tail
    gap = max(h.score for h in tail) - min(h.score for h in head)
    if gap < 0:
        return head + tail
    return [h.evolve(score=h.score + gap + 1.0) for h in head] + tail


@runtime_checkable
class PairScorer(Protocol):
    """A cross-encoder (`sentence_transformers.CrossEncoder`): one score per (query, text)."""

    def predict(self, pairs: list[tuple[str, str]]) -> Iterable[float]: ...


@runtime_checkable
class MaxSimScorer(Protocol):
    """A multi-vector encoder (BGE-M3): ColBERT-style MaxSim of the query against each text."""

    def maxsim(self, query: str, texts: Sequence[str]) -> list[float]: ...


class TfidfRefiner:
    def __init__(self, *, weight: float = 0.3) -> None:
        self.weight = weight

    async def refine(self, query: str, hits: list[Hit], plan: RetrievalPlan) -> list[Hit]:
        context = [f"{h.title} {' '.join(h.section_path)} {h.text}" for h in hits]
        return blend(hits, tfidf_scores(query, context), weight=self.weight)


class ModelRefiner:
    """Cross-encoder or BGE-M3 MaxSim relevance, blended."""

    def __init__(self, scorer: PairScorer | MaxSimScorer, *, weight: float = 0.5) -> None:
        self.scorer = scorer
        self.weight = weight

    async def refine(self, query: str, hits: list[Hit], plan: RetrievalPlan) -> list[Hit]:
        texts = [h.text for h in hits]
        scores = await asyncio.to_thread(self._score, query, texts)
        return blend(hits, scores, weight=self.weight)

    def _score(self, query: str, texts: list[str]) -> list[float]:
        if isinstance(self.scorer, PairScorer):
            return [float(s) for s in self.scorer.predict([(query, t) for t in texts])]
        return [float(s) for s in self.scorer.maxsim(query, texts)]


async def _refine_window(
    hits: list[Hit], window: int, rescore: Callable[[list[Hit]], Awaitable[list[Hit]]]
) -> list[Hit]:
    """Rescore the top `window` hits (left alone below two: nothing to reorder), and keep the
    rest below them."""
    head, tail = hits[:window], hits[window:]
    if len(head) < 2:
        return hits
    return above(await rescore(head), tail)


class LikelihoodRefiner:
    """Query likelihood (UPR) over the top `window`: how probable a local causal LM finds the query
    after reading each candidate (`models/likelihood.py`), blended with the fused order."""

    def __init__(self, scorer: QueryLikelihoodScorer, *, window: int, weight: float) -> None:
        self.scorer = scorer
        self.window = window
        self.weight = weight

    async def refine(self, query: str, hits: list[Hit], plan: RetrievalPlan) -> list[Hit]:
        async def rescore(head: list[Hit]) -> list[Hit]:
            passages = [_passage(h) for h in head]
            scores = await asyncio.to_thread(self.scorer.score, query, passages)
            return blend_standardised(head, scores, weight=self.weight)

        return await _refine_window(hits, self.window, rescore)


def _passage(hit: Hit) -> Passage:
    if hit.metadata.get("content_type") == "code":
        return Passage(text=hit.text, code_language=str(hit.metadata.get("language") or ""))
    title = hit.title.strip()
    text = hit.text if not title or hit.text.startswith(title) else f"{title}. {hit.text}"
    return Passage(text=text)


_RANKING = re.compile(r"\d+")


def parse_ranking(reply: str, n: int) -> list[int]:
    """Indices (0-based) from an LLM's 'best first' list like '[3, 1, 2]'; unknown or repeated
    numbers are ignored and unmentioned candidates keep their fused order at the end."""
    order: list[int] = []
    for token in _RANKING.findall(reply):
        i = int(token) - 1
        if 0 <= i < n and i not in order:
            order.append(i)
    order.extend(i for i in range(n) if i not in order)
    return order


RANKING_INSTRUCTION = (
    "Rank passages by how well they answer the question. Reply with passage numbers only, "
    "best first, e.g. [2, 1, 3]."
)


class LlmRefiner:
    """Listwise reranking by a chat model (seed 004's agentic refinement), over the top `window`."""

    def __init__(self, chat: ChatModel, *, window: int = 10, weight: float = 0.5) -> None:
        self.chat = chat
        self.window = window
        self.weight = weight

    async def refine(self, query: str, hits: list[Hit], plan: RetrievalPlan) -> list[Hit]:
        return await _refine_window(hits, self.window, lambda head: self._rescore(query, head))

    async def _rescore(self, query: str, head: list[Hit]) -> list[Hit]:
        passages = "\n".join(f"[{i + 1}] {h.title}: {h.text[:400]}" for i, h in enumerate(head))
        messages = [
            {"role": "system", "content": RANKING_INSTRUCTION},
            {"role": "user", "content": f"Question: {query}\n\nPassages:\n{passages}\n\nRanking:"},
        ]
        reply = await asyncio.to_thread(self.chat.complete, messages, max_tokens=64)
        order = parse_ranking(reply, len(head))
        relevance = [0.0] * len(head)
        for rank, i in enumerate(order):
            relevance[i] = 1.0 / (1 + rank)
        return blend(head, relevance, weight=self.weight)


def build_refiner(settings: Settings) -> Refiner:
    """The refiner named by `serve.retrieval.refiner` (built once per replica)."""
    mode = settings.serve.retrieval.refiner
    if mode in ("off", "tfidf"):
        return TfidfRefiner()
    if mode == "cross-encoder":
        name = settings.serve.retrieval.cross_encoder
        if not name:
            raise ConfigError(
                "refiner 'cross-encoder' needs serve.retrieval.cross_encoder "
                "(a checkpoint name or path)"
            )
        from sentence_transformers import CrossEncoder

        from rayweave.models.resolve import resolve_model_path

        return ModelRefiner(CrossEncoder(str(resolve_model_path(name))))
    if mode == "maxsim":
        from rayweave.models.factory import build_dense_encoder

        encoder = build_dense_encoder(settings.models)
        if not isinstance(encoder, MaxSimScorer):
            raise ConfigError(
                "refiner 'maxsim' needs a multi-vector dense model (models.dense_kind='bge-m3')"
            )
        return ModelRefiner(encoder)
    if mode == "likelihood":
        from rayweave.models.factory import build_causal_lm

        retrieval = settings.serve.retrieval
        scorer = QueryLikelihoodScorer(
            build_causal_lm(retrieval.likelihood_model, settings.models),
            max_passage_tokens=retrieval.refine_max_tokens,
        )
        return LikelihoodRefiner(
            scorer, window=retrieval.refine_window, weight=retrieval.refine_weight
        )
    if mode == "llm":
        from rayweave.models.factory import build_chat_model

        chat = build_chat_model(settings.models)
        if chat is None:
            raise ConfigError("refiner 'llm' needs models.llm to name a chat model")
        return LlmRefiner(chat, window=settings.serve.retrieval.refine_window)
    raise ConfigError(
        f"unknown refiner {mode!r}; valid: off, tfidf, maxsim, cross-encoder, likelihood, llm"
    )
