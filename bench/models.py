"""`rayweave bench models`: throughput and retrieval quality per model, runtime and precision.

Every figure is relative to a plain implementation measured in the same run (the machine may be
shared, so absolute rates drift between runs; ratios within one run do not). The blocks:

- dense and sparse (`model_encoders`): our CPU encoders at every precision and backend against
  `SentenceTransformer.encode` and a plain SPLADE loop; BM25 and the stored-vector quantizations
  are listed for reference.
- gpu (`model_gpu`, only with CUDA): BGE-M3's architecture in tokens/s. Without a GPU the
  section says so.

Quality is nDCG@10 of whole-document brute-force search over the BEIR dev sets (`model_quality`).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from rayweave.bench.evaluation.beir import load_beir
from rayweave.bench.model_encoders import BlockRun, dense_rows, sparse_rows
from rayweave.bench.model_gpu import bge_m3_config, bge_m3_throughput_rows
from rayweave.bench.model_measure import ModelRow, add_ratios, speed_sample
from rayweave.bench.model_quality import subset
from rayweave.cluster.progress import Advance, progress_bar
from rayweave.models.precision import configure_threads

if TYPE_CHECKING:
    from rich.console import Console

    from rayweave.cluster.settings import Settings

DATASETS = ("hotpotqa-dev", "cosqa-dev")
SECTIONS = ("dense", "sparse", "gpu")


def _short_model(ref: str) -> str:
    if ref.startswith("package:"):
        return ref[len("package:") :].split("/", 1)[0]
    return Path(ref).name if "/" in ref and Path(ref).exists() else ref


def render_table(rows: Sequence[ModelRow]) -> Any:
    from rich.table import Table

    table = Table(
        title="rayweave bench models: ratios against the (base) row of each block, same run"
    )
    numeric = ("texts/s", "tokens/s", "x base", "nDCG@10", "nDCG vs base")
    for col in ("block", "data set", "model", "variant", *numeric):
        table.add_column(col, justify="right" if col in numeric else "left", no_wrap=True)
    for r in rows:
        table.add_row(
            r.section,
            r.dataset,
            _short_model(r.model),
            r.variant + (" (base)" if r.baseline else ""),
            f"{r.texts_per_s:.1f}" if r.seconds > 0 else "",
            f"{r.tokens_per_s:.0f}" if r.seconds > 0 and r.tokens else "",
            f"{r.speedup:.2f}" if r.speedup is not None and r.seconds > 0 else "",
            f"{r.ndcg10:.4f}" if r.ndcg10 is not None else "",
            f"{r.ndcg_change:+.2%}" if r.ndcg_change is not None else "",
        )
    return table


def run_models_bench(
    settings: Settings,
    *,
    data_dir: Path,
    limit: int | None = None,
    console: Console | None = None,
    datasets: Sequence[str] = DATASETS,
    sections: Sequence[str] = SECTIONS,
    rounds: int = 3,
    sample_size: int = 512,
) -> list[ModelRow]:
    """Measure every section on every data set, print the table, return the rows (with ratios)."""
    from rich.console import Console

    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        raise ValueError(f"unknown bench sections {unknown}; valid: {', '.join(SECTIONS)}")
    if rounds < 1 or sample_size < 1:
        raise ValueError("rounds and sample_size must be >= 1")
    con = console or Console()

    def say(line: str) -> None:
        con.print(line, markup=False, highlight=False)

    def bar(label: str, total: int) -> AbstractContextManager[Advance]:
        passes: AbstractContextManager[Advance] = progress_bar(con, label, total, unit="passes")
        return passes

    threads = configure_threads(settings.models.num_threads)
    say(
        f"torch threads: {threads}; data: {data_dir}; limit: {limit or 'all'}; "
        f"speed: best of {rounds} over {sample_size} texts"
    )
    run = BlockRun(settings=settings, rounds=rounds, sample_size=sample_size, say=say, bar=bar)
    rows: list[ModelRow] = []
    for name in datasets:
        ds = subset(load_beir(Path(data_dir) / name), limit)
        say(f"{name}: {len(ds.corpus)} documents, {len(ds.queries)} queries")
        if "dense" in sections:
            rows += dense_rows(run, ds)
        if "sparse" in sections:
            rows += sparse_rows(run, ds)
    if "gpu" in sections:
        rows += _gpu_rows(run, Path(data_dir), datasets[0], limit)
    rows = add_ratios(rows)
    con.print(render_table(rows), width=max(con.width, 160))
    return rows


def _gpu_rows(run: BlockRun, data_dir: Path, name: str, limit: int | None) -> list[ModelRow]:
    if not torch.cuda.is_available():
        run.say("gpu: no CUDA GPU visible to torch; the FP16 BGE-M3 throughput section is skipped")
        return []
    from rayweave.models.tokens import load_token_counter

    tokenizer = load_token_counter(run.settings.models).tokenizer
    ds = subset(load_beir(data_dir / name), limit)
    rows: list[ModelRow] = bge_m3_throughput_rows(
        speed_sample([d.full_text() for d in ds.corpus.values()], max(run.sample_size, 1024)),
        tokenizer,
        device="cuda",
        dataset=name,
        config=bge_m3_config(),
        settings=run.settings,
        rounds=run.rounds,
        say=run.say,
        bar=run.bar,
    )
    return rows
