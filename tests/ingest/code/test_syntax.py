"""Reading syntax nodes through a language's table: roles, names and kinds."""

from __future__ import annotations

from typing import Any

from rayweave.ingest.code.languages import SPECS
from rayweave.ingest.code.parsing import Source, parser
from rayweave.ingest.code.syntax import classify, expand, kind_of, name_of, unwrap


def _top(code: str, language: str) -> tuple[list[Any], Source]:
    """The top-level nodes of `code`, transparent wrappers expanded and others unwrapped."""
    ts_parser = parser(language)
    assert ts_parser is not None
    src = Source(code)
    spec = SPECS[language]
    nodes = expand(ts_parser.parse(src.data).root_node.named_children, spec)
    return [unwrap(n, spec) for n in nodes], src


def _roles(code: str, language: str) -> list[tuple[str, str]]:
    nodes, src = _top(code, language)
    spec = SPECS[language]
    return [(classify(n, spec), name_of(n, spec, src)) for n in nodes]


def test_python_decorators_are_unwrapped() -> None:
    code = "@dec\ndef f(): pass\nclass C:\n    pass\nx = 1\nasync def g(): pass\n"
    assert _roles(code, "python") == [
        ("function", "f"),
        ("container", "C"),
        ("other", ""),
        ("function", "g"),
    ]


def test_c_names_through_declarators_and_guards() -> None:
    code = (
        "#ifndef G\n#define G\nint *f(void) { return 0; }\n"
        "typedef struct { int a; } pt_t;\nstruct s *p;\nstruct s { int a; };\n#endif\n"
    )
    roles = [r for r in _roles(code, "c") if r[0] != "other"]
    # inside the include guard; `struct s *p` only names a type, `struct s {...}` defines it
    assert roles == [("function", "f"), ("definition", "pt_t"), ("definition", "s")]


def test_javascript_arrow_functions_are_functions() -> None:
    code = "export const f = () => 1;\nconst v = 2;\nexport class A {}\n"
    assert _roles(code, "javascript") == [("function", "f"), ("other", "v"), ("container", "A")]


def test_rust_impl_is_named_by_its_type() -> None:
    code = "impl Display for Point { fn fmt(&self) {} }\nimpl Point {}\n"
    assert _roles(code, "rust") == [("container", "Point"), ("container", "Point")]


def test_swift_keywords_give_the_kind() -> None:
    code = "struct S {}\nclass C {}\nprotocol P {}\nenum E {}\nextension S {}\n"
    nodes, _src = _top(code, "swift")
    spec = SPECS["swift"]
    assert [kind_of(n, spec, "?") for n in nodes] == [
        "struct",
        "class",
        "protocol",
        "enum",
        "extension",
    ]


def test_kotlin_modifiers_and_keywords_give_the_kind() -> None:
    code = "enum class Color { RED }\ninterface Shape {}\ndata class D(val x: Int)\n@Ann class A\n"
    nodes, _src = _top(code, "kotlin")
    assert [kind_of(n, SPECS["kotlin"], "?") for n in nodes] == [
        "enum",
        "interface",
        "class",
        "class",
    ]
