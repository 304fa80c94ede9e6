"""Symbols of parsed code: definitions qualified, callees as written, names resolved to imports."""

from __future__ import annotations

from typing import Any

from rayweave.ingest.code.imports import index_file
from rayweave.ingest.code.languages import SPECS
from rayweave.ingest.code.parsing import Source, parser
from rayweave.ingest.code.symbols import Uses, collect

PYTHON = """import json
from util import Thing as T
MAX_SIZE = 3

class Box(Base):
    def put(self, item):
        self.items.append(item)
        obj.method().chain().final()
        if print(item):
            return T(json.loads(MAX_SIZE))

def helper():
    return Box().put(None)
"""


def _collect(
    code: str, language: str, pick: slice = slice(None), prefix: tuple[str, ...] = ()
) -> Uses:
    ts_parser = parser(language)
    assert ts_parser is not None
    spec = SPECS[language]
    src = Source(code)
    root: Any = ts_parser.parse(src.data).root_node
    index = index_file(root, spec, src)
    return collect(root.named_children[pick], spec, src, index, prefix)


def test_definitions_are_qualified_and_methods_named_so() -> None:
    uses = _collect(PYTHON, "python", prefix=("pkg",))
    assert [(d.qualified_name, d.kind, d.start_line, d.end_line) for d in uses.definitions] == [
        ("pkg.Box", "class", 5, 10),
        ("pkg.Box.put", "method", 6, 10),
        ("pkg.helper", "function", 12, 13),
    ]


def test_callees_as_written_without_self_keywords_or_chains() -> None:
    calls = _collect(PYTHON, "python").calls
    assert "items.append" in calls  # `self.` dropped
    assert {"obj.method", "chain", "final"} <= set(calls)  # chained calls: the last segment
    assert {"T", "json.loads", "Box", "put"} <= set(calls)
    assert "print" not in calls


def test_names_resolve_to_the_imports_they_come_from() -> None:
    uses = _collect(PYTHON, "python", slice(3, 4))  # the class alone, without the imports
    assert uses.dependencies == ["util", "json"]
    # imported names and module-level constants are references; own definitions are not
    assert {"T", "json", "MAX_SIZE", "append"} <= set(uses.references)
    assert not {"Box", "put"} & set(uses.references)
    helper = _collect(PYTHON, "python", slice(4, 5))
    assert helper.dependencies == []
    assert "Box" in helper.references  # a top-level name of the file


def test_imports_inside_the_nodes_are_dependencies() -> None:
    uses = _collect(PYTHON, "python", slice(0, 2))
    assert uses.dependencies == ["json", "util"]
    assert uses.calls == []


def test_callee_normalisation_across_grammars() -> None:
    rust = _collect('fn f() { let v = Vec::<u8>::new(); println!("x"); g(); }', "rust")
    assert rust.calls == ["Vec::new", "println", "g"]  # generic args and `!` dropped
    php = _collect("<?php $this->save(); $a?->b(); new Foo();", "php")
    assert php.calls == ["save", "a.b", "Foo"]
    csharp = _collect(
        "class A { void m() { var d = new Dictionary<string, int>(); foo.bar(); } }", "csharp"
    )
    assert csharp.calls == ["Dictionary", "foo.bar"]
