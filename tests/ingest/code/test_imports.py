"""The file index: what each import binds, so a unit's names resolve to their modules."""

from __future__ import annotations

from rayweave.ingest.code.imports import FileIndex, index_file
from rayweave.ingest.code.languages import SPECS
from rayweave.ingest.code.parsing import Source, parser


def _index(code: str, language: str) -> FileIndex:
    ts_parser = parser(language)
    assert ts_parser is not None
    src = Source(code)
    return index_file(ts_parser.parse(src.data).root_node, SPECS[language], src)


def test_python_imports_bind_their_local_names() -> None:
    code = (
        "import os.path\nimport numpy as np\nfrom a.b import c, d as e\nfrom f import *\n\n"
        "def top(): pass\nclass K: pass\nX = 1\n"
    )
    index = _index(code, "python")
    assert [(module, names) for module, names, _ in index.imports] == [
        ("os.path", ["os"]),
        ("numpy", ["np"]),
        ("a.b", ["c", "e"]),
        ("f", ["*"]),
    ]
    assert [offset for _, _, offset in index.imports] == [0, 15, 34, 60]
    # `*` binds no name; the alias, not the imported name, is what the code uses
    assert index.bound == {"os": "os.path", "np": "numpy", "c": "a.b", "e": "a.b"}
    assert index.top_names == {"top", "K"}


def test_javascript_default_namespace_and_exported_names() -> None:
    code = (
        'import x, { y as z } from "lib";\nimport * as ns from "./m";\n'
        "export function f() {}\nconst g = () => 1;\nlet v = 2;\n"
    )
    index = _index(code, "javascript")
    assert [module for module, _, _ in index.imports] == ["lib", "./m"]
    assert index.bound["x"] == index.bound["z"] == "lib"
    assert index.bound["ns"] == "./m"
    assert "y" not in index.bound  # the alias is what the code uses
    assert [names for _, names, _ in index.imports] == [["x", "z"], ["ns"]]
    # exported and arrow functions are top-level names; a plain variable is not
    assert index.top_names == {"f", "g"}


def test_no_imports() -> None:
    index = _index("fn main() { run(); }\n", "rust")
    assert (index.imports, index.bound, index.top_names) == ([], {}, {"main"})
