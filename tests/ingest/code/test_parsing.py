"""tree-sitter parsers per language, and the byte -> char offsets of what they parse."""

from __future__ import annotations

from rayweave.ingest.code import supported_languages
from rayweave.ingest.code.parsing import Source, parser, walk


class TestSupportedLanguages:
    def test_supported_languages_report(self) -> None:
        support = supported_languages()
        for lang in ("python", "javascript", "typescript", "rust", "go", "java", "solidity"):
            assert support[lang] == "tree-sitter"
        for lang in ("c", "cpp", "csharp", "kotlin", "swift", "scala", "php"):
            assert support[lang] == "tree-sitter"
        assert support["move"] == "braces"


class TestSource:
    def test_byte_offsets_map_to_characters(self) -> None:
        src = Source("aé日b")
        assert not src.ascii
        assert len(src.data) == 7
        # every byte of a multi-byte character maps to that character; the end to len(text)
        assert [src.char(i) for i in range(len(src.data) + 1)] == [0, 1, 1, 2, 2, 2, 3, 4]
        assert src.char(100) == len(src.text)

    def test_ascii_offsets_are_the_same(self) -> None:
        src = Source("abc")
        assert src.ascii
        assert [src.char(i) for i in range(4)] == [0, 1, 2, 3]

    def test_node_text_slices_the_bytes(self) -> None:
        ts_parser = parser("python")
        assert ts_parser is not None
        src = Source('s = "日本"\n')
        tree = ts_parser.parse(src.data)
        string = next(n for n in walk(tree.root_node) if n.type == "string")
        assert src.node_text(string) == '"日本"'
        assert src.text[src.char(string.start_byte) : src.char(string.end_byte)] == '"日本"'


def test_walk_is_depth_first_in_source_order() -> None:
    ts_parser = parser("python")
    assert ts_parser is not None
    tree = ts_parser.parse(b"x = f(1)\n")
    assert [n.type for n in walk(tree.root_node)] == [
        "module",
        "expression_statement",
        "assignment",
        "identifier",
        "=",
        "call",
        "identifier",
        "argument_list",
        "(",
        "integer",
        ")",
    ]
    leaf = tree.root_node.child(0).child(0).child(0)
    assert [n.type for n in walk(leaf)] == ["identifier"]


def test_parsers_are_cached_per_thread() -> None:
    assert parser("python") is parser("python")
    assert parser("rust") is not parser("python")
