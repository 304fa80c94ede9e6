"""The brace scanner: boundaries and definitions of C-like code without a grammar."""

from __future__ import annotations

from rayweave.ingest.code.brace_scanner import (
    brace_body,
    brace_core_start,
    brace_definitions,
    brace_doc,
    brace_items,
    brace_scan,
    brace_signature,
)

MOVE = """// header
module 0x1::m {
    /// Mint coins.
    public fun mint(s: &signer) { let x = "}{"; transfer(s); }
    struct Coin has key { value: u64 }
    const MAX: u64 = 10;
}
"""


class TestBraceScan:
    def test_statements_end_at_semicolons_and_closing_braces(self) -> None:
        code = "a = 1; fn f() { if x { y(); } } b;"
        spans = brace_scan(code, 0, len(code))
        assert [code[a:b].strip() for a, b in spans] == ["a = 1;", "fn f() { if x { y(); } }", "b;"]

    def test_braces_in_comments_and_strings_do_not_count(self) -> None:
        code = 'fn f() { // }\n  /* { */ let s = "}\\"{"; }\nfn g() {}'
        spans = brace_scan(code, 0, len(code))
        assert [code[a:b].strip() for a, b in spans] == [code[: code.index("\nfn g")], "fn g() {}"]

    def test_unclosed_code_ends_in_one_last_span(self) -> None:
        code = "x; fn broken() { never closed"
        spans = brace_scan(code, 0, len(code))
        assert spans == [(0, 2), (2, len(code))]
        # a stray closer ends a span and never takes the depth below 0: `;` still ends one
        assert brace_scan("}} ;", 0, 4) == [(0, 1), (1, 2), (2, 4)]


class TestBraceItems:
    def test_kinds_and_names_of_one_level(self) -> None:
        items = brace_items(MOVE, 0, len(MOVE))
        assert [(it.kind, it.name) for it in items] == [("container", "m")]
        # the leading comment belongs to the module
        assert MOVE[items[0].start : items[0].end].startswith("// header\nmodule 0x1::m {")
        body = brace_body(MOVE, items[0])
        assert body is not None
        inner = brace_items(MOVE, *body)
        assert [(it.kind, it.name) for it in inner] == [
            ("function", "mint"),
            ("definition", "Coin"),
            ("other", ""),
        ]
        assert MOVE[inner[0].start : inner[0].end].startswith("/// Mint coins.\n")
        assert MOVE[inner[2].start : inner[2].end] == "const MAX: u64 = 10;"

    def test_head_details_of_an_item(self) -> None:
        body = brace_body(MOVE, brace_items(MOVE, 0, len(MOVE))[0])
        assert body is not None
        mint, coin, const = brace_items(MOVE, *body)
        assert brace_signature(MOVE, mint) == "public fun mint(s: &signer)"
        assert brace_doc(MOVE, mint) == "Mint coins."
        assert MOVE[brace_core_start(MOVE, mint) :].startswith("public fun mint")
        assert brace_signature(MOVE, coin) == "struct Coin has key"
        assert brace_doc(MOVE, coin) == ""
        assert brace_body(MOVE, const) is None

    def test_a_container_word_without_a_body_is_a_definition(self) -> None:
        code = "class Forward;\nfunction f() { g(); }\n"
        items = brace_items(code, 0, len(code))
        assert [(it.kind, it.name) for it in items] == [
            ("definition", "Forward"),
            ("function", "f"),
        ]


class TestBraceDefinitions:
    def test_qualified_by_their_containers_with_kinds_and_lines(self) -> None:
        defs = brace_definitions(MOVE)
        assert [(d.name, d.qualified_name, d.kind) for d in defs] == [
            ("m", "0x1::m", "module"),
            ("mint", "0x1::m.mint", "function"),
            ("Coin", "0x1::m.Coin", "struct"),
        ]
        assert [(d.start_line, d.end_line) for d in defs] == [(1, 7), (3, 4), (5, 5)]

    def test_nested_containers(self) -> None:
        code = "namespace a {\n  class B {\n    fn c() {}\n  }\n}\n"
        assert [d.qualified_name for d in brace_definitions(code)] == ["a", "a.B", "a.B.c"]

    def test_code_without_definitions(self) -> None:
        assert brace_definitions("x = 1; y = f(x);") == []
        assert brace_definitions("") == []
