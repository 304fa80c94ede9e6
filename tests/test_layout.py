"""The house rules that keep the packages readable, checked on the source as text.

A file past 800 lines or a class past 300 is several units; a module-level import cycle means two
modules are one unit split by accident; a package importing the CLI inverts the layering (the CLI
is the edge that composes everything). These read the source with `ast`, so they run in
milliseconds and need nothing started.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("cluster", "ingest", "serve", "graph", "models", "bench")
MAX_FILE_LINES = 800
MAX_CLASS_LINES = 300
CLI_MODULES = ("rayweave.cluster.cli",)


def _modules() -> dict[str, Path]:
    """Importable module name -> source file, for every product package."""
    modules: dict[str, Path] = {}
    for package in PACKAGES:
        base = ROOT / package
        if not base.is_dir():
            continue
        for path in base.rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if "sample_corpus" in parts:
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(("rayweave", *parts))] = path
    return modules


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import that can run, at load time or later inside a function: a lazy import hides
    a cycle from Python but not from the reader. Imports under `if TYPE_CHECKING` never run."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
        else:
            stack.extend(ast.iter_child_nodes(node))


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in _imports(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = _resolve(name, path, node)
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    for alias in node.names
                ]
            graph[name].update(target for target in targets if target in modules)
        graph[name].discard(name)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_cycle_finder_sees_a_cycle_and_a_tree() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_file_past_the_size_limit(package: str) -> None:
    too_long = {
        str(path.relative_to(ROOT)): lines
        for name, path in _modules().items()
        if name.split(".")[1] == package
        and (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_FILE_LINES
    }
    assert too_long == {}


@pytest.mark.parametrize("package", PACKAGES)
def test_no_class_past_the_size_limit(package: str) -> None:
    too_long: dict[str, int] = {}
    for name, path in _modules().items():
        if name.split(".")[1] != package:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_CLASS_LINES:
                    too_long[f"{path.relative_to(ROOT)}::{node.name}"] = lines
    assert too_long == {}


def test_no_import_cycle_between_modules() -> None:
    assert _cycles(_import_graph(_modules())) == []


def test_nothing_imports_the_cli() -> None:
    graph = _import_graph(_modules())
    importers = sorted(
        name
        for name, targets in graph.items()
        if name not in CLI_MODULES and not name.startswith(CLI_MODULES)
        for target in targets
        if target in CLI_MODULES or target.startswith(tuple(f"{m}." for m in CLI_MODULES))
    )
    assert importers == []


# Each group may import only groups of a lower rank (same rank: neither imports the other).
LAYERS: tuple[tuple[str, int], ...] = (
    ("rayweave.cluster.cli", 8),
    ("rayweave.cluster.stack_status", 7),
    ("rayweave.bench", 6),
    ("rayweave.serve", 5),
    ("rayweave.ingest", 5),
    ("rayweave.graph", 4),
    ("rayweave.models", 3),
    ("rayweave.cluster.vectors", 2),
    ("rayweave.cluster.services", 1),
    ("rayweave.cluster", 0),
)


def _layer(module: str) -> tuple[str, int]:
    return next((p, r) for p, r in LAYERS if module == p or module.startswith(f"{p}."))


def test_packages_import_only_downward() -> None:
    upward = sorted(
        f"{name} -> {target}"
        for name, targets in _import_graph(_modules()).items()
        for target in targets
        if _layer(name)[0] != _layer(target)[0] and _layer(target)[1] >= _layer(name)[1]
    )
    assert upward == []
