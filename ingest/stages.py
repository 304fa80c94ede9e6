"""Ray Data callables of the ingest pipeline: thin wrappers over pure functions.

The unit that flows is a `DocWork`: one document with all its chunks, vectors and entities.
Keeping a document whole through every stage is what lets the writer make it visible in one step
(a crash never leaves half a document searchable). Stateful stages load their model once per actor
in `__init__`, from a zero-argument factory it is given, so a test hands it a model object and
Ray Data hands it a picklable factory built from `Settings` (`STAGES`, read by both layouts).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

import numpy as np

from rayweave.cluster.errors import RayweaveError, SourceError
from rayweave.cluster.settings import IngestSettings, Settings
from rayweave.cluster.types import Chunk, ContentType, Document, Entity, Level, SparseVector
from rayweave.graph.extraction import Extraction
from rayweave.ingest.entity_propagation import ner_sections, propagate_entities
from rayweave.ingest.report import DocStatus, ExtractionTally

if TYPE_CHECKING:
    from rayweave.graph.extraction import GraphExtractor
    from rayweave.graph.store import GraphStore
    from rayweave.ingest.resources import PoolSize, StageResources
    from rayweave.ingest.writers import DocumentWriter
    from rayweave.models.protocols import (
        DenseEncoder,
        EntityExtractor,
        ImageEncoder,
        SparseEncoder,
        TokenCounter,
    )

Batch = dict[str, Any]
Encoded = TypeVar("Encoded")


@dataclass(slots=True, kw_only=True)
class DocWork:
    source: str
    document: Document | None = None
    status: DocStatus = "inserted"
    chunks: list[Chunk] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    dense: np.ndarray | None = None
    sparse: list[SparseVector] | None = None
    image: dict[int, np.ndarray] = field(default_factory=dict)
    entities: list[list[Entity]] | None = None
    extractions: dict[str, Extraction] = field(default_factory=dict)
    extraction: ExtractionTally = field(default_factory=lambda: ExtractionTally())
    error: str | None = None

    @property
    def active(self) -> bool:
        """Still to be processed (not failed, not skipped as unchanged)."""
        return self.error is None and self.status in ("inserted", "updated") and bool(self.chunks)

    def fail(self, exc: BaseException) -> None:
        self.status = "failed"
        self.error = (
            f"{type(exc).__name__}: {exc}" if not isinstance(exc, RayweaveError) else str(exc)
        )


def _works(batch: Batch) -> list[DocWork]:
    return list(batch["work"])


def _batch(works: Iterable[DocWork]) -> Batch:
    items = list(works)
    arr = np.empty(len(items), dtype=object)
    arr[:] = items
    return {"work": arr}


def load_files(batch: Batch, *, settings: Settings) -> Batch:
    """Read one file per row into a Document (stateless: runs as Ray tasks)."""
    from rayweave.ingest.readers import read_document

    works = []
    for path in batch["path"]:
        work = DocWork(source=str(path))
        try:
            work.document = read_document(Path(path), settings.ingest)
        except Exception as exc:  # noqa: BLE001 - a bad file fails alone, reported in the summary
            work.fail(exc)
        works.append(work)
    return _batch(works)


def load_beir_lines(batch: Batch, *, source: str) -> Batch:
    """BEIR corpus.jsonl lines (`ray.data.read_text` rows) into Documents, through the same
    record parser as every other BEIR reader; a bad line fails alone, named by its `_id` or text."""
    from rayweave.cluster.beir import parse_corpus_line
    from rayweave.ingest.readers import beir_document

    works = []
    for line in batch["text"]:
        line = str(line)
        work = DocWork(source=line[:80])
        try:
            record = parse_corpus_line(line, where=f"{source}: record {line[:60]!r}")
            work.source = record.id
            work.document = beir_document(record)
        except Exception as exc:  # noqa: BLE001 - a bad line fails alone, reported in the summary
            work.fail(exc)
        works.append(work)
    return _batch(works)


class ChunkDocuments:
    """Insert, update or skip by content hash, then chunk with the dense model's tokenizer."""

    def __init__(
        self, tokens: Callable[[], TokenCounter], ingest: IngestSettings, existing: dict[str, str]
    ) -> None:
        self.ingest = ingest
        self.existing = existing
        self.tokens = tokens()

    def __call__(self, batch: Batch) -> Batch:
        from rayweave.ingest.chunking import chunk_document

        works = _works(batch)
        for work in works:
            doc = work.document
            if work.error is not None or doc is None:
                continue
            previous = self.existing.get(doc.id)
            if previous == doc.content_hash:
                work.status = "skipped"
                continue
            work.status = "updated" if previous is not None else "inserted"
            try:
                chunked = chunk_document(doc, tokens=self.tokens, settings=self.ingest)
                limit = self.ingest.max_chunks_per_document
                if len(chunked.chunks) > limit:
                    raise SourceError(
                        f"{doc.source}: {len(chunked.chunks)} chunks; the limit is {limit} "
                        "(ingest.max_chunks_per_document): split the file or raise the limit",
                        path=doc.source,
                    )
                work.chunks = list(chunked.chunks)
                work.texts = list(chunked.embed_texts)
            except Exception as exc:  # noqa: BLE001 - the document fails alone, reported
                work.fail(exc)
        return _batch(works)


def _unique_texts(active: list[DocWork]) -> tuple[list[str], list[list[int]]]:
    """The distinct texts of `active` (short documents repeat one text on every level) and, per
    work, the index of each of its texts in that list."""
    index: dict[str, int] = {}
    rows = [[index.setdefault(t, len(index)) for t in w.texts] for w in active]
    return list(index), rows


class _EmbedTexts(Generic[Encoded]):
    """Shared by the text encoders: encode each distinct text of the active documents once, then
    hand every document the vectors of its own texts."""

    def __call__(self, batch: Batch) -> Batch:
        works = _works(batch)
        active = [w for w in works if w.active]
        unique, rows = _unique_texts(active)
        if unique:
            encoded = self._encode(unique)
            for w, idx in zip(active, rows, strict=True):
                self._assign(w, encoded, idx)
        return _batch(works)

    def _encode(self, texts: list[str]) -> Encoded:
        raise NotImplementedError

    def _assign(self, work: DocWork, encoded: Encoded, idx: list[int]) -> None:
        raise NotImplementedError


class EmbedDense(_EmbedTexts[np.ndarray]):
    def __init__(self, encoder: Callable[[], DenseEncoder]) -> None:
        self.encoder = encoder()

    def _encode(self, texts: list[str]) -> np.ndarray:
        vectors: np.ndarray = self.encoder.encode(texts, kind="document")
        return vectors

    def _assign(self, work: DocWork, encoded: np.ndarray, idx: list[int]) -> None:
        work.dense = encoded[idx]


class EmbedSparse(_EmbedTexts[list[SparseVector]]):
    def __init__(self, encoder: Callable[[], SparseEncoder]) -> None:
        self.encoder = encoder()

    def _encode(self, texts: list[str]) -> list[SparseVector]:
        vectors: list[SparseVector] = self.encoder.encode(texts, kind="document")
        return vectors

    def _assign(self, work: DocWork, encoded: list[SparseVector], idx: list[int]) -> None:
        work.sparse = [encoded[i] for i in idx]


def _is_image(work: DocWork) -> bool:
    return work.document is not None and work.document.content_type is ContentType.IMAGE


class EmbedImages:
    """CLIP image vectors for image documents (their caption text is embedded like any text).

    The images of a batch go through the encoder in one call: a GPU runs a lone image at the
    cost of a batch (kernel launches), and the encoder spreads decoding-side preprocessing over
    the actor's CPUs."""

    def __init__(self, encoder: Callable[[], ImageEncoder | None]) -> None:
        self.encoder = encoder()

    def __call__(self, batch: Batch) -> Batch:
        from PIL import Image

        works = _works(batch)
        encoder = self.encoder
        if encoder is None:
            return _batch(works)
        opened: list[tuple[DocWork, object]] = []
        for w in works:
            if not (w.active and _is_image(w)) or w.document is None:
                continue
            try:
                with Image.open(w.document.source) as img:
                    opened.append((w, img.convert("RGB")))
            except Exception as exc:  # noqa: BLE001 - the image fails alone, reported
                w.fail(exc)
        try:
            vectors = list(encoder.encode_images([image for _, image in opened]))
        except Exception:  # noqa: BLE001 - retried one by one below, so only the bad one fails
            vectors = []
            for w, image in opened:
                try:
                    vectors.append(encoder.encode_images([image])[0])
                except Exception as exc:  # noqa: BLE001 - the image fails alone, reported
                    w.fail(exc)
                    vectors.append(None)
        for (w, _), vec in zip(opened, vectors, strict=True):
            if vec is not None:
                w.image = {i: vec for i, c in enumerate(w.chunks) if c.level is not Level.DOCUMENT}
        return _batch(works)


class ExtractEntities:
    """Entities per chunk: NER on each section, spread to the other levels by
    `propagate_entities`."""

    def __init__(self, extractor: Callable[[], EntityExtractor]) -> None:
        self.extractor = extractor()

    def __call__(self, batch: Batch) -> Batch:
        works = _works(batch)
        active = [w for w in works if w.active]
        sections = [(w, i) for w in active for i in ner_sections(w.chunks)]
        found = self.extractor.extract([w.chunks[i].text for w, i in sections]) if sections else []
        by_work: dict[int, dict[str, list[Entity]]] = {}
        for (w, i), ents in zip(sections, found, strict=True):
            by_work.setdefault(id(w), {})[w.chunks[i].id] = ents
        for w in active:
            w.entities = propagate_entities(w.chunks, by_work.get(id(w), {}))
        return _batch(works)


class ExtractFacts:
    """Entities and facts a graph extractor (`graph.extractor`) reads off each section chunk,
    through the store's cache: one extractor and one graph client per actor. A chunk whose
    extraction failed is counted and written without one; the document is still ingested."""

    def __init__(
        self,
        extractor: Callable[[], GraphExtractor | None],
        identity: str | None,
        cache: Callable[[], GraphStore] | None,
    ) -> None:
        """`identity` names the extractor in the cache (None: not cached, as for a file or the
        rules); `cache` opens the graph store that holds it."""
        built = extractor()
        if built is None:
            raise SourceError("ExtractFacts needs graph.extractor to be set")
        self.extractor = built
        self.identity = identity
        self.cache = cache() if cache is not None and identity is not None else None

    def __call__(self, batch: Batch) -> Batch:
        from rayweave.graph.extractor_factory import extract_cached

        works = _works(batch)
        # The sections NER reads: a passage or a docs section is the unit whose facts a question
        # chains (summaries and propositions repeat its words; code has its parser's symbols).
        units = [(w, i) for w in works if w.active for i in ner_sections(w.chunks)]
        if not units:
            return _batch(works)
        try:
            found, cached = extract_cached(
                self.extractor,
                [w.chunks[i].text for w, i in units],
                identity=self.identity,
                cache=self.cache,
            )
        except Exception as exc:  # noqa: BLE001 - an extractor that raises fails its chunks alone
            failed = Extraction(error=f"extractor raised {type(exc).__name__}: {exc}")
            found, cached = [failed] * len(units), [False] * len(units)
        for (w, i), extraction, hit in zip(units, found, cached, strict=True):
            w.extractions[w.chunks[i].id] = extraction
            w.extraction.count(extraction, w.chunks[i].id, cached=hit)
        return _batch(works)

    def __del__(self) -> None:
        cache = getattr(self, "cache", None)
        if cache is not None:
            cache.close()


class WriteStores:
    """One vector-store client and one graph-store client per actor; writes whole documents."""

    def __init__(self, writer: Callable[[], DocumentWriter]) -> None:
        self.writer = writer()

    def __call__(self, batch: Batch) -> Batch:
        works = _works(batch)
        outcomes = self.writer.write(works)
        return {"outcome": np.array([o for o in outcomes], dtype=object)}

    def __del__(self) -> None:
        writer = getattr(self, "writer", None)
        if writer is not None:
            writer.close()


class IngestBatches:
    """The fused layout: every stage object in one actor, applied in order to each batch.

    On a CPU-only machine the staged pools share the same cores and each hand-off pickles the
    batch through the object store; here a batch stays in one process and the models run with
    every CPU the actor holds. `steps` are the enabled `STAGES` with their constructor
    arguments (`stage_steps`): the same classes, in the same order, as the staged layout's pools.
    """

    def __init__(self, steps: Sequence[tuple[type, dict[str, Any]]]) -> None:
        self.steps: list[Callable[[Batch], Batch]] = [stage(**kwargs) for stage, kwargs in steps]

    def __call__(self, batch: Batch) -> Batch:
        for step in self.steps:
            batch = step(batch)
        return batch


@dataclass(frozen=True, slots=True)
class StageInputs:
    """What the stages' constructor arguments are built from, on the driver."""

    settings: Settings
    existing: dict[str, str]
    collection: str


StageKind = Literal["light", "model", "gpu", "extraction"]
"""What a stage's actors ask for (`ingest/pipeline.py`): `light` a small CPU share (chunking,
writing), `model` a model actor's CPUs, `gpu` that plus a GPU share when the cluster has GPUs,
`extraction` what the graph extractor's kind needs (an endpoint little, a local model a GPU)."""


def _always(settings: Settings) -> bool:
    return True


def _one_actor(res: StageResources, settings: Settings) -> PoolSize:
    from rayweave.ingest.resources import PoolSize

    return PoolSize(1, 1)


@dataclass(frozen=True, slots=True)
class StageSpec:
    """One ingest stage: its class, its constructor's arguments (picklable: model factories, not
    models, so each actor loads its own), what its actors ask for, its staged pool size, and
    whether the settings enable it."""

    stage: type
    kwargs: Callable[[StageInputs], dict[str, Any]]
    kind: StageKind
    pool: Callable[[StageResources, Settings], PoolSize] = _one_actor
    enabled: Callable[[Settings], bool] = _always


def _chunk_kwargs(inputs: StageInputs) -> dict[str, Any]:
    from rayweave.models.factory import build_tokenizer

    models, ingest = inputs.settings.models, inputs.settings.ingest
    return {
        "tokens": partial(build_tokenizer, models),
        "ingest": ingest,
        "existing": inputs.existing,
    }


def _dense_kwargs(inputs: StageInputs) -> dict[str, Any]:
    from rayweave.models.factory import build_dense_encoder

    return {"encoder": partial(build_dense_encoder, inputs.settings.models)}


def _sparse_kwargs(inputs: StageInputs) -> dict[str, Any]:
    from rayweave.models.factory import build_sparse_encoder

    return {"encoder": partial(build_sparse_encoder, inputs.settings.models)}


def _image_kwargs(inputs: StageInputs) -> dict[str, Any]:
    from rayweave.models.factory import build_image_encoder

    return {"encoder": partial(build_image_encoder, inputs.settings.models)}


def _entity_kwargs(inputs: StageInputs) -> dict[str, Any]:
    from rayweave.models.factory import build_entity_extractor

    return {"extractor": partial(build_entity_extractor, inputs.settings.models)}


def _facts_kwargs(inputs: StageInputs) -> dict[str, Any]:
    from rayweave.graph.extractor_factory import build_graph_extractor, extractor_identity
    from rayweave.graph.store import open_graph_store

    settings = inputs.settings
    identity = extractor_identity(settings)
    cache = partial(open_graph_store, settings, namespace=inputs.collection)
    return {
        "extractor": partial(build_graph_extractor, settings),
        "identity": identity,
        "cache": cache if identity is not None else None,
    }


def _write_kwargs(inputs: StageInputs) -> dict[str, Any]:
    from rayweave.ingest.writers import DocumentWriter

    open_writer = partial(
        DocumentWriter.open, inputs.settings, collection=inputs.collection, shared=True
    )
    return {"writer": open_writer}


def _extractor_actors(res: StageResources, settings: Settings) -> PoolSize:
    from rayweave.ingest.resources import PoolSize

    return PoolSize(settings.graph.extractor_actors, settings.graph.extractor_actors)


STAGES: tuple[StageSpec, ...] = (
    StageSpec(ChunkDocuments, _chunk_kwargs, "light"),
    StageSpec(EmbedDense, _dense_kwargs, "gpu", pool=lambda res, _: res.dense_pool),
    StageSpec(EmbedSparse, _sparse_kwargs, "gpu", pool=lambda res, _: res.sparse_pool),
    StageSpec(EmbedImages, _image_kwargs, "gpu", enabled=lambda s: bool(s.models.clip)),
    StageSpec(ExtractEntities, _entity_kwargs, "model", pool=lambda res, _: res.entity_pool),
    StageSpec(
        ExtractFacts,
        _facts_kwargs,
        "extraction",
        pool=_extractor_actors,
        enabled=lambda s: s.graph.extractor is not None,
    ),
    StageSpec(WriteStores, _write_kwargs, "light"),
)
"""Every ingest stage in pipeline order; both layouts read this list, so a stage is added here
once: the staged layout gives each enabled one its own actor pool, the fused one runs them all in
each actor."""


def enabled_stages(settings: Settings) -> list[StageSpec]:
    return [spec for spec in STAGES if spec.enabled(settings)]


def stage_steps(inputs: StageInputs) -> list[tuple[type, dict[str, Any]]]:
    """The enabled stages, in order, with their constructor arguments (`IngestBatches`)."""
    return [(spec.stage, spec.kwargs(inputs)) for spec in enabled_stages(inputs.settings)]
