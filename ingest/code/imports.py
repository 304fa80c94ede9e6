"""What a parsed file imports, and the names each import binds, one reader per grammar."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rayweave.ingest.code.languages import LanguageSpec
from rayweave.ingest.code.parsing import Source, walk
from rayweave.ingest.code.syntax import classify, expand, name_of, unwrap

# (module as written, names it binds in the file) for one import node
Imported = list[tuple[str, list[str]]]
ImportReader = Callable[[Any, Source], Imported]


def _python(node: Any, src: Source) -> Imported:
    if node.type == "import_from_statement":
        mod = node.child_by_field_name("module_name")
        module = src.node_text(mod) if mod is not None else ""
        names = []
        for child in node.children_by_field_name("name"):
            alias = child.child_by_field_name("alias")
            base = child.child_by_field_name("name") if child.type == "aliased_import" else child
            bound = (
                src.node_text(alias) if alias is not None else src.node_text(base).split(".")[-1]
            )
            names.append(bound)
        if "*" in src.node_text(node).split("import", 1)[-1]:
            names.append("*")
        return [(module, names)]
    out = []
    for child in node.children_by_field_name("name"):
        if child.type == "aliased_import":
            base = child.child_by_field_name("name")
            alias = child.child_by_field_name("alias")
            module = src.node_text(base) if base is not None else ""
            out.append(
                (module, [src.node_text(alias) if alias is not None else module.split(".")[0]])
            )
        else:
            module = src.node_text(child)
            out.append((module, [module.split(".")[0]]))
    return out


def _javascript(node: Any, src: Source) -> Imported:
    """`import x, { y as z } from "m"` binds x and z (not y); `import * as ns` binds ns."""
    source = node.child_by_field_name("source")
    module = src.node_text(source).strip("'\"`") if source is not None else ""
    names = []
    for child in walk(node):
        if child.type == "import_specifier":
            bound = child.child_by_field_name("alias") or child.child_by_field_name("name")
            if bound is not None:
                names.append(src.node_text(bound))
        elif (
            child.type == "identifier"
            and child.parent is not None
            and child.parent.type in ("import_clause", "namespace_import")
        ):
            names.append(src.node_text(child))
    return [(module, names)]


def _rust(node: Any, src: Source) -> Imported:
    arg = node.child_by_field_name("argument")
    text = src.node_text(node)
    body = src.node_text(arg) if arg is not None else text.removeprefix("use").strip(" ;")
    body = body.replace(" ", "")
    if "{" in body:
        prefix, rest = body.split("{", 1)
        items = [x for x in rest.rstrip("}").split(",") if x]
        return [(prefix.rstrip(":"), [i.split("::")[-1].split("as")[-1] for i in items])]
    last = body.split("::")[-1]
    return [(body, [last.split("as")[-1]])]


def _go(node: Any, src: Source) -> Imported:
    out = []
    for child in walk(node):
        if child.type == "import_spec":
            path = child.child_by_field_name("path")
            name = child.child_by_field_name("name")
            module = src.node_text(path).strip('"`') if path is not None else ""
            bound = src.node_text(name) if name is not None else module.split("/")[-1]
            out.append((module, [bound]))
    return out


def _java(node: Any, src: Source) -> Imported:
    text = src.node_text(node)
    body = text.removeprefix("import").strip(" ;").removeprefix("static ").strip()
    return [(body.removesuffix(".*"), [body.split(".")[-1]])]


def _solidity(node: Any, src: Source) -> Imported:
    source = node.child_by_field_name("source")
    module = src.node_text(source).strip("'\"") if source is not None else ""
    names = [src.node_text(c) for c in node.children_by_field_name("import_name")]
    return [(module, names or [module.rsplit("/", 1)[-1].removesuffix(".sol")])]


def _c(node: Any, src: Source) -> Imported:
    path = node.child_by_field_name("path")
    return [(src.node_text(path).strip('<>"'), [])] if path is not None else []


def _csharp(node: Any, src: Source) -> Imported:
    alias = node.child_by_field_name("name")
    named = [c for c in node.named_children if c.type in ("qualified_name", "identifier")]
    target = [c for c in named if alias is None or c.id != alias.id]
    if not target:
        return []
    module = src.node_text(target[-1])
    # `using System.IO;` binds no name; `using IO = System.IO;` binds the alias.
    return [(module, [src.node_text(alias)] if alias is not None else [])]


def _kotlin(node: Any, src: Source) -> Imported:
    path = next((c for c in node.named_children if c.type == "qualified_identifier"), None)
    if path is None:
        return []
    module = src.node_text(path)
    alias = [c for c in node.named_children if c.type == "identifier"]
    wildcard = src.node_text(node).rstrip().endswith("*")
    bound = src.node_text(alias[-1]) if alias else module.split(".")[-1]
    return [(module, ["*"] if wildcard else [bound])]


def _swift(node: Any, src: Source) -> Imported:
    path = next((c for c in node.named_children if c.type == "identifier"), None)
    module = src.node_text(path) if path is not None else ""
    return [(module, [module.split(".")[-1]])] if module else []


def _scala(node: Any, src: Source) -> Imported:
    module = ".".join(src.node_text(c) for c in node.children_by_field_name("path") if c.is_named)
    names = []
    for child in node.named_children:
        if child.type == "namespace_selectors":
            for sel in child.named_children:
                alias = sel.child_by_field_name("alias")
                base = sel.child_by_field_name("name")
                names.append(src.node_text(alias or base or sel))
        elif child.type == "namespace_wildcard":
            names.append("*")
        elif child.type == "as_renamed_identifier":
            alias = child.child_by_field_name("alias")
            names.append(src.node_text(alias) if alias is not None else "")
    return [(module, names or [module.split(".")[-1]])] if module else []


def _php(node: Any, src: Source) -> Imported:
    out = []
    for clause in node.named_children:
        if clause.type != "namespace_use_clause":
            continue
        alias = clause.child_by_field_name("alias")
        path = next(
            (c for c in clause.named_children if c.type in ("qualified_name", "name")), None
        )
        if path is None:
            continue
        module = src.node_text(path).lstrip("\\")
        bound = src.node_text(alias) if alias is not None else module.split("\\")[-1]
        out.append((module, [bound]))
    return out


_READERS: dict[str, ImportReader] = {
    "python": _python,
    "javascript": _javascript,
    "typescript": _javascript,
    "tsx": _javascript,
    "rust": _rust,
    "go": _go,
    "java": _java,
    "solidity": _solidity,
    "c": _c,
    "cpp": _c,
    "csharp": _csharp,
    "kotlin": _kotlin,
    "swift": _swift,
    "scala": _scala,
    "php": _php,
}


def import_paths(node: Any, spec: LanguageSpec, src: Source) -> Imported:
    """(module, bound names) for one import node."""
    reader = _READERS.get(spec.name)
    return reader(node, src) if reader is not None else []


@dataclass(slots=True)
class FileIndex:
    """What a file imports, so that a unit's names resolve to the modules they come from."""

    imports: list[tuple[str, list[str], int]]  # module, bound names, byte offset of the import
    bound: dict[str, str]  # name -> module
    top_names: set[str]


def index_file(root: Any, spec: LanguageSpec, src: Source) -> FileIndex:
    """The file's imports and the names they bind, and the names its top level defines."""
    imports: list[tuple[str, list[str], int]] = []
    bound: dict[str, str] = {}
    top: set[str] = set()
    for node in walk(root):
        if node.type in spec.imports:
            for module, names in import_paths(node, spec, src):
                imports.append((module, names, node.start_byte))
                for name in names:
                    if name and name != "*":
                        bound.setdefault(name, module)
    for child in expand(root.named_children, spec):
        inner = unwrap(child, spec)
        if classify(inner, spec) != "other":
            name = name_of(inner, spec, src)
            if name:
                top.add(name)
    return FileIndex(imports, bound, top)
