"""The Ray Data stages, built through their constructors with real small models and called
without Ray, and the one list of stages both layouts read."""

from __future__ import annotations

import pickle
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rayweave.cluster.settings import IngestSettings, ModelSettings, Settings
from rayweave.cluster.types import Chunk, ContentType, Document, Entity, Level, content_hash
from rayweave.ingest.entity_propagation import ner_sections, propagate_entities
from rayweave.ingest.pipeline import _fused_pools, _Run, _staged_pools
from rayweave.ingest.resources import NodeShape, plan_resources
from rayweave.ingest.stages import (
    ChunkDocuments,
    DocWork,
    EmbedDense,
    EmbedSparse,
    ExtractFacts,
    _batch,
    enabled_stages,
)
from rayweave.models.factory import build_dense_encoder, build_sparse_encoder, build_tokenizer


def chunk(
    cid: str,
    level: Level,
    text: str,
    *,
    parent: str | None = None,
    content_type: ContentType = ContentType.TEXT,
) -> Chunk:
    return Chunk(
        id=cid, doc_id="d", level=level, text=text, parent_id=parent, content_type=content_type
    )


def entity(name: str) -> Entity:
    return Entity(id=name.casefold(), name=name)


RAY, QDRANT, NEO = entity("Ray"), entity("Qdrant"), entity("Neo4j")

CHUNKS = [
    chunk("doc", Level.DOCUMENT, "summary"),
    chunk("s1", Level.SECTION, "Ray writes to Qdrant."),
    chunk("p1", Level.PROPOSITION, "ray schedules actors.", parent="s1"),
    chunk("p2", Level.PROPOSITION, "Nothing named here.", parent="s1"),
    chunk("s2", Level.SECTION, "Neo4j and Ray.", content_type=ContentType.TEXT),
    chunk("code", Level.SECTION, "def f(): ...", content_type=ContentType.CODE),
    chunk("p3", Level.PROPOSITION, "Orphan mentions Ray.", parent="missing"),
]


class TestEntityPropagation:
    def test_ner_reads_sections_but_not_code(self) -> None:
        assert ner_sections(CHUNKS) == [1, 4]

    def test_levels_inherit_from_sections(self) -> None:
        found = {"s1": [RAY, QDRANT], "s2": [NEO, RAY]}
        per_chunk = propagate_entities(CHUNKS, found)
        assert len(per_chunk) == len(CHUNKS)
        by_id = {c.id: ents for c, ents in zip(CHUNKS, per_chunk, strict=True)}
        # The document takes the union of its sections, first mention first, once each.
        assert by_id["doc"] == [RAY, QDRANT, NEO]
        assert by_id["s1"] == [RAY, QDRANT]
        assert by_id["s2"] == [NEO, RAY]
        # A proposition keeps its section's entities that its own text names (case-blind).
        assert by_id["p1"] == [RAY]
        assert by_id["p2"] == []
        # A section NER skipped (code) or a parent that is no section contributes nothing.
        assert by_id["code"] == []
        assert by_id["p3"] == []

    def test_no_entities_found(self) -> None:
        assert propagate_entities(CHUNKS, {}) == [[] for _ in CHUNKS]
        assert propagate_entities([], {}) == []


class _Recording:
    """A real encoder, with the texts of each call it gets recorded."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[list[str]] = []

    def encode(self, texts: list[str], *, kind: str) -> Any:
        self.calls.append(list(texts))
        return self.inner.encode(texts, kind=kind)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> ModelSettings:
    """The packaged MiniLM at fp32 (int8 quantizes per batch), BM25 terms, rule entities."""
    cache = tmp_path_factory.mktemp("onnx-cache")
    return ModelSettings(precision="fp32", sparse_kind="bm25", ner=None, cache_dir=cache)


def _work(source: str, texts: list[str]) -> DocWork:
    chunks = [chunk(f"{source}{i}", Level.SECTION, t) for i, t in enumerate(texts)]
    return DocWork(source=source, chunks=chunks, texts=texts)


class TestEmbedStages:
    """The text stages encode each distinct text of a batch once and hand every document the
    rows of its own texts; documents that failed are left alone."""

    def test_dense_and_sparse_share_distinct_texts(self, models: ModelSettings) -> None:
        x, y, z = "Ray schedules actors.", "Qdrant stores vectors.", "Neo4j holds the graph."
        works = [_work("a", [x, y]), _work("b", [y, z]), _work("c", [x])]
        works[2].error = "failed before"
        recorded = _Recording(build_dense_encoder(models))
        dense = EmbedDense(lambda: recorded)
        sparse = EmbedSparse(partial(build_sparse_encoder, models))
        out = list(sparse(dense(_batch(works)))["work"])

        assert recorded.calls == [[x, y, z]]
        expected = recorded.inner.encode([x, y, z], kind="document")
        a, b, c = out
        assert a.dense is not None
        assert b.dense is not None
        assert c.dense is None
        np.testing.assert_allclose(a.dense, expected[[0, 1]], atol=1e-6)
        np.testing.assert_allclose(b.dense, expected[[1, 2]], atol=1e-6)
        assert a.sparse is not None
        assert b.sparse is not None
        assert c.sparse is None
        assert len(a.sparse) == len(b.sparse) == 2
        assert a.sparse[1] == b.sparse[0]  # the shared text's one vector
        assert a.sparse[0] != a.sparse[1]

    def test_nothing_active_encodes_nothing(self, models: ModelSettings) -> None:
        recorded = _Recording(build_dense_encoder(models))
        dense = EmbedDense(lambda: recorded)
        assert list(dense(_batch([]))["work"]) == []
        assert recorded.calls == []


def _markdown(name: str, text: str) -> Document:
    return Document(
        id=name,
        source=f"{name}.md",
        title=name,
        content_type=ContentType.MARKDOWN,
        text=text,
        content_hash=content_hash(text),
    )


class TestChunkDocuments:
    def test_inserts_updates_and_skips_by_content_hash(self, models: ModelSettings) -> None:
        docs = [
            _markdown(name, f"# {name}\n\n{text}\n")
            for name, text in [
                ("new", "Ray schedules actors on every node of a cluster."),
                ("same", "Qdrant stores vectors and their payloads."),
                ("changed", "Neo4j holds the entity graph of the corpus."),
            ]
        ]
        existing = {"same": docs[1].content_hash, "changed": "an older hash"}
        stage = ChunkDocuments(partial(build_tokenizer, models), IngestSettings(), existing)
        works = [DocWork(source=d.source, document=d) for d in docs]
        out = list(stage(_batch(works))["work"])

        assert [w.status for w in out] == ["inserted", "skipped", "updated"]
        assert out[1].chunks == []
        for w in (out[0], out[2]):
            assert w.chunks
            assert len(w.texts) == len(w.chunks)
            assert {c.doc_id for c in w.chunks} == {w.document.id}

    def test_a_document_past_the_chunk_limit_fails_alone(self, models: ModelSettings) -> None:
        text = "\n\n".join(f"## Part {i}\n\n" + "Ray runs actors. " * 60 for i in range(6))
        doc = _markdown("long", f"# Long\n\n{text}")
        ingest = IngestSettings(max_chunks_per_document=2)
        stage = ChunkDocuments(partial(build_tokenizer, models), ingest, {})
        (work,) = stage(_batch([DocWork(source=doc.source, document=doc)]))["work"]
        assert work.status == "failed"
        assert work.error is not None
        assert "max_chunks_per_document" in work.error


class TestStageSpecs:
    """One list of stages, read by both layouts."""

    def test_the_settings_enable_images_and_facts(self) -> None:
        def names(settings: Settings) -> list[str]:
            return [spec.stage.__name__ for spec in enabled_stages(settings)]

        base = ["ChunkDocuments", "EmbedDense", "EmbedSparse", "ExtractEntities", "WriteStores"]
        assert names(Settings()) == base
        full = Settings(models={"clip": "ViT-B-32:x"}, graph={"extractor": "rules"})
        assert names(full) == [*base[:3], "EmbedImages", "ExtractEntities", "ExtractFacts", base[4]]

    def test_both_layouts_run_the_same_stages_with_picklable_arguments(self) -> None:
        settings = Settings(models={"clip": "ViT-B-32:x"}, graph={"extractor": "rules"})
        run = _Run(settings, plan_resources(settings, [NodeShape(cpus=4)]), {"d": "h"}, "c")
        staged = _staged_pools(run)
        (fused,) = _fused_pools(run)
        steps = fused.ctor["steps"]
        assert [stage for stage, _ in steps] == [pool.stage for pool in staged]
        assert [kwargs.keys() for _, kwargs in steps] == [pool.ctor.keys() for pool in staged]
        # Ray Data pickles constructor arguments: factories, never loaded models.
        for ctor in [fused.ctor, *(pool.ctor for pool in staged)]:
            pickle.loads(pickle.dumps(ctor))

    def test_staged_pools_take_their_kinds_resources(self) -> None:
        settings = Settings(
            ingest={"actor_gpus": 0.5},
            models={"clip": "ViT-B-32:x"},
            graph={"extractor": "openai:http://localhost:1/v1#m", "extractor_actors": 3},
        )
        res = plan_resources(settings, [NodeShape(cpus=16, gpus=2)])
        pools = {p.stage.__name__: p for p in _staged_pools(_Run(settings, res, {}, "c"))}
        for name in ("ChunkDocuments", "WriteStores"):
            assert pools[name].opts["num_cpus"] == res.light
            assert pools[name].size == {"size": 1}
        for name in ("EmbedDense", "EmbedSparse", "EmbedImages"):
            assert pools[name].opts["num_gpus"] == 0.5
        assert pools["EmbedDense"].size == res.dense_pool.strategy_kwargs()
        assert pools["EmbedImages"].size == {"size": 1}
        assert "num_gpus" not in pools["ExtractEntities"].opts
        assert pools["ExtractEntities"].size == res.entity_pool.strategy_kwargs()
        # An endpoint extractor's actors wait on the network: a light share, no GPU.
        facts = pools["ExtractFacts"]
        assert facts.size == {"size": 3}
        assert facts.opts["num_cpus"] == res.light
        assert "num_gpus" not in facts.opts


def test_images_of_a_batch_embed_together_and_a_bad_one_fails_alone(
    tiny_clip_config: Path, tmp_path: Path
) -> None:
    from PIL import Image

    from rayweave.ingest.chunking.images import image_document
    from rayweave.ingest.stages import EmbedImages
    from rayweave.models.factory import build_image_encoder

    rng = np.random.default_rng(0)
    paths = []
    for i in range(3):
        path = tmp_path / f"diagram-{i}.png"
        Image.fromarray(rng.integers(0, 255, (40 + 8 * i, 48, 3), dtype=np.uint8)).save(path)
        paths.append(path)
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"\x89PNG not really")
    works = []
    for path in [paths[0], broken, *paths[1:]]:
        doc = Document(
            id=path.stem, source=str(path), title=path.stem, content_type=ContentType.IMAGE, text=""
        )
        works.append(DocWork(source=str(path), document=doc, chunks=image_document(doc).chunks))
    # fp32: dynamic int8 (the CPU default) quantizes per batch, so a batch moves vectors slightly
    stage = EmbedImages(
        partial(build_image_encoder, ModelSettings(clip=str(tiny_clip_config), precision="fp32"))
    )
    assert stage.encoder is not None
    out = list(stage(_batch(works))["work"])

    assert [w.status for w in out] == ["inserted", "failed", "inserted", "inserted"]
    assert out[1].error is not None
    assert "broken.png" in out[1].error or "identify" in out[1].error
    assert out[1].image == {}
    # The section that stands for the image carries its vector; the summary does not.
    assert all(list(w.image) == [1] for w in (out[0], out[2], out[3]))
    for w, path in zip((out[0], out[2], out[3]), paths, strict=True):
        with Image.open(path) as img:
            alone = stage.encoder.encode_images([img.convert("RGB")])[0]
        np.testing.assert_allclose(w.image[1], alone, atol=1e-5)


class _RaisingExtractor:
    """An extractor whose every call raises, as a broken plugin or a crashed parser would."""

    def extract(self, texts: Any) -> Any:
        raise RuntimeError("parser crashed")


def test_an_extractor_that_raises_fails_its_chunks_not_the_batch() -> None:
    stage = ExtractFacts(_RaisingExtractor, identity=None, cache=None)
    works = [_work("a", ["Ada Lovelace wrote notes."]), _work("b", ["Babbage designed it."])]
    out = list(stage(_batch(works))["work"])
    assert [w.extraction.failed for w in out] == [1, 1]
    assert out[0].extraction.errors == ["chunk a0: extractor raised RuntimeError: parser crashed"]
    assert all(w.active for w in out)  # the documents are still written
