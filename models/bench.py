"""`rayweave bench models`: throughput and retrieval quality per model, runtime and precision.

Every figure is relative to a plain implementation measured in the same run (the machine may be
shared, so absolute rates drift between runs; ratios within one run do not):

- dense: `SentenceTransformer.encode` in fp32 with its default batch of 32 is the baseline for
  speed and for quality; each of our variants encodes the same corpus with the same truncation.
- sparse: a plain SPLADE loop (masked-LM forward, `log1p(relu)` over all positions, max-pool,
  batches of 32) is the baseline; BM25 is listed for reference.
- gpu (only with CUDA): a random-weight model of BGE-M3's architecture (XLM-R large + both heads)
  in tokens/s: plain fp32 and fp16 torch against our fp16 path. Without a GPU the section says so.

Quality is nDCG@10 of whole-document brute-force search over the BEIR dev sets (documents embedded
as `title + " " + text`), as in the data README, so fp32 rows reproduce its reference figures.
"""

from __future__ import annotations

import copy
import dataclasses
import gc
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from rayweave.cluster.beir import BeirDataset, load_beir
from rayweave.cluster.metrics import evaluate
from rayweave.cluster.types import SparseVector
from rayweave.models.precision import RunOptions, configure_threads, plan_execution
from rayweave.models.resolve import resolve_model

if TYPE_CHECKING:
    from rich.console import Console

    from rayweave.cluster.settings import Settings

log = logging.getLogger(__name__)

DATASETS = ("hotpotqa-dev", "cosqa-dev")
SECTIONS = ("dense", "sparse", "gpu")
_PLAIN_BATCH = 32


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchRow:
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


# --------------------------------------------------------------------------------------------
# Data and scoring


def subset(ds: BeirDataset, limit: int | None) -> BeirDataset:
    """At most `limit` documents: the judged documents of the first queries (whole queries only),
    filled up with unjudged documents in file order. nDCG on a subset is only comparable between
    variants of the same run, not with the README's whole-corpus figures."""
    if limit is None or limit >= len(ds.corpus):
        return ds
    keep: list[str] = []
    chosen: set[str] = set()
    queries: dict[str, str] = {}
    for qid, text in ds.queries.items():
        rel = [d for d in ds.qrels[qid] if d not in chosen]
        if len(keep) + len(rel) > limit // 2:
            break
        keep.extend(rel)
        chosen.update(rel)
        queries[qid] = text
    for doc_id in ds.corpus:
        if len(keep) >= limit:
            break
        if doc_id not in chosen:
            keep.append(doc_id)
            chosen.add(doc_id)
    return BeirDataset(
        name=ds.name,
        corpus={d: ds.corpus[d] for d in keep},
        queries=queries,
        qrels={q: ds.qrels[q] for q in queries},
    )


def dense_ndcg(
    ds: BeirDataset, doc_vecs: np.ndarray, query_vecs: np.ndarray, *, k: int = 10
) -> float:
    """nDCG@k of exact inner-product search (vectors are unit length: cosine)."""
    doc_ids = list(ds.corpus)
    scores = query_vecs @ doc_vecs.T
    return _ndcg_from_scores(ds, doc_ids, scores, k=k)


def sparse_ndcg(
    ds: BeirDataset,
    docs: Sequence[SparseVector],
    queries: Sequence[SparseVector],
    *,
    idf: bool = False,
    k: int = 10,
) -> float:
    """nDCG@k of exact sparse dot-product search; `idf=True` weights query terms the way Qdrant's
    IDF modifier does: `ln(1 + (N - n + 0.5) / (n + 0.5))`."""
    from scipy import sparse as sp

    vocab: dict[int, int] = {}

    def matrix(vectors: Sequence[SparseVector]) -> Any:
        rows, cols, vals = [], [], []
        for r, v in enumerate(vectors):
            for i, w in zip(v.indices, v.values, strict=True):
                rows.append(r)
                cols.append(vocab.setdefault(i, len(vocab)))
                vals.append(w)
        return rows, cols, vals

    d_rows, d_cols, d_vals = matrix(docs)
    q_rows, q_cols, q_vals = matrix(queries)
    shape_d = (len(docs), len(vocab))
    doc_m = sp.csr_matrix((d_vals, (d_rows, d_cols)), shape=shape_d)
    q_m = sp.csr_matrix((q_vals, (q_rows, q_cols)), shape=(len(queries), len(vocab)))
    if idf:
        n_docs = doc_m.shape[0]
        df = np.bincount(doc_m.indices, minlength=len(vocab))
        weights = np.log1p((n_docs - df + 0.5) / (df + 0.5))
        q_m = q_m @ sp.diags(weights)
    scores = (q_m @ doc_m.T).toarray()
    return _ndcg_from_scores(ds, list(ds.corpus), scores, k=k)


def _ndcg_from_scores(ds: BeirDataset, doc_ids: list[str], scores: np.ndarray, *, k: int) -> float:
    top = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    run = {qid: [doc_ids[j] for j in top[i]] for i, qid in enumerate(ds.queries)}
    return evaluate(run, ds.qrels, ks=(k,), metrics=("ndcg",))[f"ndcg@{k}"]


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    gc.collect()
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


# --------------------------------------------------------------------------------------------
# Sections


def _cpu_options(settings: Settings, precision: str, backend: str) -> RunOptions:
    base = RunOptions.from_settings(settings.models)
    plan = plan_execution(device="cpu", precision=precision, cpu_backend=backend)  # type: ignore[arg-type]
    return dataclasses.replace(base, plan=plan)


_CPU_VARIANTS = (
    ("fp32", "torch"),
    ("fp32", "onnx"),
    ("bf16", "torch"),
    ("int8", "torch"),
    ("int8", "onnx"),
)


def _dense_rows(
    settings: Settings, ds: BeirDataset, *, say: Callable[[str], None]
) -> list[BenchRow]:
    from sentence_transformers import SentenceTransformer

    from rayweave.models.dense import load_sentence_transformer

    ref = settings.models.dense
    location = resolve_model(ref).location
    texts = [d.full_text() for d in ds.corpus.values()]
    queries = list(ds.queries.values())
    rows: list[BenchRow] = []

    ours = load_sentence_transformer(ref, _cpu_options(settings, "fp32", "torch"))
    tokens = sum(len(ids) for ids in ours.engine.tokenize(texts))
    max_length = ours.engine.max_length
    del ours

    plain = SentenceTransformer(location, device="cpu")
    plain.max_seq_length = max_length
    plain.encode(texts[:_PLAIN_BATCH], batch_size=_PLAIN_BATCH)  # warm-up
    vecs, secs = _timed(
        lambda: plain.encode(texts, batch_size=_PLAIN_BATCH, normalize_embeddings=True)
    )
    qv = plain.encode(queries, batch_size=_PLAIN_BATCH, normalize_embeddings=True)
    rows.append(
        BenchRow(
            section="dense",
            dataset=ds.name,
            model=ref,
            variant="SentenceTransformer.encode fp32",
            texts=len(texts),
            tokens=tokens,
            seconds=secs,
            ndcg10=dense_ndcg(ds, vecs, qv),
            baseline=True,
        )
    )
    say(_row_line(rows[-1]))
    del plain
    for precision, backend in _CPU_VARIANTS:
        try:
            encoder = load_sentence_transformer(ref, _cpu_options(settings, precision, backend))
        except Exception as exc:
            say(f"dense {precision}/{backend}: skipped ({exc})")
            continue
        encoder.encode(texts[:_PLAIN_BATCH])
        vecs, secs = _timed(lambda enc=encoder: enc.encode(texts, kind="document"))
        qv = encoder.encode(queries, kind="query")
        rows.append(
            BenchRow(
                section="dense",
                dataset=ds.name,
                model=ref,
                variant=f"rayweave cpu {precision} {backend}",
                texts=len(texts),
                tokens=tokens,
                seconds=secs,
                ndcg10=dense_ndcg(ds, vecs, qv),
            )
        )
        say(_row_line(rows[-1]))
        del encoder
    return rows


class _PlainSplade:
    """The textbook SPLADE loop (fixed batches, activation over every position), as a baseline."""

    def __init__(self, location: str, max_length: int) -> None:
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(location)
        self.model = AutoModelForMaskedLM.from_pretrained(location).eval()
        self.max_length = max_length

    def encode(self, texts: Sequence[str]) -> list[SparseVector]:
        from rayweave.models.postprocess import row_to_sparse

        out: list[SparseVector] = []
        with torch.inference_mode():
            for i in range(0, len(texts), _PLAIN_BATCH):
                enc = self.tokenizer(
                    list(texts[i : i + _PLAIN_BATCH]),
                    padding=True,
                    truncation=True,
                    max_length=self.max_length,
                    return_tensors="pt",
                )
                logits = self.model(**enc).logits
                act = torch.log1p(torch.relu(logits)) * enc["attention_mask"].unsqueeze(-1)
                out.extend(row_to_sparse(r) for r in act.amax(dim=1).numpy())
        return out


def _sparse_rows(
    settings: Settings, ds: BeirDataset, *, say: Callable[[str], None]
) -> list[BenchRow]:
    from rayweave.models.sparse import Bm25Encoder, load_splade

    texts = [d.full_text() for d in ds.corpus.values()]
    queries = list(ds.queries.values())
    rows: list[BenchRow] = []
    if settings.models.sparse_kind == "splade":
        ref = settings.models.sparse
        ours = load_splade(ref, _cpu_options(settings, "fp32", "torch"))
        tokens = sum(len(ids) for ids in ours.engine.tokenize(texts))
        max_length = ours.engine.max_length
        del ours
        plain = _PlainSplade(resolve_model(ref).location, max_length)
        plain.encode(texts[:_PLAIN_BATCH])
        docs, secs = _timed(lambda: plain.encode(texts))
        rows.append(
            BenchRow(
                section="sparse",
                dataset=ds.name,
                model=ref,
                variant="plain SPLADE loop fp32",
                texts=len(texts),
                tokens=tokens,
                seconds=secs,
                ndcg10=sparse_ndcg(ds, docs, plain.encode(queries)),
                baseline=True,
            )
        )
        say(_row_line(rows[-1]))
        del plain
        for precision, backend in _CPU_VARIANTS:
            try:
                encoder = load_splade(ref, _cpu_options(settings, precision, backend))
            except Exception as exc:
                say(f"sparse {precision}/{backend}: skipped ({exc})")
                continue
            encoder.encode(texts[:_PLAIN_BATCH])
            docs, secs = _timed(lambda enc=encoder: enc.encode(texts))
            rows.append(
                BenchRow(
                    section="sparse",
                    dataset=ds.name,
                    model=ref,
                    variant=f"rayweave cpu {precision} {backend}",
                    texts=len(texts),
                    tokens=tokens,
                    seconds=secs,
                    ndcg10=sparse_ndcg(ds, docs, encoder.encode(queries, kind="query")),
                )
            )
            say(_row_line(rows[-1]))
            del encoder
    bm25 = Bm25Encoder()
    docs, secs = _timed(lambda: bm25.encode(texts))
    rows.append(
        BenchRow(
            section="sparse",
            dataset=ds.name,
            model="bm25",
            variant="BM25 term weights + IDF",
            texts=len(texts),
            tokens=sum(bm25.count_tokens(texts)),
            seconds=secs,
            ndcg10=sparse_ndcg(ds, docs, bm25.encode(queries, kind="query"), idf=True),
        )
    )
    say(_row_line(rows[-1]))
    return rows


def bge_m3_config(*, small: bool = False) -> Any:
    """XLM-R large as BGE-M3 uses it (8194 positions), or a tiny stand-in with the same layout."""
    from transformers import XLMRobertaConfig

    if small:
        return XLMRobertaConfig(
            vocab_size=30522,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=514,
            type_vocab_size=1,
            pad_token_id=1,
        )
    return XLMRobertaConfig(
        vocab_size=250002,
        hidden_size=1024,
        num_hidden_layers=24,
        num_attention_heads=16,
        intermediate_size=4096,
        max_position_embeddings=8194,
        type_vocab_size=1,
        pad_token_id=1,
        layer_norm_eps=1e-5,
    )


def bge_m3_throughput_rows(
    texts: Sequence[str],
    tokenizer: Any,
    *,
    device: str,
    dataset: str,
    config: Any,
    settings: Settings,
    say: Callable[[str], None],
) -> list[BenchRow]:
    """Tokens/s of a random BGE-M3-architecture model: plain fp32 and fp16 torch loops (batches of
    32 in corpus order, padded to the longest) against our fp16 encoder (length buckets, token
    budget). `tokenizer` only supplies realistic lengths and in-vocabulary ids."""
    from transformers import XLMRobertaModel

    from rayweave.models.bge_m3 import BgeM3Core, bge_m3_from_core

    torch.manual_seed(0)
    hidden = config.hidden_size
    core = BgeM3Core(
        XLMRobertaModel(config, add_pooling_layer=False),
        torch.nn.Linear(hidden, 1),
        torch.nn.Linear(hidden, hidden),
    ).eval()
    max_length = min(settings.models.max_tokens, 512)
    ids = tokenizer(list(texts), truncation=True, max_length=max_length)["input_ids"]
    tokens = sum(len(r) for r in ids)
    rows: list[BenchRow] = []

    def sync() -> None:
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    for label, dtype in (("plain torch fp32", torch.float32), ("plain torch fp16", torch.float16)):
        model = copy.deepcopy(core).to(device=device, dtype=dtype)

        def plain_pass(model: torch.nn.Module = model) -> None:
            with torch.inference_mode():
                for i in range(0, len(texts), _PLAIN_BATCH):
                    enc = tokenizer(
                        list(texts[i : i + _PLAIN_BATCH]),
                        padding=True,
                        truncation=True,
                        max_length=max_length,
                        return_tensors="pt",
                        return_token_type_ids=False,
                    ).to(device)
                    dense, weights, colbert = model(enc["input_ids"], enc["attention_mask"])
                    dense.cpu(), weights.cpu(), colbert.cpu()
            sync()

        plain_pass()
        _, secs = _timed(plain_pass)
        rows.append(
            BenchRow(
                section="gpu",
                dataset=dataset,
                model="BGE-M3 architecture (random)",
                variant=label,
                texts=len(texts),
                tokens=tokens,
                seconds=secs,
                baseline=dtype == torch.float32,
            )
        )
        say(_row_line(rows[-1]))
        del model
    base = RunOptions.from_settings(settings.models)
    precision = "fp16" if device.startswith("cuda") else "fp32"
    options = dataclasses.replace(
        base,
        plan=plan_execution(
            device="cuda" if device.startswith("cuda") else "cpu", precision=precision
        ),
        max_tokens=max_length,
    )
    encoder = bge_m3_from_core(
        copy.deepcopy(core), tokenizer, name="bge-m3-random", options=options
    )
    for label, fn in (
        (f"rayweave {precision} dense", lambda: encoder.encode(texts)),
        (f"rayweave {precision} dense+sparse+colbert", lambda: encoder.encode_all(texts)),
    ):
        fn()
        _, secs = _timed(lambda fn=fn: (fn(), sync()))
        rows.append(
            BenchRow(
                section="gpu",
                dataset=dataset,
                model="BGE-M3 architecture (random)",
                variant=label,
                texts=len(texts),
                tokens=tokens,
                seconds=secs,
            )
        )
        say(_row_line(rows[-1]))
    return rows


# --------------------------------------------------------------------------------------------
# Ratios, table, entry point


def add_ratios(rows: Sequence[BenchRow]) -> list[BenchRow]:
    """Speed-up against the baseline of the same section and data set, and the relative nDCG@10
    change against it (the fp32 reference)."""
    out: list[BenchRow] = []
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
        speedup = row.tokens_per_s / base.tokens_per_s if base.tokens_per_s else None
        change = None
        if row.ndcg10 is not None and base.ndcg10:
            change = (row.ndcg10 - base.ndcg10) / base.ndcg10
        out.append(dataclasses.replace(row, speedup=speedup, ndcg_change=change))
    return out


def _row_line(row: BenchRow) -> str:
    ndcg = f"nDCG@10 {row.ndcg10:.4f}" if row.ndcg10 is not None else ""
    return (
        f"{row.section:6} {row.dataset:13} {row.variant:42} {row.texts_per_s:9.1f} texts/s "
        f"{row.tokens_per_s:10.0f} tokens/s {ndcg}"
    )


def render_table(rows: Sequence[BenchRow]) -> Any:
    from rich.table import Table

    table = Table(title="rayweave bench models (ratios against the baseline row of each block)")
    for col in (
        "section",
        "data set",
        "model",
        "variant",
        "texts/s",
        "tokens/s",
        "x base",
        "nDCG@10",
        "vs base",
    ):
        table.add_column(
            col,
            justify="right"
            if col in ("texts/s", "tokens/s", "x base", "nDCG@10", "vs base")
            else "left",
        )
    for r in rows:
        table.add_row(
            r.section,
            r.dataset,
            Path(r.model).name
            if "/" in r.model and not r.model.startswith("package:")
            else r.model,
            r.variant + (" (base)" if r.baseline else ""),
            f"{r.texts_per_s:.1f}",
            f"{r.tokens_per_s:.0f}",
            f"{r.speedup:.2f}" if r.speedup is not None else "",
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
) -> list[BenchRow]:
    """Measure every section on every data set, print the table, return the rows."""
    from rich.console import Console

    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        raise ValueError(f"unknown bench sections {unknown}; valid: {', '.join(SECTIONS)}")
    con = console or Console()

    def say(line: str) -> None:
        con.print(line, markup=False, highlight=False)

    threads = configure_threads(settings.models.num_threads)
    say(f"torch threads: {threads}; data: {data_dir}; limit: {limit or 'all'}")
    rows: list[BenchRow] = []
    for name in datasets:
        ds = subset(load_beir(Path(data_dir) / name), limit)
        say(f"{name}: {len(ds.corpus)} documents, {len(ds.queries)} queries")
        if "dense" in sections:
            rows += _dense_rows(settings, ds, say=say)
        if "sparse" in sections:
            rows += _sparse_rows(settings, ds, say=say)
    if "gpu" in sections:
        if torch.cuda.is_available():
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(resolve_model(settings.models.dense).location)
            name = datasets[0]
            ds = subset(load_beir(Path(data_dir) / name), limit)
            rows += bge_m3_throughput_rows(
                [d.full_text() for d in ds.corpus.values()],
                tokenizer,
                device="cuda",
                dataset=name,
                config=bge_m3_config(),
                settings=settings,
                say=say,
            )
        else:
            say("gpu: no CUDA GPU visible to torch; the FP16 BGE-M3 throughput section is skipped")
    rows = add_ratios(rows)
    con.print(render_table(rows))
    return rows
