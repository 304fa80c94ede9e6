"""Domain types: stable ids and hashes, enum coercion, row round trips, invariants."""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import uuid
from typing import Any

import numpy as np
import pytest

from rayweave.cluster.types import (
    Chunk,
    ContentType,
    Document,
    Entity,
    GraphPath,
    Hit,
    Level,
    Query,
    SparseVector,
    content_hash,
    point_uuid,
    stable_id,
)


class TestIds:
    def test_stable_id_is_deterministic_and_short_hex(self) -> None:
        a = stable_id("file", "/x/y.md", 3)
        assert a == stable_id("file", "/x/y.md", 3)
        assert len(a) == 24
        int(a, 16)  # hex
        assert a == hashlib.sha256(b"file\x1f/x/y.md\x1f3").hexdigest()[:24]

    def test_stable_id_separates_parts(self) -> None:
        assert stable_id("ab", "c") != stable_id("a", "bc")
        assert stable_id("abc") != stable_id("ab", "c")
        assert stable_id(1) == stable_id("1")  # parts are stringified

    def test_point_uuid_is_a_stable_uuid5(self) -> None:
        pid = point_uuid("chunk-1")
        assert pid == point_uuid("chunk-1")
        assert pid != point_uuid("chunk-2")
        parsed = uuid.UUID(pid)
        assert parsed.version == 5
        assert str(parsed) == pid

    def test_chunk_point_id_is_its_point_uuid(self) -> None:
        c = Chunk(id="c1", doc_id="d", level=Level.SECTION, text="t")
        assert c.point_id == point_uuid("c1")

    def test_content_hash_of_str_and_bytes_agree(self) -> None:
        assert content_hash("héllo") == content_hash("héllo".encode())
        assert content_hash(b"") == hashlib.sha256(b"").hexdigest()
        assert len(content_hash("x")) == 64

    def test_content_hash_accepts_lone_surrogates(self) -> None:
        # Text decoded with surrogateescape can hold lone surrogates; hashing must not raise.
        broken = "a\udcff"
        assert content_hash(broken) == content_hash(broken)
        assert content_hash(broken) != content_hash("a")


class TestEnumCoercion:
    """Rows and JSON carry enum values as strings; construction turns them back into enums."""

    def test_chunk_coerces_strings(self) -> None:
        raw: dict[str, Any] = {"level": "section", "content_type": "code"}
        c = Chunk(id="c", doc_id="d", text="t", **raw)
        assert c.level is Level.SECTION
        assert c.content_type is ContentType.CODE

    def test_document_coerces_content_type(self) -> None:
        raw: dict[str, Any] = {"content_type": "markdown"}
        d = Document(id="d", source="s", title="", text="x", **raw)
        assert d.content_type is ContentType.MARKDOWN

    def test_hit_coerces_level(self) -> None:
        raw: dict[str, Any] = {"level": "document"}
        assert Hit(id="h", doc_id="d", text="t", score=1.0, **raw).level is Level.DOCUMENT
        assert Hit(id="h", doc_id="d", text="t", score=1.0).level is Level.PROPOSITION

    @pytest.mark.parametrize(
        ("cls", "raw"),
        [
            (Chunk, {"id": "c", "doc_id": "d", "level": "chapter", "text": "t"}),
            (
                Chunk,
                {"id": "c", "doc_id": "d", "level": "section", "text": "t", "content_type": "pdf"},
            ),
            (Document, {"id": "d", "source": "s", "title": "", "content_type": "pdf", "text": "x"}),
            (Hit, {"id": "h", "doc_id": "d", "text": "t", "score": 0.0, "level": "chapter"}),
        ],
    )
    def test_unknown_enum_values_are_rejected_by_value(
        self, cls: type[Any], raw: dict[str, Any]
    ) -> None:
        with pytest.raises(ValueError, match=r"'(chapter|pdf)' is not a valid"):
            cls(**raw)


class TestInvariants:
    def test_values_are_frozen(self) -> None:
        c = Chunk(id="c", doc_id="d", level=Level.SECTION, text="t")
        with pytest.raises(dataclasses.FrozenInstanceError):
            c.text = "u"  # type: ignore[misc]

    def test_keyword_only(self) -> None:
        with pytest.raises(TypeError):
            Entity("e", "name")  # type: ignore[call-arg]

    def test_sparse_vector_lengths_must_match(self) -> None:
        with pytest.raises(ValueError, match="differ in length"):
            SparseVector(indices=(1, 2), values=(1.0,))
        assert SparseVector(indices=(), values=()).indices == ()

    def test_mutable_defaults_are_not_shared(self) -> None:
        a = Document(id="a", source="s", title="", content_type=ContentType.TEXT, text="x")
        b = Document(id="b", source="s", title="", content_type=ContentType.TEXT, text="x")
        a.metadata["k"] = 1
        assert b.metadata == {}
        assert Query(text="q").filters is not Query(text="r").filters


def _section(text: str, title: str = "", path: tuple[str, ...] = ()) -> Chunk:
    return Chunk(id="c", doc_id="d", level=Level.SECTION, text=text, title=title, section_path=path)


class TestEmbedText:
    def test_heading_prefixes_a_short_chunk(self) -> None:
        chunk = _section("Body.", "Guide", ("Install", "Linux"))
        assert chunk.embed_text() == "Guide > Install > Linux\nBody."

    def test_empty_parts_are_skipped(self) -> None:
        assert _section("Body.", "", ("", "Linux")).embed_text() == "Linux\nBody."

    def test_no_heading_or_already_headed_text_is_unchanged(self) -> None:
        assert _section("Body.").embed_text() == "Body."
        assert _section("Guide\nBody.", "Guide").embed_text() == "Guide\nBody."


class TestRows:
    def _chunk(self) -> Chunk:
        return Chunk(
            id="c",
            doc_id="d",
            level=Level.PROPOSITION,
            text="t",
            children_ids=("x", "y"),
            section_path=("A",),
            content_type=ContentType.CODE,
            keywords=("k",),
        )

    def test_to_row_flattens_tuples_and_enums(self) -> None:
        row = self._chunk().to_row()
        assert row["children_ids"] == ["x", "y"]
        assert row["level"] == "proposition"
        assert type(row["level"]) is str
        assert row["content_type"] == "code"
        assert set(row) == {f.name for f in dataclasses.fields(Chunk)}

    def test_round_trip(self) -> None:
        chunk = self._chunk()
        assert Chunk.from_row(chunk.to_row()) == chunk

    def test_from_row_accepts_numpy_arrays_and_none(self) -> None:
        row = self._chunk().to_row()
        row["children_ids"] = np.array(["x", "y"])
        row["keywords"] = None
        back = Chunk.from_row(row)
        assert back.children_ids == ("x", "y")
        assert type(back.children_ids) is tuple
        assert back.keywords == ()

    def test_from_row_ignores_unknown_keys_and_uses_defaults(self) -> None:
        back = Chunk.from_row({"id": "c", "doc_id": "d", "level": "section", "text": "t", "x": 1})
        assert back.level is Level.SECTION
        assert back.children_ids == ()
        assert back.position == 0

    def test_from_row_missing_required_field_raises(self) -> None:
        with pytest.raises(TypeError, match="doc_id"):
            Chunk.from_row({"id": "c", "level": "section", "text": "t"})

    def test_hit_paths_round_trip_from_dicts(self) -> None:
        path = GraphPath(nodes=("a", "b"), relationships=("MENTIONS",), score=0.5)
        hit = Hit(id="h", doc_id="d", text="t", score=1.0, paths=(path,), retrievers=("graph",))
        row = hit.to_row()
        row["paths"] = [p.to_row() for p in hit.paths]  # as a JSON payload carries them
        back = Hit.from_row(row)
        assert back == hit
        assert isinstance(back.paths[0], GraphPath)
        assert back.paths[0].nodes == ("a", "b")
        assert Hit.from_row(hit.to_row()) == hit  # objects pass through as they are

    def test_sparse_vector_round_trip_from_numpy(self) -> None:
        row = {"indices": np.array([3, 9]), "values": np.array([0.5, 1.5])}
        back = SparseVector.from_row(row)
        assert back == SparseVector(indices=(3, 9), values=(0.5, 1.5))
        with pytest.raises(ValueError, match="differ in length"):
            SparseVector.from_row({"indices": [1], "values": []})


class TestHitEvolve:
    def test_changes_only_what_it_names_and_leaves_the_hit_alone(self) -> None:
        hit = Hit(id="h", doc_id="d", text="t", score=1.0, level=Level.SECTION, metadata={"a": 1})
        moved = hit.evolve(score=0.5, metadata={"b": 2})
        assert moved == dataclasses.replace(hit, score=0.5, metadata={"b": 2})
        assert (hit.score, hit.metadata) == (1.0, {"a": 1})
        assert moved.level is Level.SECTION

    def test_every_field_can_change_and_a_new_field_cannot_be_forgotten(self) -> None:
        hit = Hit(id="h", doc_id="d", text="t", score=1.0)
        names = [f.name for f in dataclasses.fields(Hit)]
        assert list(inspect.signature(Hit.evolve).parameters)[1:] == names
        other = Hit(
            id="i",
            doc_id="e",
            text="u",
            score=2.0,
            level=Level.DOCUMENT,
            source="s",
            title="T",
            section_path=("a",),
            retrievers=("dense",),
            paths=(GraphPath(nodes=("a", "b"), relationships=("R",)),),
            duplicates=("x",),
            metadata={"k": 1},
        )
        for name in names:
            moved = hit.evolve(**{name: getattr(other, name)})
            assert moved == dataclasses.replace(hit, **{name: getattr(other, name)}), name

    def test_a_field_it_does_not_have_is_refused(self) -> None:
        hit = Hit(id="h", doc_id="d", text="t", score=1.0)
        with pytest.raises(TypeError, match="scroe"):
            hit.evolve(scroe=0.5)
