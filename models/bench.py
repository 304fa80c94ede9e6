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
import json
import logging
import math
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from rayweave.cluster.beir import BeirDataset, load_beir
from rayweave.cluster.metrics import evaluate
from rayweave.cluster.progress import Advance, progress_bar
from rayweave.cluster.types import SparseVector
from rayweave.models.precision import CpuBackend, RunOptions, configure_threads, plan_execution
from rayweave.models.resolve import resolve_model

if TYPE_CHECKING:
    from rich.console import Console

    from rayweave.cluster.settings import Precision, Settings

log = logging.getLogger(__name__)

BarFactory = Callable[[str, int], AbstractContextManager[Advance]]
"""Opens a progress bar (label, total passes); `run_models_bench` draws them on its console."""


@contextmanager
def no_bar(_label: str, _total: int) -> Iterator[Advance]:
    yield lambda _n=1: None


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


# --------------------------------------------------------------------------------------------
# Measurement


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
) -> list[BenchRow]:
    """Quality from one whole-corpus pass per variant; speed as the best of `rounds` timed passes
    over `sample`, the variants interleaved within each round (rotated) so that load from other
    processes hits them alike, and the best time discards the passes it disturbed most. `bar`
    shows the passes (quality, warm-up, timed) as they finish."""
    ndcg: dict[str, float | None] = {}
    quality = ds is not None and score is not None
    passes = len(variants) * ((1 if quality else 0) + 1 + rounds)
    label = f"{section} {ds.name if ds is not None else ''}".strip()
    with bar(f"bench models {label}", passes) as advance:
        for v in variants:
            if ds is None or score is None:
                ndcg[v.label] = None
                continue
            texts = [d.full_text() for d in ds.corpus.values()]
            docs, queries = v.docs(texts), v.queries(list(ds.queries.values()))
            ndcg[v.label] = score(ds, docs, queries)
            if keep is not None and v.baseline:
                keep[v.label] = (docs, queries)
            advance(1)
            say(f"{section:6} {ds.name:13} {v.label:44} nDCG@10 {ndcg[v.label]:.4f}")
        best = {v.label: math.inf for v in variants}
        for v in variants:  # warm-up: first calls allocate and pick kernels
            v.docs(sample[: min(len(sample), _PLAIN_BATCH)])
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
    rows = [
        BenchRow(
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
        say(_row_line(row))
    return rows


def _cpu_options(settings: Settings, precision: Precision, backend: CpuBackend) -> RunOptions:
    base = RunOptions.from_settings(settings.models)
    plan = plan_execution(device="cpu", precision=precision, cpu_backend=backend)
    return dataclasses.replace(base, plan=plan)


def _encoder_variant(label: str, encoder: Any) -> Variant:
    def docs(texts: Sequence[str]) -> Any:
        return encoder.encode(texts, kind="document")

    def queries(texts: Sequence[str]) -> Any:
        return encoder.encode(texts, kind="query")

    return Variant(label=label, docs=docs, queries=queries)


class _HiddenStates(torch.nn.Module):
    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        out = self.model(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        )
        return out.last_hidden_state


def fastembed_variant(settings: Settings, *, max_length: int, workdir: Path) -> Variant | None:
    """fastembed running the same int8 ONNX encoder we export (pooling outside the graph, its own
    fixed-size batching), to show what it would add as our ONNX path. None when the checkpoint is
    not a BERT-style transformer + mean pooling (+ normalisation) without prompts, the one layout
    it can mirror."""
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType
    from sentence_transformers import SentenceTransformer

    from rayweave.models.engine import example_features
    from rayweave.models.runtime import export_onnx

    ref = settings.models.dense
    st = SentenceTransformer(
        resolve_model(ref).location, device="cpu", model_kwargs={"attn_implementation": "eager"}
    )
    kinds = [type(m).__name__ for m in st]
    if kinds[:2] != ["Transformer", "Pooling"] or getattr(st[1], "pooling_mode", "") != "mean":
        return None
    if any((st.prompts or {}).values()):
        return None  # fastembed would embed without the checkpoint's prompts
    tokenizer = st.tokenizer
    encoder: Any = st[0].auto_model
    if "token_type_ids" not in tokenizer.model_input_names:
        return None
    path = export_onnx(
        _HiddenStates(encoder),
        example=example_features(tokenizer),
        output_names=["last_hidden_state"],
        output_axes={"last_hidden_state": {0: "batch", 1: "sequence"}},
        cache_dir=settings.models.cache_dir,
        int8=True,
        key_parts=("fastembed-bench", ref),
    )
    folder = workdir / f"fastembed-{path.parent.name}"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(path, folder / "model.onnx")
    tokenizer.save_pretrained(folder)
    # fastembed truncates at the smaller of these two keys; some checkpoints ship a stale
    # `max_length` (all-MiniLM-L6-v2: 128), so both are set to the encoder's length.
    config_path = folder / "tokenizer_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config.update(model_max_length=max_length, max_length=max_length)
    config_path.write_text(json.dumps(config), encoding="utf-8")
    encoder.config.save_pretrained(folder)
    name = f"rayweave-bench/{path.parent.name}"
    if name not in {m["model"] for m in TextEmbedding.list_supported_models()}:
        TextEmbedding.add_custom_model(
            model=name,
            pooling=PoolingType.MEAN,
            normalization=True,
            sources=ModelSource(hf=name),
            dim=int(encoder.config.hidden_size),
            model_file="model.onnx",
        )
    model = TextEmbedding(
        model_name=name, specific_model_path=str(folder), threads=torch.get_num_threads()
    )

    def encode(texts: Sequence[str]) -> np.ndarray:
        return np.stack(list(model.embed(list(texts), batch_size=_PLAIN_BATCH)))

    return Variant(label="fastembed int8 onnx (same graph)", docs=encode, queries=encode)


CPU_VARIANTS: tuple[tuple[Precision, CpuBackend], ...] = (
    ("fp32", "torch"),
    ("fp32", "onnx"),
    ("bf16", "torch"),
    ("int8", "torch"),
    ("int8", "onnx"),
)


def _dense_rows(
    settings: Settings,
    ds: BeirDataset,
    *,
    rounds: int,
    sample_size: int,
    say: Callable[[str], None],
    bar: BarFactory = no_bar,
) -> list[BenchRow]:
    from sentence_transformers import SentenceTransformer

    from rayweave.models.dense import load_sentence_transformer

    ref = settings.models.dense
    encoders = {}
    for precision, backend in CPU_VARIANTS:
        try:
            encoders[(precision, backend)] = load_sentence_transformer(
                ref, _cpu_options(settings, precision, backend)
            )
        except Exception as exc:
            say(f"dense cpu {precision} {backend}: skipped ({exc})")
    if not encoders:
        return []
    any_encoder = next(iter(encoders.values()))
    plain = SentenceTransformer(resolve_model(ref).location, device="cpu")
    plain.max_seq_length = any_encoder.engine.max_length
    sample = speed_sample([d.full_text() for d in ds.corpus.values()], sample_size)
    prompts = plain.prompts or {}
    doc_prompt = prompts.get("document") or prompts.get("passage") or None
    query_prompt = prompts.get("query") or None
    variants = [
        Variant(
            label="SentenceTransformer.encode fp32",
            docs=lambda t: plain.encode(
                list(t), prompt=doc_prompt, batch_size=_PLAIN_BATCH, normalize_embeddings=True
            ),
            queries=lambda t: plain.encode(
                list(t), prompt=query_prompt, batch_size=_PLAIN_BATCH, normalize_embeddings=True
            ),
            baseline=True,
        )
    ]
    for (precision, backend), enc in encoders.items():
        variants.append(_encoder_variant(f"rayweave cpu {precision} {backend}", enc))
    kept: dict[str, tuple[Any, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="rw-fastembed-") as workdir:
        try:
            extra = fastembed_variant(
                settings, max_length=any_encoder.engine.max_length, workdir=Path(workdir)
            )
        except Exception as exc:
            extra = None
            say(f"dense fastembed: skipped ({exc})")
        if extra is not None:
            variants.append(extra)
        rows = measure(
            section="dense",
            model=ref,
            ds=ds,
            variants=variants,
            sample=sample,
            sample_tokens=sum(len(ids) for ids in any_encoder.engine.tokenize(sample)),
            score=dense_ndcg,
            rounds=rounds,
            say=say,
            keep=kept,
            bar=bar,
        )
    for docs, queries in kept.values():
        rows += vector_quantization_rows(
            ds, np.asarray(docs), np.asarray(queries), model=ref, say=say
        )
    return rows


def vector_quantization_rows(
    ds: BeirDataset,
    docs: np.ndarray,
    queries: np.ndarray,
    *,
    model: str,
    say: Callable[[str], None],
) -> list[BenchRow]:
    """nDCG@10 of the fp32 baseline vectors stored as Qdrant would store them (no timing)."""
    from rayweave.models.quantize import Int8Calibration, binary_scores, int8_scores

    doc_ids = list(ds.corpus)
    calibration = Int8Calibration.fit(docs, quantile=0.99)
    schemes: list[tuple[str, np.ndarray, bool]] = [
        ("float32 vectors", queries @ docs.T, True),
        ("int8 scalar (quantile 0.99)", int8_scores(queries, docs, calibration), False),
        ("binary (sign bits)", binary_scores(queries, docs), False),
        ("binary + rescore (oversampling 4)", binary_scores(queries, docs, rescore=True), False),
    ]
    rows = []
    for label, scores, base in schemes:
        rows.append(
            BenchRow(
                section="vectors",
                dataset=ds.name,
                model=model,
                variant=label,
                texts=len(doc_ids),
                tokens=0,
                seconds=0.0,
                ndcg10=_ndcg_from_scores(ds, doc_ids, scores, k=10),
                baseline=base,
            )
        )
        say(f"vectors {ds.name:13} {label:44} nDCG@10 {rows[-1].ndcg10:.4f}")
    return rows


class PlainSplade:
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
    settings: Settings,
    ds: BeirDataset,
    *,
    rounds: int,
    sample_size: int,
    say: Callable[[str], None],
    bar: BarFactory = no_bar,
) -> list[BenchRow]:
    from rayweave.models.sparse import Bm25Encoder, load_splade

    sample = speed_sample([d.full_text() for d in ds.corpus.values()], sample_size)
    rows: list[BenchRow] = []
    if settings.models.sparse_kind == "splade":
        ref = settings.models.sparse
        encoders = {}
        for precision, backend in CPU_VARIANTS:
            try:
                encoders[(precision, backend)] = load_splade(
                    ref, _cpu_options(settings, precision, backend)
                )
            except Exception as exc:
                say(f"sparse cpu {precision} {backend}: skipped ({exc})")
        if encoders:
            any_encoder = next(iter(encoders.values()))
            plain = PlainSplade(resolve_model(ref).location, any_encoder.engine.max_length)
            variants = [
                Variant(
                    label="plain SPLADE loop fp32",
                    docs=plain.encode,
                    queries=plain.encode,
                    baseline=True,
                )
            ]
            for (precision, backend), enc in encoders.items():
                variants.append(_encoder_variant(f"rayweave cpu {precision} {backend}", enc))
            rows += measure(
                section="sparse",
                model=ref,
                ds=ds,
                variants=variants,
                sample=sample,
                sample_tokens=sum(len(ids) for ids in any_encoder.engine.tokenize(sample)),
                score=sparse_ndcg,
                rounds=rounds,
                say=say,
                bar=bar,
            )
    bm25 = Bm25Encoder()
    rows += measure(
        section="bm25",
        model="bm25",
        ds=ds,
        variants=[
            Variant(
                label="BM25 term weights + Qdrant IDF",
                docs=bm25.encode,
                queries=lambda t: bm25.encode(t, kind="query"),
                baseline=True,
            )
        ],
        sample=sample,
        sample_tokens=sum(bm25.count_tokens(sample)),
        score=lambda d, docs, queries: sparse_ndcg(d, docs, queries, idf=True),
        rounds=rounds,
        say=say,
        bar=bar,
    )
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
    rounds: int,
    say: Callable[[str], None],
    bar: BarFactory = no_bar,
) -> list[BenchRow]:
    """Tokens/s of a random BGE-M3-architecture model: plain fp32 and fp16 torch loops (batches of
    32 in corpus order, padded to the longest) against our fp16 encoder (length buckets, token
    budget, widths padded to multiples of 8). `tokenizer` only supplies realistic lengths and
    in-vocabulary ids. On CPU (tests) the "fp16" rows run in fp32."""
    from transformers import XLMRobertaModel

    from rayweave.models.bge_m3 import BgeM3Core, bge_m3_from_core

    cuda = device.startswith("cuda")
    half = torch.float16 if cuda else torch.float32
    torch.manual_seed(0)
    hidden = config.hidden_size
    core = BgeM3Core(
        XLMRobertaModel(config, add_pooling_layer=False),
        torch.nn.Linear(hidden, 1),
        torch.nn.Linear(hidden, hidden),
    ).eval()
    max_length = min(settings.models.max_tokens, 512)
    texts = list(texts)
    tokens = sum(
        len(r) for r in tokenizer(texts, truncation=True, max_length=max_length)["input_ids"]
    )

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    def plain(model: torch.nn.Module) -> Callable[[Sequence[str]], Any]:
        def run(batch_texts: Sequence[str]) -> None:
            with torch.inference_mode():
                for i in range(0, len(batch_texts), _PLAIN_BATCH):
                    enc = tokenizer(
                        list(batch_texts[i : i + _PLAIN_BATCH]),
                        padding=True,
                        truncation=True,
                        max_length=max_length,
                        return_tensors="pt",
                        return_token_type_ids=False,
                    ).to(device)
                    for out in model(enc["input_ids"], enc["attention_mask"]):
                        out.cpu()

        return run

    fp32 = copy.deepcopy(core).to(device=device)
    fp16 = copy.deepcopy(core).to(device=device, dtype=half)
    options = dataclasses.replace(
        RunOptions.from_settings(settings.models),
        plan=plan_execution(device="cuda" if cuda else "cpu", precision="fp16" if cuda else "fp32"),
        max_tokens=max_length,
    )
    ours = bge_m3_from_core(core, tokenizer, name="bge-m3-random", options=options)
    label = "fp16" if cuda else "fp32"
    variants = [
        Variant(label="plain torch fp32", docs=plain(fp32), queries=plain(fp32), baseline=True),
        Variant(label=f"plain torch {label}", docs=plain(fp16), queries=plain(fp16)),
        Variant(label=f"rayweave {label} dense", docs=ours.encode, queries=ours.encode),
        Variant(
            label=f"rayweave {label} dense+sparse+colbert",
            docs=ours.encode_all,
            queries=ours.encode_all,
        ),
    ]
    rows = measure(
        section="gpu",
        model="BGE-M3 architecture (random weights)",
        ds=None,
        variants=variants,
        sample=texts,
        sample_tokens=tokens,
        score=None,
        rounds=rounds,
        say=say,
        after_pass=sync,
        bar=bar,
    )
    return [dataclasses.replace(r, dataset=dataset) for r in rows]


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
        timed = row.seconds > 0 and base.seconds > 0
        speedup = row.tokens_per_s / base.tokens_per_s if timed and base.tokens_per_s else None
        change = None
        if row.ndcg10 is not None and base.ndcg10:
            change = (row.ndcg10 - base.ndcg10) / base.ndcg10
        out.append(dataclasses.replace(row, speedup=speedup, ndcg_change=change))
    return out


def _row_line(row: BenchRow) -> str:
    ndcg = f"nDCG@10 {row.ndcg10:.4f}" if row.ndcg10 is not None else ""
    return (
        f"{row.section:6} {row.dataset:13} {row.variant:44} {row.texts_per_s:9.1f} texts/s "
        f"{row.tokens_per_s:10.0f} tokens/s {ndcg}"
    )


def _short_model(ref: str) -> str:
    if ref.startswith("package:"):
        return ref[len("package:") :].split("/", 1)[0]
    return Path(ref).name if "/" in ref and Path(ref).exists() else ref


def render_table(rows: Sequence[BenchRow]) -> Any:
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
) -> list[BenchRow]:
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
        return progress_bar(con, label, total, unit="passes")

    threads = configure_threads(settings.models.num_threads)
    say(
        f"torch threads: {threads}; data: {data_dir}; limit: {limit or 'all'}; speed: best of {rounds} over {sample_size} texts"
    )
    rows: list[BenchRow] = []
    for name in datasets:
        ds = subset(load_beir(Path(data_dir) / name), limit)
        say(f"{name}: {len(ds.corpus)} documents, {len(ds.queries)} queries")
        if "dense" in sections:
            rows += _dense_rows(
                settings, ds, rounds=rounds, sample_size=sample_size, say=say, bar=bar
            )
        if "sparse" in sections:
            rows += _sparse_rows(
                settings, ds, rounds=rounds, sample_size=sample_size, say=say, bar=bar
            )
    if "gpu" in sections:
        if torch.cuda.is_available():
            from rayweave.models.tokens import load_token_counter

            tokenizer = load_token_counter(settings.models).tokenizer
            name = datasets[0]
            ds = subset(load_beir(Path(data_dir) / name), limit)
            rows += bge_m3_throughput_rows(
                speed_sample([d.full_text() for d in ds.corpus.values()], max(sample_size, 1024)),
                tokenizer,
                device="cuda",
                dataset=name,
                config=bge_m3_config(),
                settings=settings,
                rounds=rounds,
                say=say,
                bar=bar,
            )
        else:
            say("gpu: no CUDA GPU visible to torch; the FP16 BGE-M3 throughput section is skipped")
    rows = add_ratios(rows)
    con.print(render_table(rows), width=max(con.width, 160))
    return rows
