"""The CPU blocks of `rayweave bench models`: our encoders at every precision and backend against
the plain implementations, on the same corpus with the same truncation.

- dense: `SentenceTransformer.encode` in fp32 with its default batch of 32 is the baseline for
  speed and for quality; each of our variants encodes the same corpus with the same truncation,
  and fastembed running our int8 ONNX graph is listed beside them.
- sparse: a plain SPLADE loop (masked-LM forward, `log1p(relu)` over all positions, max-pool,
  batches of 32) is the baseline; BM25 is listed for reference.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from rayweave.bench.evaluation.beir import BeirDataset
from rayweave.bench.model_measure import (
    PLAIN_BATCH,
    BarFactory,
    ModelRow,
    Scorer,
    Variant,
    measure,
    no_bar,
    speed_sample,
)
from rayweave.bench.model_quality import dense_ndcg, sparse_ndcg, vector_quantization_rows
from rayweave.cluster.errors import MissingExtraError
from rayweave.cluster.types import SparseVector
from rayweave.models.precision import CpuBackend, RunOptions, plan_execution
from rayweave.models.resolve import resolve_model

if TYPE_CHECKING:
    from rayweave.cluster.settings import Precision, Settings

CPU_VARIANTS: tuple[tuple[Precision, CpuBackend], ...] = (
    ("fp32", "torch"),
    ("fp32", "onnx"),
    ("bf16", "torch"),
    ("int8", "torch"),
    ("int8", "onnx"),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockRun:
    """What every block of one bench run shares: the settings, timing and where to report."""

    settings: Settings
    rounds: int
    sample_size: int
    say: Callable[[str], None]
    bar: BarFactory = no_bar


def cpu_options(settings: Settings, precision: Precision, backend: CpuBackend) -> RunOptions:
    base = RunOptions.from_settings(settings.models)
    plan = plan_execution(device="cpu", precision=precision, cpu_backend=backend)
    return dataclasses.replace(base, plan=plan)


def encoder_variant(label: str, encoder: Any) -> Variant:
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
        hidden: torch.Tensor = out.last_hidden_state
        return hidden


def fastembed_variant(settings: Settings, *, max_length: int, workdir: Path) -> Variant | None:
    """fastembed running the same int8 ONNX encoder we export (pooling outside the graph, its own
    fixed-size batching), to show what it would add as our ONNX path. None when the checkpoint is
    not a BERT-style transformer + mean pooling (+ normalisation) without prompts, the one layout
    it can mirror."""
    try:
        from fastembed import TextEmbedding
        from fastembed.common.model_description import ModelSource, PoolingType
    except ImportError as exc:
        raise MissingExtraError("fastembed", extra="bench", purpose="the fastembed row") from exc
    from sentence_transformers import SentenceTransformer

    from rayweave.models.features import example_features
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
        return np.stack(list(model.embed(list(texts), batch_size=PLAIN_BATCH)))

    return Variant(label="fastembed int8 onnx (same graph)", docs=encode, queries=encode)


def _load_cpu_variants(
    run: BlockRun, section: str, ref: str, load: Callable[[str, RunOptions], Any]
) -> dict[tuple[Precision, CpuBackend], Any]:
    """Our encoder of `ref` at every CPU precision and backend that loads on this machine."""
    encoders: dict[tuple[Precision, CpuBackend], Any] = {}
    for precision, backend in CPU_VARIANTS:
        try:
            encoders[(precision, backend)] = load(
                ref, cpu_options(run.settings, precision, backend)
            )
        except Exception as exc:  # noqa: BLE001 - a variant this machine cannot run is skipped
            run.say(f"{section} cpu {precision} {backend}: skipped ({exc})")
    return encoders


def _measure_encoders(
    run: BlockRun,
    ds: BeirDataset,
    *,
    section: str,
    ref: str,
    baseline: Variant,
    encoders: dict[tuple[Precision, CpuBackend], Any],
    score: Scorer,
    extra: Sequence[Variant] = (),
    keep: dict[str, tuple[Any, Any]] | None = None,
) -> list[ModelRow]:
    """The baseline, our encoder at every loaded precision and backend, then `extra`, measured
    on one speed sample of `ds`."""
    any_encoder = next(iter(encoders.values()))
    sample = speed_sample([d.full_text() for d in ds.corpus.values()], run.sample_size)
    variants = [
        baseline,
        *(encoder_variant(f"rayweave cpu {p} {b}", enc) for (p, b), enc in encoders.items()),
        *extra,
    ]
    rows: list[ModelRow] = measure(
        section=section,
        model=ref,
        ds=ds,
        variants=variants,
        sample=sample,
        sample_tokens=sum(len(ids) for ids in any_encoder.engine.tokenize(sample)),
        score=score,
        rounds=run.rounds,
        say=run.say,
        keep=keep,
        bar=run.bar,
    )
    return rows


def _fastembed_or_none(run: BlockRun, max_length: int, workdir: Path) -> list[Variant]:
    try:
        extra = fastembed_variant(run.settings, max_length=max_length, workdir=workdir)
    except Exception as exc:  # noqa: BLE001 - fastembed is a side-by-side figure, not the bench
        run.say(f"dense fastembed: skipped ({exc})")
        return []
    return [extra] if extra is not None else []


def dense_rows(run: BlockRun, ds: BeirDataset) -> list[ModelRow]:
    """The dense block, then the quantization rows of the baseline's vectors."""
    from sentence_transformers import SentenceTransformer

    from rayweave.models.dense import load_sentence_transformer

    ref = run.settings.models.dense
    encoders = _load_cpu_variants(run, "dense", ref, load_sentence_transformer)
    if not encoders:
        return []
    max_length = next(iter(encoders.values())).engine.max_length
    plain = SentenceTransformer(resolve_model(ref).location, device="cpu")
    plain.max_seq_length = max_length
    prompts = plain.prompts or {}
    doc_prompt = prompts.get("document") or prompts.get("passage") or None
    query_prompt = prompts.get("query") or None
    baseline = Variant(
        label="SentenceTransformer.encode fp32",
        docs=lambda t: plain.encode(
            list(t), prompt=doc_prompt, batch_size=PLAIN_BATCH, normalize_embeddings=True
        ),
        queries=lambda t: plain.encode(
            list(t), prompt=query_prompt, batch_size=PLAIN_BATCH, normalize_embeddings=True
        ),
        baseline=True,
    )
    kept: dict[str, tuple[Any, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="rw-fastembed-") as workdir:
        rows = _measure_encoders(
            run,
            ds,
            section="dense",
            ref=ref,
            baseline=baseline,
            encoders=encoders,
            score=dense_ndcg,
            extra=_fastembed_or_none(run, max_length, Path(workdir)),
            keep=kept,
        )
    for docs, queries in kept.values():
        rows += vector_quantization_rows(
            ds, np.asarray(docs), np.asarray(queries), model=ref, say=run.say
        )
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
            for i in range(0, len(texts), PLAIN_BATCH):
                enc = self.tokenizer(
                    list(texts[i : i + PLAIN_BATCH]),
                    padding=True,
                    truncation=True,
                    max_length=self.max_length,
                    return_tensors="pt",
                )
                logits = self.model(**enc).logits
                act = torch.log1p(torch.relu(logits)) * enc["attention_mask"].unsqueeze(-1)
                out.extend(row_to_sparse(r) for r in act.amax(dim=1).numpy())
        return out


def sparse_rows(run: BlockRun, ds: BeirDataset) -> list[ModelRow]:
    """The SPLADE block (when the settings use SPLADE), then BM25 for reference."""
    from rayweave.models.sparse import Bm25Encoder, load_splade

    rows: list[ModelRow] = []
    if run.settings.models.sparse_kind == "splade":
        ref = run.settings.models.sparse
        encoders = _load_cpu_variants(run, "sparse", ref, load_splade)
        if encoders:
            max_length = next(iter(encoders.values())).engine.max_length
            plain = PlainSplade(resolve_model(ref).location, max_length)
            baseline = Variant(
                label="plain SPLADE loop fp32",
                docs=plain.encode,
                queries=plain.encode,
                baseline=True,
            )
            rows += _measure_encoders(
                run,
                ds,
                section="sparse",
                ref=ref,
                baseline=baseline,
                encoders=encoders,
                score=sparse_ndcg,
            )
    bm25 = Bm25Encoder()
    sample = speed_sample([d.full_text() for d in ds.corpus.values()], run.sample_size)
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
        rounds=run.rounds,
        say=run.say,
        bar=run.bar,
    )
    return rows
