"""Layout of parsed code: one level's nodes to items, definitions with their own comments."""

from __future__ import annotations

from typing import Any

from rayweave.ingest.code.imports import index_file
from rayweave.ingest.code.languages import SPECS
from rayweave.ingest.code.parsing import Source, parser
from rayweave.ingest.code.tree_layout import items_from_nodes, layout
from rayweave.ingest.code.unit_builder import Ctx

from ..code_samples import COUNT, check_tiling


def _parsed(code: str, language: str, max_tokens: int = 200) -> tuple[Ctx, Any]:
    ts_parser = parser(language)
    assert ts_parser is not None
    spec = SPECS[language]
    src = Source(code)
    root = ts_parser.parse(src.data).root_node
    return Ctx(src, language, spec, index_file(root, spec, src), COUNT, max_tokens, 0), root


RUST = """use std::io;
const A: u32 = 1;
static B: u32 = 2;

// detached note

/// Adds.
#[inline]
fn add(a: u32) -> u32 { a + A }

struct P { x: u32 }
"""


def test_items_keep_adjacent_comments_and_attributes_with_their_definition() -> None:
    ctx, root = _parsed(RUST, "rust")
    items = items_from_nodes(root.children, ctx, 0, len(RUST))
    assert [(it.kind, it.name, RUST[it.start : it.end]) for it in items] == [
        ("other", "", "use std::io;"),
        ("definition", "A", "const A: u32 = 1;"),
        ("definition", "B", "static B: u32 = 2;"),
        ("other", "", "// detached note"),  # a blank line away: not the function's
        ("function", "add", "/// Adds.\n#[inline]\nfn add(a: u32) -> u32 { a + A }"),
        ("definition", "P", "struct P { x: u32 }"),
    ]


def test_a_doc_comment_too_long_stands_apart_but_stays_the_docstring() -> None:
    code = "/// " + "Very long words here. " * 40 + "\nfn add(a: u32) -> u32 { a + 1 }\n"
    ctx, root = _parsed(code, "rust", max_tokens=30)
    units = layout(items_from_nodes(root.children, ctx, 0, len(code)), ctx, (), "")
    check_tiling(code, units)
    assert [(u.kind, u.name) for u in units] == [("block", ""), ("function", "add")]
    function = units[1]
    assert function.text == "fn add(a: u32) -> u32 { a + 1 }"  # never cut for the comment
    assert function.docstring.startswith("Very long words here. Very long words here.")
    assert function.signature == "fn add(a: u32) -> u32"


def test_a_class_over_the_limit_gives_its_members_the_class_signature() -> None:
    methods = "".join(f"    def m{i}(self):\n        return self.v + {i}\n\n" for i in range(6))
    code = f"class Big(Base):\n    v = 1\n\n{methods}"
    ctx, root = _parsed(code, "python", max_tokens=30)
    units = layout(items_from_nodes(root.children, ctx, 0, len(code)), ctx, (), "")
    check_tiling(code, units)
    functions = [u for u in units if u.kind == "function"]
    assert [u.name for u in functions] == [f"m{i}" for i in range(6)]
    assert all(u.path == ("Big", u.name) for u in functions)
    assert all(u.context == "class Big(Base):" for u in functions)
    assert [u.defined for u in functions] == [(f"Big.m{i}",) for i in range(6)]
