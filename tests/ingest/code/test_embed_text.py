"""`code_embed_text`: a unit as words for dense encoders; the stored text stays raw."""

from __future__ import annotations

from rayweave.ingest.code import CodeUnit, code_embed_text, split_code

from ..code_samples import COUNT


class TestEmbedText:
    def test_code_embed_text_reads_as_words(self) -> None:
        code = (
            'def writeBoolean(self, n):\n    """Writes a Boolean to the stream."""\n'
            "    self.stream.write(n)\n"
        )
        unit = split_code(code, "python", count_tokens=COUNT, max_tokens=200)[0]
        text = code_embed_text(unit)
        assert text.startswith("python function write Boolean\nWrites a Boolean to the stream.")
        assert "def write Boolean(self, n)" in text
        assert unit.text == code.strip()  # stored text stays raw

    def test_a_part_carries_its_parents_doc_and_signature_as_words(self) -> None:
        unit = CodeUnit(
            kind="part",
            name="putItem",
            path=("Store", "putItem"),
            language="python",
            start=0,
            end=20,
            text="self.items.append(x)",
            context="def putItem(self, x):",
            docstring="Adds   one\n item.",
        )
        assert code_embed_text(unit, title="store.py") == (
            "python part of put Item in Store (store.py)\n"
            "Adds one item.\n"
            "def put Item(self, x):\n"
            "self.items.append(x)"
        )

    def test_long_docstrings_are_cut(self) -> None:
        unit = CodeUnit(
            kind="function",
            name="f",
            path=("f",),
            language="python",
            start=0,
            end=5,
            text="f = 1",
            docstring="word " * 200,
        )
        assert code_embed_text(unit).split("\n")[1] == ("word " * 200)[:400]

    def test_raw_code_is_parsed_for_the_header(self) -> None:
        code = "def loadConfig(path):\n    return readFile(path)\n"
        assert code_embed_text(code, "py", title="app.py") == (
            "python function load Config (app.py)\n"
            "def load Config(path):\n    return read File(path)\n"
        )

    def test_raw_code_with_several_or_no_definitions_is_a_block(self) -> None:
        two = "def a():\n    pass\n\n\ndef b():\n    pass\n"
        assert code_embed_text(two, "python") == "python\n" + two
        assert code_embed_text("x = 1\n", "python") == "python\nx = 1\n"
        assert code_embed_text("some notes", None) == "some notes"
