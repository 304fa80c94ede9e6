"""The pure algorithms behind the Ray Data stages, called without Ray."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rayweave.cluster.types import Chunk, ContentType, Entity, Level, SparseVector
from rayweave.ingest.entity_propagation import ner_sections, propagate_entities
from rayweave.ingest.stages import DocWork, EmbedDense, EmbedSparse, _batch


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


class _FakeDense:
    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def encode(self, texts: list[str], *, kind: str) -> np.ndarray:
        self.calls.append(list(texts))
        return np.arange(len(texts), dtype=np.float32)[:, None] * np.ones((1, 2), np.float32)


class _FakeSparse:
    def encode(self, texts: list[str], *, kind: str) -> list[SparseVector]:
        return [SparseVector(indices=(i,), values=(1.0,)) for i in range(len(texts))]


def _work(source: str, texts: list[str]) -> DocWork:
    chunks = [chunk(f"{source}{i}", Level.SECTION, t) for i, t in enumerate(texts)]
    return DocWork(source=source, chunks=chunks, texts=texts)


class TestEmbedStages:
    """The text stages encode each distinct text of a batch once and hand every document the
    rows of its own texts; documents that failed are left alone."""

    def test_dense_and_sparse_share_distinct_texts(self) -> None:
        works = [_work("a", ["x", "y"]), _work("b", ["y", "z"]), _work("c", ["x"])]
        works[2].error = "failed before"
        dense = EmbedDense.__new__(EmbedDense)
        dense.encoder = _FakeDense()
        sparse = EmbedSparse.__new__(EmbedSparse)
        sparse.encoder = _FakeSparse()
        out = list(sparse(dense(_batch(works)))["work"])
        assert dense.encoder.calls == [["x", "y", "z"]]
        rows = [None if w.dense is None else w.dense[:, 0].tolist() for w in out]
        assert rows == [[0.0, 1.0], [1.0, 2.0], None]
        assert [None if w.sparse is None else [v.indices for v in w.sparse] for w in out] == [
            [(0,), (1,)],
            [(1,), (2,)],
            None,
        ]

    def test_nothing_active_encodes_nothing(self) -> None:
        dense = EmbedDense.__new__(EmbedDense)
        dense.encoder = _FakeDense()
        assert list(dense(_batch([]))["work"]) == []
        assert dense.encoder.calls == []


def test_images_of_a_batch_embed_together_and_a_bad_one_fails_alone(
    tiny_clip_config: Path, tmp_path: Path
) -> None:
    from PIL import Image

    from rayweave.cluster.settings import Settings
    from rayweave.cluster.types import Document
    from rayweave.ingest.chunking.images import image_document
    from rayweave.ingest.stages import EmbedImages

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
    stage = EmbedImages(Settings(models={"clip": str(tiny_clip_config), "precision": "fp32"}))
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
