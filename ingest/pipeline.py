"""The ingest pipeline: read -> chunk -> embed (dense, sparse, image) -> entities -> write.

Each stage is a Ray Data callable, so a corpus is sharded across actors and nodes. In the staged
layout every model stage is its own actor pool (GPU stages scale apart from CPU ones); in the
fused layout, the default without GPUs, each actor runs the same stage objects in sequence on
its batches: on a few cores, pools contending for the same CPUs and batches pickled between them
cost more than they overlap. Models load once per actor either way. Pool sizes and CPU requests
come from the cluster's shape (`ingest/resources.py`).
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from rich.console import Console

from rayweave.cluster.beir import CorpusIndex
from rayweave.cluster.errors import SourceError
from rayweave.cluster.progress import progress_bar
from rayweave.cluster.settings import Settings
from rayweave.cluster.step_clock import StepClock
from rayweave.ingest.report import IngestSummary
from rayweave.ingest.resources import StageResources, cluster_nodes, plan_resources

if TYPE_CHECKING:
    from ray.data import Dataset

    from rayweave.graph.extraction import Extraction
    from rayweave.graph.indexing import LayerChange
    from rayweave.ingest.stages import StageInputs, StageKind


def resolve_layout(settings: Settings) -> Literal["staged", "fused"]:
    """`ingest.layout` with 'auto' decided: stage pools pay off when GPUs take the model stages."""
    layout: Literal["auto", "staged", "fused"] = settings.ingest.layout
    if layout == "auto":
        return "staged" if settings.ingest.actor_gpus > 0 else "fused"
    return layout


IMAGES_WITHOUT_MODEL = (
    "{n} image(s) not ingested: no image model is configured (models.clip is unset). To embed "
    "images with CLIP, set it to an open_clip model and local weights, e.g. "
    "RAYWEAVE_MODELS__CLIP='ViT-B-32:/path/to/open_clip_model.safetensors' or [models] clip = "
    "'...' in rayweave.toml."
)


def discover(paths: Sequence[Path], settings: Settings, summary: IngestSummary) -> list[Path]:
    """Expand files and folders; report unreadable ones, what ignore files left out, and count,
    by type, those not ingested (images too when no image model is configured); fail only if
    nothing is left."""
    from rayweave.cluster.types import ContentType
    from rayweave.ingest.readers import discover as walk
    from rayweave.ingest.readers import file_type

    if not paths:
        raise SourceError("no paths given: name at least one file or folder to ingest")
    missing = [p for p in paths if not p.exists() and not p.is_symlink()]
    if missing and len(missing) == len(paths):
        raise SourceError(f"path does not exist: {missing[0]}", path=str(missing[0]))
    for p in missing:
        summary.add_error(str(p), "path does not exist")
    found = walk([p for p in paths if p not in missing], settings.ingest)
    for err in found.errors:
        summary.add_error(err.path, err.reason)
    summary.ignored = list(found.ignored)
    for kind, n in found.skipped_types.items():
        summary.skip_type(kind, n)
    files = list(found.files)
    if not settings.models.clip:
        images = [f for f in files if f.content_type is ContentType.IMAGE]
        if images:
            files = [f for f in files if f.content_type is not ContentType.IMAGE]
            for f in images:
                summary.skip_type(file_type(f.path))
            summary.notes.append(IMAGES_WITHOUT_MODEL.format(n=len(images)))
    if not files:
        where = ", ".join(str(p) for p in paths)
        why = ""
        if summary.skipped_types:
            kinds = ", ".join(f"{n} {k}" for k, n in sorted(summary.skipped_types.items()))
            why = f" ({summary.files_not_ingested} files of types not ingested: {kinds})"
        if found.ignored:
            why += (
                f" ({len(found.ignored)} paths ignored by .gitignore/.rayweaveignore or ingest "
                "globs)"
            )
        notes = "".join(f"; {note}" for note in summary.notes)
        raise SourceError(
            f"empty corpus: no ingestible files under {where}{why}{notes}", path=where
        )
    return [Path(f.path) for f in files]


def _beir_corpus(folder: Path) -> Path:
    corpus = folder / "corpus.jsonl" if folder.is_dir() else folder
    if not corpus.is_file():
        raise SourceError(f"BEIR corpus not found: {corpus}", path=str(corpus))
    return corpus


def _count_lines(path: Path) -> int:
    with path.open("rb") as fh:
        return sum(1 for line in fh if line.strip())


@dataclass(frozen=True, slots=True)
class _Source:
    """What the read stage starts from: one BEIR corpus file, or the discovered files."""

    total: int
    corpus: Path | None = None
    files: tuple[Path, ...] = ()


def _plan_source(
    settings: Settings,
    paths: Sequence[Path],
    *,
    beir: bool,
    corpus_index: CorpusIndex | None,
    summary: IngestSummary,
) -> _Source:
    if not beir:
        files = discover(paths, settings, summary)
        return _Source(total=len(files), files=tuple(files))
    if len(paths) != 1:
        raise SourceError("--beir takes exactly one BEIR folder")
    corpus = _beir_corpus(paths[0])
    total = corpus_index.lines if corpus_index is not None else _count_lines(corpus)
    if total == 0:
        raise SourceError(f"empty corpus: {corpus} has no records", path=str(corpus))
    return _Source(total=total, corpus=corpus)


def _start_services(settings: Settings, collection: str, console: Console) -> dict[str, str]:
    """Connect to Ray and both stores; returns the content hash of every visible document."""
    from rayweave.cluster.services.graph_server import resolve_graph_connection
    from rayweave.cluster.services.runtime import connect
    from rayweave.ingest.writers import DocumentWriter, visible_document_hashes

    with console.status("starting Ray, the graph server and the vector store"):
        connect(settings)
        resolve_graph_connection(settings)
        writer = DocumentWriter.open(settings, collection=collection, shared=True)
        existing: dict[str, str] = visible_document_hashes(writer.vectors)
        writer.close()
    return existing


def _configure_ray_data(settings: Settings) -> None:
    """Keep Ray Data's own output off the console (our progress bar counts documents), and
    give a stalled pipeline `ingest.stall_timeout_s`."""
    from ray.data import DataContext

    ctx = DataContext.get_current()
    ctx.execution_no_progress_timeout_s = settings.ingest.stall_timeout_s or -1
    ctx.enable_progress_bars = False  # our own progress bar counts documents, not blocks
    ctx.verbose_progress = False
    # Ray Data's plan, per-dataset lines and warnings (e.g. "Progress bars disabled", which we
    # chose) go to its log file (ray-data.log in the session logs), not over our progress bar.
    for handler in logging.getLogger("ray.data").handlers:
        if handler.get_name() == "console":
            handler.setLevel(logging.ERROR)
    # Its issue detectors repeat a memory warning every 30 s per model pool; `rayweave bench
    # ingest` measures peak memory instead.
    ctx.issue_detectors_config.detectors = []


def _block_rows(settings: Settings) -> int:
    """Documents per read block: `ingest.read_block_rows`, or by layout. Staged pools work only
    on the blocks they get, so one batch per block lets every actor work and the stages overlap;
    a fused actor threads each block across its node, and smaller blocks only cost it (about 5%
    and 0.5 GB on 2 cores, docs/experiments/2026-11-28-gpu-ingest.md)."""
    if settings.ingest.read_block_rows is not None:
        return settings.ingest.read_block_rows
    return settings.ingest.batch_size if resolve_layout(settings) == "staged" else 2000


def _read_documents(settings: Settings, source: _Source, res: StageResources) -> Dataset:
    """The dataset of `DocWork` batches, one document each, read by stateless tasks."""
    import ray

    from rayweave.ingest import stages

    if source.corpus is not None:
        # The read task asks for the planned share too: at Ray Data's default of 1 CPU it waits
        # forever for a core that the actor pools already hold.
        blocks = max(2, math.ceil(source.total / _block_rows(settings)))
        ds = ray.data.read_text(str(source.corpus), override_num_blocks=blocks, num_cpus=res.task)
        return ds.map_batches(
            stages.load_beir_lines,  # type: ignore[arg-type]  # Ray's UDF type lists Arrow/pandas
            fn_kwargs={"source": str(source.corpus.resolve())},
            batch_size=settings.ingest.batch_size,
            num_cpus=res.task,
        )
    files = source.files
    ds = ray.data.from_items(
        [{"path": str(p)} for p in files], override_num_blocks=max(1, min(len(files) // 8, 64))
    )
    return ds.map_batches(
        stages.load_files,  # type: ignore[arg-type]  # batches are dicts; Ray's type lists more
        fn_kwargs={"settings": settings},
        batch_size=8,
        num_cpus=res.task,
    )


@dataclass(frozen=True, slots=True)
class _Run:
    """What the stage actors are built from: settings, planned resources, stored hashes."""

    settings: Settings
    res: StageResources
    existing: dict[str, str]
    collection: str


@dataclass(frozen=True, slots=True)
class _Pool:
    """One actor pool of `map_batches`: the stage class, its constructor's arguments, the pool
    size (`ActorPoolStrategy` arguments), and what each actor asks for plus its batch size."""

    stage: type
    ctor: dict[str, Any]
    size: dict[str, Any]
    opts: dict[str, Any]


def _inputs(run: _Run, settings: Settings) -> StageInputs:
    from rayweave.ingest.stages import StageInputs

    return StageInputs(settings=settings, existing=run.existing, collection=run.collection)


def _fused_pools(run: _Run) -> list[_Pool]:
    """Every stage in each actor, with a node's CPUs as threads (Ray gives a fractional actor
    one thread unless told otherwise)."""
    from rayweave.ingest import stages

    settings, res = run.settings, run.res
    threads = settings.models.num_threads or res.fused_threads
    fused = settings.model_copy(
        update={"models": settings.models.model_copy(update={"num_threads": threads})}
    )
    ctor = {"steps": stages.stage_steps(_inputs(run, fused))}
    opts = {"num_cpus": res.fused, "batch_size": settings.ingest.batch_size}
    return [_Pool(stages.IngestBatches, ctor, res.fused_pool.strategy_kwargs(), opts)]


def _staged_pools(run: _Run) -> list[_Pool]:
    """One actor pool per enabled stage: each pool's size, CPUs and GPUs from the planned
    resources and the stage's kind."""
    from rayweave.ingest import stages

    inputs = _inputs(run, run.settings)
    return [
        _Pool(
            spec.stage,
            spec.kwargs(inputs),
            spec.pool(run.res, run.settings).strategy_kwargs(),
            _actor_opts(spec.kind, run),
        )
        for spec in stages.enabled_stages(run.settings)
    ]


def _actor_opts(kind: StageKind, run: _Run) -> dict[str, Any]:
    """What each actor of a stage of `kind` asks for, and its batch size. The graph extractor's
    actors each keep `extractor_concurrency` requests in flight to an endpoint, which needs
    little CPU; a local model takes a GPU share like the encoders when the cluster has GPUs."""
    settings, res = run.settings, run.res
    if kind == "extraction":
        from rayweave.graph.llm_extraction import parse_extractor_spec

        assert settings.graph.extractor is not None
        extractor_kind, _ = parse_extractor_spec(settings.graph.extractor)
        kind = "gpu" if extractor_kind == "local" else "light"
    opts: dict[str, Any] = {
        "num_cpus": res.light if kind == "light" else res.model,
        "batch_size": settings.ingest.batch_size,
    }
    if kind == "gpu" and res.gpus > 0:
        opts["num_gpus"] = res.gpus
    return opts


def _through_pools(ds: Dataset, pools: list[_Pool]) -> Dataset:
    from ray.data import ActorPoolStrategy

    for pool in pools:
        ds = ds.map_batches(
            pool.stage,
            fn_constructor_kwargs=pool.ctor,
            compute=ActorPoolStrategy(**pool.size),
            **pool.opts,
        )
    return ds


def _collect(
    ds: Dataset, console: Console, collection: str, total: int, summary: IngestSummary
) -> None:
    """Drain the pipeline into `summary`, advancing the progress bar per written document."""
    with progress_bar(
        console,
        f"ingest {collection}",
        total,
        unit="documents",
        detail=lambda: f"{summary.chunks} chunks",
    ) as advance:
        for batch in ds.iter_batches(batch_size=None, batch_format="numpy"):
            for outcome in batch["outcome"]:
                summary.add(outcome)
            advance(len(batch["outcome"]))


def run_ingest(
    settings: Settings,
    paths: Sequence[Path],
    *,
    beir: bool = False,
    console: Console | None = None,
    collection: str | None = None,
    corpus_index: CorpusIndex | None = None,
) -> IngestSummary:
    """Ingest files/folders (or one BEIR folder) into `collection`; returns the run summary.

    A BEIR corpus is read by the pipeline's read tasks, each line through the shared
    `parse_corpus_line`; `corpus_index` (from a caller that already streamed the file, such as
    `rayweave eval`) saves the driver its counting pass.
    """
    console = console or Console(stderr=True, quiet=True)
    collection = collection or settings.qdrant.collection
    summary = IngestSummary(collection=collection)
    started = time.monotonic()
    source = _plan_source(settings, paths, beir=beir, corpus_index=corpus_index, summary=summary)
    existing = _start_services(settings, collection, console)
    _configure_ray_data(settings)
    run = _Run(settings, plan_resources(settings, cluster_nodes()), existing, collection)
    pools = _fused_pools(run) if resolve_layout(settings) == "fused" else _staged_pools(run)
    ds = _through_pools(_read_documents(settings, source, run.res), pools)
    _collect(ds, console, collection, source.total, summary)
    summary.stage_stats = ds.stats()
    linking = time.monotonic()
    with console.status("linking entities across documents and building the vector index"):
        done = finalize(settings, collection)
    summary.graph_entities = done.entities
    summary.graph_edges_written = done.edges_written
    summary.graph_edges_deleted = done.edges_deleted
    summary.link_seconds = time.monotonic() - linking
    summary.link_steps = done.seconds
    if settings.graph.extractor is not None and settings.graph.extractor.startswith("file:"):
        summary.notes.append(_file_match_note(settings, collection))
    summary.seconds = time.monotonic() - started
    return summary


def _file_match_note(settings: Settings, collection: str) -> str:
    """A `file:` extractor's matches over every stored section (each actor saw only its share)."""
    from rayweave.graph.extractor_factory import file_match_note
    from rayweave.graph.store import open_graph_store
    from rayweave.ingest.entity_propagation import ner_sections

    assert settings.graph.extractor is not None
    graph = open_graph_store(settings, namespace=collection)
    try:
        chunks, _ = graph.chunks_and_mentions()
    finally:
        graph.close()
    texts = [chunks[i].text for i in ner_sections(chunks)]
    return file_match_note(settings.graph.extractor.removeprefix("file:"), texts)


def finalize(
    settings: Settings,
    collection: str,
    *,
    rebuild: bool = False,
    progress: Callable[[str], None] | None = None,
) -> LayerChange:
    """Corpus-wide steps after documents are written or deleted: the graph's entity layer from
    every stored chunk and synonymy for the names that changed (`graph.indexing`, in the process
    or actor that `graph.upkeep_host` names, `ingest/upkeep_host.py`), the facts
    collection from the extractions kept on chunks, and the vector index build. `rebuild`: the
    entity layer as a Ray job over shares of the corpus, every name relinked
    (`ingest/corpus_rebuild.py`); `progress` hears which step runs. Returns what changed in
    the entity layer and the seconds per step (the upkeep's, then facts and the vector index).
    """
    from rayweave.cluster.vectors.service import vector_store_for
    from rayweave.graph.indexing import LayerChange
    from rayweave.graph.store import open_graph_store
    from rayweave.ingest.corpus_rebuild import rebuild_on_cluster
    from rayweave.ingest.upkeep_host import run_upkeep

    clock = StepClock()
    store = vector_store_for(settings, collection)
    if rebuild:
        with clock.step("rebuild"):
            done = rebuild_on_cluster(settings, collection, progress=progress)
        change = LayerChange(
            entities=done.entities,
            edges_written=done.edges_written,
            edges_deleted=done.edges_deleted,
        )
    else:
        change = run_upkeep(settings, collection, dense_dim=store.spec().dense_dim)
        clock.add(change.seconds)
    graph = open_graph_store(settings, namespace=collection)
    try:
        with clock.step("facts"):
            extractions = graph.chunk_extractions()
            if extractions or settings.graph.extractor is not None:
                _sync_facts(settings, collection, extractions)
    finally:
        graph.close()
    with clock.step("vector index"):
        store.optimize()
    return replace(change, seconds=clock.seconds)


def with_maintenance(settings: Settings, mode: Literal["incremental", "full"]) -> Settings:
    """`settings` with another `graph.maintenance` (the bench's baseline, the repair path)."""
    return settings.model_copy(
        update={"graph": settings.graph.model_copy(update={"maintenance": mode})}
    )


def _sync_facts(settings: Settings, collection: str, extractions: Mapping[str, Extraction]) -> None:
    """The facts collection equal to the stored extractions' statements (`graph/facts.py`);
    fact texts are encoded as documents, since a query is matched against them."""
    from rayweave.cluster.vectors.service import vector_store_for
    from rayweave.graph.facts import collect_facts, facts_collection, sync_facts
    from rayweave.models.factory import build_dense_encoder

    encoder = build_dense_encoder(settings.models)
    name = facts_collection(collection)
    store = vector_store_for(settings, name)
    sync_facts(
        store,
        collect_facts(extractions),
        lambda texts: encoder.encode(texts, kind="document"),
        name=name,
        dense_dim=encoder.dim,
    )
    store.optimize()


def delete_documents(
    settings: Settings, targets: Sequence[str], *, collection: str | None = None
) -> int:
    """Remove documents named by path, folder or id from both stores (paths may be gone from
    disk already; a folder takes every document stored from inside it)."""
    from rayweave.cluster.services.runtime import connect
    from rayweave.ingest.readers import document_id_for
    from rayweave.ingest.writers import DocumentWriter, document_ids_under

    if not targets:
        raise SourceError("name at least one path or document id to delete")
    connect(settings)
    writer = DocumentWriter.open(
        settings, collection=collection or settings.qdrant.collection, shared=True
    )
    try:
        # A target may be a file path, a folder or a document id: try all three.
        ids = {t for t in targets} | {document_id_for(Path(t)) for t in targets}
        folders = [os.path.realpath(t) for t in targets if not Path(t).is_file()]
        ids.update(document_ids_under(writer.vectors, folders))
        removed: int = writer.delete(sorted(ids))
    finally:
        writer.close()
    if removed:
        # What the deleted documents named, and the statistics they counted in, go too: the
        # graph equals a fresh ingest of the documents that remain.
        finalize(settings, collection or settings.qdrant.collection)
    return removed
