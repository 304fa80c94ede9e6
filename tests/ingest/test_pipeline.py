"""The Ray Data ingest pipeline end to end on the session's real stack (Ray, ArcadeDB, Qdrant edge).

Each test ingests into its own collection (namespace) so tests stay independent.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

from rayweave.cluster.errors import SourceError
from rayweave.cluster.settings import Settings
from rayweave.cluster.types import Level
from rayweave.ingest.pipeline import (
    delete_documents,
    discover,
    resolve_layout,
    run_ingest,
)
from rayweave.ingest.report import IngestSummary
from rayweave.ingest.writers import DocumentWriter, visible_document_hashes

pytestmark = pytest.mark.integration

SAMPLE = Path(__file__).resolve().parents[2] / "ingest" / "sample_corpus"


def _collection() -> str:
    return f"t{uuid.uuid4().hex[:10]}"


def _small_corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / "docs").mkdir(parents=True)
    for name in ("docs/concepts/leases.md", "docs/troubleshooting.md", "src/ferry/retry.py"):
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(SAMPLE / name, target)
    return root


def _mixed_folder(tmp_path: Path) -> Path:
    """What a library's docs folder holds besides text: images, YAML, a stray binary."""
    from PIL import Image

    root = tmp_path / "mixed"
    (root / "img").mkdir(parents=True)
    (root / "guide.md").write_text("# Guide\n\nWhen a [task](tasks.md) raises, Ferry retries it.\n")
    (root / "retry.py").write_text(
        "def should_retry(attempt: int) -> bool:\n    return attempt < 3\n"
    )
    (root / "mkdocs.yaml").write_text("site_name: Ferry\nnav:\n  - guide.md\n")
    for name in ("a.png", "b.png"):
        Image.new("RGB", (4, 4), "red").save(root / "img" / name)
    Image.new("RGB", (4, 4), "blue").save(root / "img" / "spinner.gif")
    (root / "blob.bin").write_bytes(b"\x00\x01" * 64)
    (root / "Makefile").write_text("all:\n\ttrue\n")
    return root


def _writer(settings: Settings, collection: str) -> DocumentWriter:
    return DocumentWriter.open(settings, collection=collection, shared=True)


def _stored(settings: Settings, collection: str) -> tuple[set[str], int]:
    """The source of every stored point, and how many Document nodes the graph holds."""
    writer = _writer(settings, collection)
    try:
        sources = {str(p.payload["source"]) for p in writer.vectors.scroll(limit=10_000)[0]}
        assert writer.graph is not None
        return sources, writer.graph.counts().nodes["Document"]
    finally:
        writer.close()


class TestLayout:
    def test_auto_layout_fuses_unless_gpus_are_asked_for(self) -> None:
        assert resolve_layout(Settings()) == "fused"
        assert resolve_layout(Settings(ingest={"actor_gpus": 1})) == "staged"
        assert resolve_layout(Settings(ingest={"layout": "staged"})) == "staged"
        assert resolve_layout(Settings(ingest={"layout": "fused", "actor_gpus": 1})) == "fused"

    def test_read_blocks_feed_every_staged_actor(self) -> None:
        from rayweave.ingest.pipeline import _block_rows

        # Staged pools work only on the blocks they get: one batch per block.
        assert _block_rows(Settings(ingest={"actor_gpus": 1, "batch_size": 32})) == 32
        assert _block_rows(Settings()) == 2000  # a fused actor threads each block itself
        assert _block_rows(Settings(ingest={"read_block_rows": 500})) == 500


def test_a_slow_stage_is_not_a_stall_unless_a_limit_is_set() -> None:
    from ray.data import DataContext

    from rayweave.ingest.pipeline import _configure_ray_data

    ctx = DataContext.get_current()
    before = ctx.execution_no_progress_timeout_s
    try:
        _configure_ray_data(Settings())
        assert ctx.execution_no_progress_timeout_s == -1  # Ray Data's "never"
        _configure_ray_data(Settings(ingest={"stall_timeout_s": 600}))
        assert ctx.execution_no_progress_timeout_s == 600
    finally:
        ctx.execution_no_progress_timeout_s = before


class TestDiscover:
    def test_summary_reports_what_ignore_files_left_out(self, tmp_path: Path) -> None:
        root = _small_corpus(tmp_path)
        (root / ".gitignore").write_text("src/\n")
        (root / "docs" / ".rayweaveignore").write_text("troubleshooting.md\n")
        summary = IngestSummary(collection="c")
        files = discover([root], Settings(), summary)
        assert [p.name for p in files] == ["leases.md"]
        assert sorted(Path(p).name for p in summary.ignored) == ["src", "troubleshooting.md"]
        assert "ignored 2 paths (.gitignore, .rayweaveignore" in summary.render()
        assert summary.to_dict()["ignored"] == summary.ignored
        (root / "docs" / "concepts" / ".gitignore").write_text("*.md\n")
        with pytest.raises(SourceError, match=r"3 paths ignored by \.gitignore"):
            discover([root], Settings(), IngestSummary(collection="c"))

    def test_every_file_seen_is_counted_and_skipped_types_are_named(self, tmp_path: Path) -> None:
        root = _mixed_folder(tmp_path)
        summary = IngestSummary(collection="c")
        files = discover([root], Settings(), summary)
        assert sorted(p.name for p in files) == ["guide.md", "mkdocs.yaml", "retry.py"]
        assert summary.skipped_types == {".bin": 1, ".gif": 1, ".png": 2, "no extension": 1}
        assert summary.files_seen == 5  # the 3 files to read are counted once they are read
        text = summary.render()
        assert "5 not ingested by type (1 .bin, 1 .gif, 2 .png, 1 no extension)" in text
        # Why the images were left out and how to have them embedded.
        assert "2 image(s) not ingested: no image model" in text
        assert "RAYWEAVE_MODELS__CLIP" in text

    def test_images_are_kept_when_an_image_model_is_configured(self, tmp_path: Path) -> None:
        root = _mixed_folder(tmp_path)
        summary = IngestSummary(collection="c")
        files = discover([root], Settings(models={"clip": "ViT-B-32:openai"}), summary)
        assert sorted(p.name for p in files if p.suffix == ".png") == ["a.png", "b.png"]
        assert ".png" not in summary.skipped_types
        assert summary.notes == []

    def test_a_folder_of_images_alone_says_why_nothing_was_ingested(self, tmp_path: Path) -> None:
        root = _mixed_folder(tmp_path) / "img"
        with pytest.raises(SourceError, match=r"empty corpus.*2 \.png.*models\.clip"):
            discover([root], Settings(), IngestSummary(collection="c"))


class TestIngest:
    def test_sample_corpus_lands_in_both_stores(
        self, ray_stack: Settings, graph_connection: object
    ) -> None:
        collection = _collection()
        summary = run_ingest(ray_stack, [SAMPLE], collection=collection)
        n_files = sum(1 for p in SAMPLE.rglob("*") if p.is_file())
        assert summary.files_seen == n_files
        assert summary.documents_inserted + summary.documents_failed == n_files - 1
        assert summary.skipped_types == {".png": 1}  # no image model by default
        assert summary.documents_inserted >= n_files - 1
        assert summary.chunks > summary.documents_inserted  # three levels per document
        # A new namespace: the whole entity layer is written, nothing was there to delete.
        assert summary.graph_entities > summary.documents_inserted
        assert summary.graph_edges_written > summary.graph_entities
        assert summary.graph_edges_deleted == 0

        writer = _writer(ray_stack, collection)
        try:
            assert writer.vectors.count({"visible": True}) == summary.vectors
            hashes = visible_document_hashes(writer.vectors)
            assert len(hashes) == summary.documents_inserted
            levels = {lvl.value: writer.vectors.count({"level": lvl.value}) for lvl in Level}
            assert levels["document"] == summary.documents_inserted
            assert levels["section"] >= summary.documents_inserted
            assert levels["proposition"] > 0
            assert writer.graph is not None
            counts = writer.graph.counts()
            assert counts.nodes["Document"] == summary.documents_inserted
            assert counts.relationships.get("CHUNK_OF", 0) > 0
            assert counts.relationships.get("NEXT", 0) > 0
            assert counts.relationships.get("MENTIONS", 0) > 0
        finally:
            writer.close()

    def test_staged_and_fused_layouts_store_the_same_corpus(
        self, ray_stack: Settings, graph_connection: object, tmp_path: Path
    ) -> None:
        corpus = _small_corpus(tmp_path)
        stored = {}
        for layout in ("staged", "fused"):
            settings = ray_stack.model_copy(
                update={"ingest": ray_stack.ingest.model_copy(update={"layout": layout})}
            )
            collection = _collection()
            summary = run_ingest(settings, [corpus], collection=collection)
            writer = _writer(settings, collection)
            try:
                points = writer.vectors.scroll(filter={"visible": True}, limit=10_000)[0]
                assert writer.graph is not None
                counts = writer.graph.counts()
            finally:
                writer.close()
            stored[layout] = (
                summary.documents_inserted,
                sorted(str(p.payload["chunk_id"]) for p in points),
                counts.nodes,
                counts.relationships,
            )
        assert stored["staged"][0] == 3
        assert stored["staged"] == stored["fused"]

    def test_reingest_is_idempotent_and_changes_replace_old_chunks(
        self, ray_stack: Settings, graph_connection: object, tmp_path: Path
    ) -> None:
        corpus = _small_corpus(tmp_path)
        collection = _collection()
        first = run_ingest(ray_stack, [corpus], collection=collection)
        assert first.documents_inserted == 3
        writer = _writer(ray_stack, collection)
        try:
            before = writer.vectors.count()
            second = run_ingest(ray_stack, [corpus], collection=collection)
            assert (
                second.documents_skipped,
                second.documents_inserted,
                second.documents_updated,
            ) == (3, 0, 0)
            assert writer.vectors.count() == before

            leases = corpus / "docs/concepts/leases.md"
            leases.write_text(
                leases.read_text()
                + "\n\n## Lease tuning\n\nLease sweeping runs every heartbeat interval.\n"
            )
            third = run_ingest(ray_stack, [corpus], collection=collection)
            assert (third.documents_updated, third.documents_skipped) == (1, 2)
            texts = [
                p.payload["text"]
                for p in writer.vectors.scroll(filter={"visible": True}, limit=10_000)[0]
            ]
            assert any("Lease sweeping runs every heartbeat" in t for t in texts)
            # No invisible leftovers: every point of the collection is visible again.
            assert writer.vectors.count({"visible": False}) == 0
        finally:
            writer.close()

    def test_delete_removes_the_document_from_both_stores(
        self, ray_stack: Settings, graph_connection: object, tmp_path: Path
    ) -> None:
        corpus = _small_corpus(tmp_path)
        collection = _collection()
        run_ingest(ray_stack, [corpus], collection=collection)
        target = corpus / "docs/troubleshooting.md"
        assert delete_documents(ray_stack, [str(target)], collection=collection) == 1
        sources, documents = _stored(ray_stack, collection)
        assert not any(s.endswith("troubleshooting.md") for s in sources)
        assert documents == 2

    def test_delete_of_a_folder_gone_from_disk_removes_what_was_stored_from_it(
        self, ray_stack: Settings, graph_connection: object, tmp_path: Path
    ) -> None:
        corpus = _small_corpus(tmp_path)
        (corpus / "docs-extra").mkdir()  # a sibling whose name starts like the folder: kept
        shutil.copy(corpus / "docs/troubleshooting.md", corpus / "docs-extra/notes.md")
        collection = _collection()
        run_ingest(ray_stack, [corpus], collection=collection)
        shutil.rmtree(corpus / "docs")
        assert delete_documents(ray_stack, [str(corpus / "docs")], collection=collection) == 2
        sources, documents = _stored(ray_stack, collection)
        assert {Path(s).name for s in sources} == {"retry.py", "notes.md"}
        assert documents == 2

    def test_bad_files_are_reported_and_the_rest_lands(
        self, ray_stack: Settings, graph_connection: object, tmp_path: Path
    ) -> None:
        corpus = _small_corpus(tmp_path)
        (corpus / "docs" / "binary.md").write_bytes(b"\x00\x01\x02\xff" * 100)
        (corpus / "docs" / "latin1.md").write_bytes("caf\xe9".encode("latin-1") + b"\xff\xfe")
        summary = run_ingest(ray_stack, [corpus], collection=_collection())
        assert summary.documents_inserted == 3
        failed = {Path(e.path).name: e.reason for e in summary.errors}
        assert set(failed) == {"binary.md", "latin1.md"}
        assert all(reason for reason in failed.values())

    def test_the_summary_counts_every_file_of_a_mixed_folder(
        self, ray_stack: Settings, graph_connection: object, tmp_path: Path
    ) -> None:
        root = _mixed_folder(tmp_path)
        (root / "broken.md").write_bytes(b"\x00\x01\x02\xff" * 100)
        summary = run_ingest(ray_stack, [root], collection=_collection())
        assert (summary.documents_inserted, summary.documents_failed) == (3, 1)
        assert summary.files_seen == 9
        assert "binary content" in summary.errors[0].reason
        assert "9 seen: 3 inserted, 0 updated, 0 unchanged, 1 failed, 5 not ingested" in (
            summary.render()
        )

    def test_bad_input_names_the_problem(self, ray_stack: Settings, tmp_path: Path) -> None:
        with pytest.raises(SourceError, match="does not exist"):
            run_ingest(ray_stack, [tmp_path / "nope"], collection=_collection())
        (tmp_path / "empty").mkdir()
        with pytest.raises(SourceError, match="empty corpus"):
            run_ingest(ray_stack, [tmp_path / "empty"], collection=_collection())
