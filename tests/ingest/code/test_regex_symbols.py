"""Symbols found by regular expressions, for code without a parser (or a slice of one)."""

from __future__ import annotations

from rayweave.ingest.code.regex_symbols import regex_symbols

CODE = (
    "use std::vector;\nimport a.b;\n#include <x.h>\nfrom p.q import r\n"
    "require_once('lib.php');\n"
    "fun go() { self.save(); if (x) { helper(1); } while (y) {} Vec::new(); }\n"
    "fun helper() {}\n"
)


def test_definitions_with_kinds_lines_and_prefix() -> None:
    sym = regex_symbols(CODE, "move", ("M",))
    assert [(d.name, d.qualified_name, d.kind, d.start_line) for d in sym.definitions] == [
        ("go", "M.go", "function", 6),
        ("helper", "M.helper", "function", 7),
    ]
    assert sym.language == "move"


def test_a_move_module_named_by_its_address() -> None:
    code = "module 0x1::coin {\n    public fun value(c: &Coin): u64 { 0 }\n}\n"
    sym = regex_symbols(code, "move", ("coin.move",))
    assert [(d.name, d.qualified_name, d.kind) for d in sym.definitions] == [
        ("coin", "coin.move.0x1::coin", "module"),
        ("value", "coin.move.value", "function"),
    ]


def test_imports_of_every_form() -> None:
    assert regex_symbols(CODE, "move").imports == ("std::vector", "a.b", "x.h", "p.q", "lib.php")


def test_calls_skip_keywords_and_definitions_and_self() -> None:
    sym = regex_symbols(CODE, "move")
    assert "save" in sym.calls  # `self.` dropped
    assert {"helper", "Vec::new"} <= set(sym.calls)
    assert not {"if", "while", "go", "fun"} & set(sym.calls)
    # references are the callees' last names, less what the code defines itself
    assert "new" in sym.references
    assert "save" in sym.references
    assert "helper" not in sym.references


def test_plain_text_has_no_symbols() -> None:
    sym = regex_symbols("just some words, no code here.", "text")
    assert (sym.definitions, sym.imports, sym.calls, sym.references) == ((), (), (), ())
