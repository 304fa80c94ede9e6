from __future__ import annotations

import codecs
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from rayweave.cluster.errors import SourceError
from rayweave.cluster.settings import IngestSettings
from rayweave.cluster.types import ContentType, content_hash, stable_id
from rayweave.ingest.readers import (
    ReadError,
    discover,
    read_beir_corpus,
    read_document,
    read_documents,
)

from .conftest import beir_folder


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    return path


def reasons(errors: list[ReadError]) -> dict[str, str]:
    return {Path(e.path).name: e.reason for e in errors}


class TestDiscoverAndRead:
    def test_missing_path_raises_naming_it(self, tmp_path: Path, settings: IngestSettings) -> None:
        missing = tmp_path / "nope"
        with pytest.raises(SourceError, match="nope does not exist") as info:
            read_documents([missing], settings)
        assert info.value.path == str(missing)

    def test_no_paths(self, settings: IngestSettings) -> None:
        with pytest.raises(SourceError, match="no input paths"):
            discover([], settings)

    def test_reads_known_types_and_reports_bad_files(
        self, tmp_path: Path, settings: IngestSettings
    ) -> None:
        write(tmp_path / "guide.md", "# Install Guide\n\nRun it.\n")
        write(tmp_path / "mod.py", '"""Queue helpers."""\n\ndef f():\n    return 1\n')
        write(tmp_path / "bin.md", b"\x00\x01\x02binary\x00")
        write(tmp_path / "latin.txt", "caf\xe9 au lait\n".encode("latin-1"))
        write(tmp_path / "empty.md", b"")
        write(tmp_path / "blank.rst", "   \n\n")
        write(tmp_path / "data.lock", "ignored")
        result = read_documents([tmp_path], settings)
        docs = {Path(d.source).name: d for d in result.documents}
        assert set(docs) == {"guide.md", "mod.py"}
        assert docs["guide.md"].title == "Install Guide"
        assert docs["guide.md"].content_type == ContentType.MARKDOWN
        assert docs["mod.py"].content_type == ContentType.CODE
        assert docs["mod.py"].language == "python"
        assert docs["mod.py"].title == "Queue helpers."
        why = reasons(result.errors)
        assert "binary content" in why["bin.md"]
        assert "invalid UTF-8 at byte 3 (line 1)" in why["latin.txt"]
        assert why["empty.md"] == "empty file"
        assert "only whitespace" in why["blank.rst"]
        assert "data.lock" not in why  # unknown types are skipped, not errors

    def test_stable_ids_and_hashes(self, tmp_path: Path, settings: IngestSettings) -> None:
        path = write(tmp_path / "a.md", "# A\n\ntext\n")
        first = read_document(path, settings)
        again = read_document(path, settings)
        assert first.id == again.id == stable_id("file", os.path.realpath(path))
        assert first.content_hash == content_hash(path.read_bytes())
        path.write_text("# A\n\nchanged\n")
        assert read_document(path, settings).content_hash != first.content_hash

    def test_bom_and_utf16(self, tmp_path: Path, settings: IngestSettings) -> None:
        bom = write(tmp_path / "bom.md", codecs.BOM_UTF8 + b"# Title\r\n\r\nBody\r\n")
        doc = read_document(bom, settings)
        assert doc.text == "# Title\n\nBody\n"
        assert doc.title == "Title"
        u16 = write(tmp_path / "u16.txt", "Hello wide world\n".encode("utf-16"))
        assert read_document(u16, settings).text == "Hello wide world\n"

    def test_too_big(self, tmp_path: Path) -> None:
        path = write(tmp_path / "big.md", "word " * 400)
        with pytest.raises(SourceError, match=r"above ingest.max_file_mb=0.001"):
            read_document(path, IngestSettings(max_file_mb=0.001))

    def test_empty_corpus_lists_reasons(self, tmp_path: Path, settings: IngestSettings) -> None:
        write(tmp_path / "x.md", b"\x00\x00")
        write(tmp_path / "y.bin", b"\x00")
        with pytest.raises(
            SourceError, match=r"empty corpus.*1 unusable: .*x.md: binary.*1 files of types"
        ):
            read_documents([tmp_path], settings)
        empty = tmp_path / "nothing"
        empty.mkdir()
        with pytest.raises(SourceError, match="empty corpus"):
            read_documents([empty], settings)

    def test_include_exclude_globs(self, tmp_path: Path) -> None:
        write(tmp_path / "docs" / "a.md", "# a\n\ntext")
        write(tmp_path / "docs" / "b.rst", "B\n=\n\ntext")
        write(tmp_path / "node_modules" / "pkg" / "c.md", "# c\n\ntext")
        write(tmp_path / "src" / "node_modules" / "d.md", "# d\n\ntext")
        write(tmp_path / ".git" / "e.md", "# e\n\ntext")
        found = discover([tmp_path], IngestSettings())
        assert sorted(f.relative for f in found.files) == ["docs/a.md", "docs/b.rst"]
        only_md = discover([tmp_path], IngestSettings(include=("*.md",), exclude=()))
        assert sorted(f.relative for f in only_md.files) == [
            ".git/e.md",
            "docs/a.md",
            "node_modules/pkg/c.md",
            "src/node_modules/d.md",
        ]
        nested = discover([tmp_path], IngestSettings(include=("docs/**",), exclude=("**/b.rst",)))
        assert [f.relative for f in nested.files] == ["docs/a.md"]

    def test_gitignore_at_any_depth_with_negation_and_folders(self, tmp_path: Path) -> None:
        repo = tmp_path / "repo"
        write(repo / ".gitignore", "*.log.md\nbuild/\n/notes.md\n!keep.log.md\n# a comment\n")
        write(repo / "README.md", "# r\n\ntext")
        write(repo / "notes.md", "# top-level notes are ignored\n\ntext")
        write(repo / "keep.log.md", "# re-included by !\n\ntext")
        write(repo / "run.log.md", "# ignored\n\ntext")
        write(repo / "build" / "out.md", "# in an ignored folder\n\ntext")
        write(repo / "src" / "notes.md", "# anchored /notes.md does not reach here\n\ntext")
        write(repo / "src" / "app.py", "def f():\n    return 1\n")
        write(repo / "src" / "gen" / "api.py", "def g():\n    return 2\n")
        write(repo / "src" / "old.log.md", "# ignored from the root file\n\ntext")
        # a deeper .gitignore: relative to its own folder, and it wins over the root one
        write(repo / "src" / ".gitignore", "gen/\n!old.log.md\n")
        write(repo / "docs" / "build" / "x.md", "# a folder named build anywhere\n\ntext")
        write(repo / "docs" / "guide.md", "# g\n\ntext")
        write(repo / "docs" / "draft.md", "# rayweave-only ignore\n\ntext")
        write(repo / "docs" / ".rayweaveignore", "draft.md\n")

        found = discover([repo], IngestSettings())
        assert sorted(f.relative for f in found.files) == [
            "README.md",
            "docs/guide.md",
            "keep.log.md",
            "src/app.py",
            "src/notes.md",
            "src/old.log.md",
        ]
        ignored = sorted(
            os.path.relpath(p, repo) + ("/" if p.endswith("/") else "") for p in found.ignored
        )
        assert ignored == [
            "build/",
            "docs/build/",
            "docs/draft.md",
            "notes.md",
            "run.log.md",
            "src/gen/",
        ]
        # explicit files are always read; .gitignore honouring can be switched off
        assert [f.relative for f in discover([repo / "run.log.md"], IngestSettings()).files] == [
            "run.log.md"
        ]
        off = discover([repo], IngestSettings(respect_gitignore=False))
        assert "build/out.md" in {f.relative for f in off.files}
        assert "docs/draft.md" not in {f.relative for f in off.files}  # .rayweaveignore stays
        assert [Path(p).name for p in off.ignored] == ["draft.md"]

    def test_exclude_globs_win_over_ignore_files(self, tmp_path: Path) -> None:
        write(tmp_path / ".gitignore", "!vendor/\n!*.md\n")
        write(tmp_path / "vendor" / "lib.md", "# v\n\ntext")
        write(tmp_path / "a.md", "# a\n\ntext")
        found = discover([tmp_path], IngestSettings(exclude=("vendor/",)))
        assert [f.relative for f in found.files] == ["a.md"]
        assert found.ignored == (str(tmp_path / "vendor") + "/",)

    def test_empty_corpus_names_the_ignored(self, tmp_path: Path, settings: IngestSettings) -> None:
        write(tmp_path / ".gitignore", "*\n")
        write(tmp_path / "a.md", "# a\n\ntext")
        with pytest.raises(SourceError, match=r"2 paths ignored by \.gitignore"):
            read_documents([tmp_path], settings)

    def test_explicit_file_with_unknown_extension_is_sniffed(
        self, tmp_path: Path, settings: IngestSettings
    ) -> None:
        path = write(tmp_path / "NOTES.cfg", "# Heading\n\nSome [link](x.md) text.\n")
        result = read_documents([path], settings)
        assert result.documents[0].content_type == ContentType.MARKDOWN
        readme = write(tmp_path / "README", "Title\n=====\n\nBody text.\n")
        assert read_document(readme, settings).content_type == ContentType.RST

    def test_notebook_json_checked(self, tmp_path: Path, settings: IngestSettings) -> None:
        bad = write(tmp_path / "bad.ipynb", '{"cells": [ {"cell_type": "code", ')
        with pytest.raises(SourceError, match=r"invalid notebook JSON: .* at line 1 column \d+"):
            read_document(bad, settings)
        nocells = write(tmp_path / "nocells.ipynb", '{"metadata": {}}')
        with pytest.raises(SourceError, match="no 'cells' list"):
            read_document(nocells, settings)
        good = write(
            tmp_path / "good.ipynb",
            json.dumps(
                {
                    "cells": [{"cell_type": "markdown", "source": ["# Tutorial\n", "Hi"]}],
                    "nbformat": 4,
                }
            ),
        )
        assert read_document(good, settings).title == "Tutorial"

    def test_images(self, tmp_path: Path, settings: IngestSettings) -> None:
        from PIL import Image

        png = tmp_path / "queue_diagram.png"
        Image.new("RGB", (4, 4), "red").save(png)
        doc = read_document(png, settings)
        assert doc.content_type == ContentType.IMAGE
        assert doc.language == "png"
        assert doc.title == "queue diagram"
        assert doc.source == os.path.realpath(png)
        fake = write(tmp_path / "fake.jpg", "not an image")
        with pytest.raises(SourceError, match="not a PNG or JPEG"):
            read_document(fake, settings)


class TestLinksAndSpecialFiles:
    def test_symlink_loops_are_reported_not_walked(
        self, tmp_path: Path, settings: IngestSettings
    ) -> None:
        write(tmp_path / "docs" / "a.md", "# A\n\ntext")
        os.symlink(tmp_path / "docs", tmp_path / "docs" / "again")  # folder loop
        os.symlink(tmp_path / "self.md", tmp_path / "self.md")  # a link to itself
        os.symlink(tmp_path / "gone.md", tmp_path / "broken.md")
        os.symlink(tmp_path / "docs" / "a.md", tmp_path / "alias.md")  # same file twice
        result = read_documents([tmp_path], settings)
        assert [Path(d.source).name for d in result.documents] == ["a.md"]
        why = reasons(result.errors)
        assert "symlink loop" in why["again"]
        assert "symlink loop" in why["self.md"]
        assert "broken symlink" in why["broken.md"]

    @pytest.mark.timeout(20)
    def test_fifo_is_not_opened(self, tmp_path: Path, settings: IngestSettings) -> None:
        write(tmp_path / "ok.md", "# ok\n\ntext")
        os.mkfifo(tmp_path / "pipe.md")
        result = read_documents([tmp_path], settings)
        assert reasons(result.errors)["pipe.md"] == "a FIFO"
        with pytest.raises(SourceError, match="a FIFO"):
            read_document(tmp_path / "pipe.md", settings)

    def test_permission_denied(self, settings: IngestSettings) -> None:
        """Unreadable files and folders, checked by the kernel.

        Tests run as root, which ignores permission bits, so a forked child drops to `nobody`
        before reading (the interpreter is already loaded, so its own files need not be readable).
        """
        root = Path(tempfile.mkdtemp(prefix="rw-perm-", dir="/tmp"))
        try:
            os.chmod(root, 0o755)
            write(root / "ok.md", "# ok\n\ntext")
            os.chmod(root / "ok.md", 0o644)
            secret = write(root / "secret.md", "# secret\n\ntext")
            os.chmod(secret, 0o000)
            locked = root / "locked"
            write(locked / "inner.md", "# inner\n\ntext")
            os.chmod(locked, 0o000)
            if os.geteuid() != 0:
                result = read_documents([root], settings)
                errors = [(e.path, e.reason) for e in result.errors]
                names = [Path(d.source).name for d in result.documents]
            else:
                names, errors = _read_as_nobody(root, settings)
            assert names == ["ok.md"]
            why = {Path(p).name: r for p, r in errors}
            assert why["secret.md"] == "cannot read: permission denied"
            assert why["locked"] == "cannot list folder: permission denied"
        finally:
            os.chmod(root / "locked", 0o755)
            shutil.rmtree(root)


def _read_as_nobody(
    root: Path, settings: IngestSettings
) -> tuple[list[str], list[tuple[str, str]]]:
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        code = 0
        try:
            os.close(read_fd)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            result = read_documents([root], settings)
            payload = {
                "names": [Path(d.source).name for d in result.documents],
                "errors": [(e.path, e.reason) for e in result.errors],
            }
            os.write(write_fd, json.dumps(payload).encode())
        except BaseException as exc:  # noqa: BLE001 - the forked child reports any crash
            os.write(write_fd, json.dumps({"crash": repr(exc)}).encode())
            code = 1
        finally:
            os._exit(code)
    os.close(write_fd)
    chunks = []
    while data := os.read(read_fd, 65536):
        chunks.append(data)
    os.close(read_fd)
    os.waitpid(pid, 0)
    payload = json.loads(b"".join(chunks))
    assert "crash" not in payload, payload
    return payload["names"], [tuple(e) for e in payload["errors"]]


class TestBeir:
    def test_bare_functions_are_python_code(self) -> None:
        """Untitled Python functions (CoSQA's and CodeSearchNet's shape; the fixture holds
        rayweave's own) are CODE/python, titled by the function's name."""
        docs = list(read_beir_corpus(beir_folder("code-dev")))
        assert len(docs) == 240
        assert docs[0].id == "fn-337"
        assert docs[0].title == "_definitions"
        assert all(d.content_type == ContentType.CODE and d.language == "python" for d in docs)
        assert all(d.title for d in docs)
        assert len({d.id for d in docs}) == len(docs)

    def test_hotpotqa_is_prose(self) -> None:
        docs = list(read_beir_corpus(beir_folder("hotpotqa-dev")))
        assert len(docs) == 300
        assert docs[0].title == "Herbert L. Kessler"
        assert all(d.content_type != ContentType.CODE for d in docs)
        assert docs[0].metadata == {"corpus": "hotpotqa-dev", "line": 1}

    def test_bad_records_name_file_and_line(self, tmp_path: Path) -> None:
        lines = [
            json.dumps({"_id": "a", "title": "A", "text": "Alpha text."}),
            "{not json",
            json.dumps({"_id": "a", "title": "dup", "text": "again"}),
            json.dumps({"title": "no id", "text": "x"}),
            json.dumps({"_id": "e", "title": "", "text": "   "}),
            json.dumps({"_id": "b", "title": "B", "text": "Beta text."}),
        ]
        write(tmp_path / "corpus.jsonl", "\n".join(lines) + "\n")
        with pytest.raises(SourceError, match=r"corpus.jsonl:2: invalid JSON"):
            list(read_beir_corpus(tmp_path))
        errors: list[ReadError] = []
        docs = list(read_beir_corpus(tmp_path, errors=errors))
        assert [d.id for d in docs] == ["a", "b"]
        assert [(e.line, e.reason.split(":")[0]) for e in errors] == [
            (2, "invalid JSON"),
            (3, "duplicate _id 'a'"),
            (4, "missing or invalid '_id'"),
            (5, "empty text for _id 'e'"),
        ]
        assert str(errors[0]).startswith(f"{(tmp_path / 'corpus.jsonl').resolve()}:2: invalid JSON")

    def test_missing_and_empty(self, tmp_path: Path) -> None:
        with pytest.raises(SourceError, match="does not exist"):
            list(read_beir_corpus(tmp_path / "none"))
        write(tmp_path / "corpus.jsonl", "\n\n")
        with pytest.raises(SourceError, match="empty corpus"):
            list(read_beir_corpus(tmp_path))
