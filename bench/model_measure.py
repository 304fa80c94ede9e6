"""How `rayweave bench models` times and scores one block of variants, and its row type.

Every figure is relative to a plain implementation measured in the same run (the machine may be
shared, so absolute rates drift between runs; ratios within one run do not).
"""

from __future__ import annotations

import dataclasses
import gc
import math
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from rayweave.bench.evaluation.beir import BeirDataset
from rayweave.cluster.progress import Advance

BarFactory = Callable[[str, int], AbstractContextManager[Advance]]
"""Opens a progress bar (label, total passes); `run_models_bench` draws them on its console."""

PLAIN_BATCH = 32
"""The batch size of every plain baseline (sentence-transformers' default)."""


@contextmanager
def no_bar(_label: str, _total: int) -> Iterator[Advance]:
    yield _ignore


def _ignore(_n: int = 1) -> None:
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRow:
    """One measured variant on one data set; ratios are filled in against the section baseline."""

    section: str
    dataset: str
    model: str
    variant: str
    texts: int
    tokens: int
    seconds: float
    ndcg10: float | None = None
    baseline: bool = False
    speedup: float | None = None
    ndcg_change: float | None = None

    @property
    def texts_per_s(self) -> float:
        return self.texts / self.seconds if self.seconds > 0 else math.inf

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else math.inf


@dataclass(frozen=True, slots=True, kw_only=True)
class Variant:
    """One way of encoding: document and query functions, and whether it is the block's baseline."""

    label: str
    docs: Callable[[Sequence[str]], Any]
    queries: Callable[[Sequence[str]], Any]
    baseline: bool = False


Scorer = Callable[[BeirDataset, Any, Any], float]


def speed_sample(texts: Sequence[str], size: int) -> list[str]:
    """A fixed random sample of the corpus (same for every variant and run)."""
    if len(texts) <= size:
        return list(texts)
    rng = np.random.default_rng(0)
    return [texts[i] for i in sorted(rng.choice(len(texts), size=size, replace=False).tolist())]


def _quality(
    section: str,
    ds: BeirDataset,
    variants: Sequence[Variant],
    score: Scorer,
    *,
    say: Callable[[str], None],
    keep: dict[str, tuple[Any, Any]] | None,
    advance: Advance,
) -> dict[str, float | None]:
    """nDCG@10 of one whole-corpus pass per variant (the baseline's vectors kept in `keep`)."""
    ndcg: dict[str, float | None] = {}
    for v in variants:
        texts = [d.full_text() for d in ds.corpus.values()]
        docs, queries = v.docs(texts), v.queries(list(ds.queries.values()))
        ndcg[v.label] = value = score(ds, docs, queries)
        if keep is not None and v.baseline:
            keep[v.label] = (docs, queries)
        advance(1)
        say(f"{section:6} {ds.name:13} {v.label:44} nDCG@10 {value:.4f}")
    return ndcg


def _best_times(
    variants: Sequence[Variant],
    sample: Sequence[str],
    *,
    rounds: int,
    after_pass: Callable[[], None],
    advance: Advance,
) -> dict[str, float]:
    """Best of `rounds` timed passes per variant, interleaved and rotated within each round."""
    best = {v.label: math.inf for v in variants}
    for v in variants:  # warm-up: first calls allocate and pick kernels
        v.docs(sample[: min(len(sample), PLAIN_BATCH)])
        after_pass()
        advance(1)
    for r in range(rounds):
        shift = r % len(variants)
        for v in [*variants[shift:], *variants[:shift]]:
            gc.collect()
            start = time.perf_counter()
            v.docs(sample)
            after_pass()
            best[v.label] = min(best[v.label], time.perf_counter() - start)
            advance(1)
    return best


def measure(
    *,
    section: str,
    model: str,
    ds: BeirDataset | None,
    variants: Sequence[Variant],
    sample: Sequence[str],
    sample_tokens: int,
    score: Scorer | None,
    rounds: int,
    say: Callable[[str], None],
    after_pass: Callable[[], None] = lambda: None,
    keep: dict[str, tuple[Any, Any]] | None = None,
    bar: BarFactory = no_bar,
) -> list[ModelRow]:
    """Quality from one whole-corpus pass per variant; speed as the best of `rounds` timed passes
    over `sample`, the variants interleaved within each round (rotated) so that load from other
    processes hits them alike, and the best time discards the passes it disturbed most. `bar`
    shows the passes (quality, warm-up, timed) as they finish."""
    quality = ds is not None and score is not None
    passes = len(variants) * ((1 if quality else 0) + 1 + rounds)
    label = f"{section} {ds.name if ds is not None else ''}".strip()
    ndcg: dict[str, float | None] = {v.label: None for v in variants}
    with bar(f"bench models {label}", passes) as advance:
        if ds is not None and score is not None:
            ndcg = _quality(section, ds, variants, score, say=say, keep=keep, advance=advance)
        best = _best_times(variants, sample, rounds=rounds, after_pass=after_pass, advance=advance)
    rows = [
        ModelRow(
            section=section,
            dataset=ds.name if ds is not None else "",
            model=model,
            variant=v.label,
            texts=len(sample),
            tokens=sample_tokens,
            seconds=best[v.label],
            ndcg10=ndcg[v.label],
            baseline=v.baseline,
        )
        for v in variants
    ]
    for row in rows:
        say(row_line(row))
    return rows


def add_ratios(rows: Sequence[ModelRow]) -> list[ModelRow]:
    """Speed-up against the baseline of the same section and data set, and the relative nDCG@10
    change against it (the fp32 reference)."""
    out: list[ModelRow] = []
    for row in rows:
        base = next(
            (
                b
                for b in rows
                if b.baseline and b.section == row.section and b.dataset == row.dataset
            ),
            None,
        )
        if base is None:
            out.append(row)
            continue
        timed = row.seconds > 0 and base.seconds > 0
        speedup = row.tokens_per_s / base.tokens_per_s if timed and base.tokens_per_s else None
        change = None
        if row.ndcg10 is not None and base.ndcg10:
            change = (row.ndcg10 - base.ndcg10) / base.ndcg10
        out.append(dataclasses.replace(row, speedup=speedup, ndcg_change=change))
    return out


def row_line(row: ModelRow) -> str:
    ndcg = f"nDCG@10 {row.ndcg10:.4f}" if row.ndcg10 is not None else ""
    return (
        f"{row.section:6} {row.dataset:13} {row.variant:44} {row.texts_per_s:9.1f} texts/s "
        f"{row.tokens_per_s:10.0f} tokens/s {ndcg}"
    )
