"""A code-search set built from installed libraries, in BEIR layout, for checking defaults on code
that none of the development sets hold.

CodeSearchNet's construction (Husain et al., 2019): each function or method is a document with its
docstring removed, and a query is the first sentence of a docstring, whose one relevant document
is the function it came from. cosqa-dev pairs web queries with functions that keep their
docstrings; this set is the other common shape of code search (a description against bare code),
over real libraries rather than snippets. Sampling is seeded, so a rebuild gives the same set.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import random
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rayweave.cluster.errors import InputError

DEFAULT_PACKAGES = (
    "networkx",
    "jinja2",
    "click",
    "requests",
    "httpx",
    "rich",
    "dateutil",
    "packaging",
    "pygments",
    "markdown_it",
)
"""Pure-Python libraries with documented APIs that rayweave's own install brings along."""

MIN_QUERY_WORDS = 4
MAX_QUERY_WORDS = 30
MIN_LINES = 3
"""A function shorter than this once its docstring is gone (a one-line accessor) is left out."""


@dataclass(frozen=True, slots=True)
class Function:
    code: str  # the source without its docstring, dedented
    query: str | None  # its docstring's first sentence, when that reads as a description


@dataclass(frozen=True, slots=True)
class CodeSet:
    functions: int
    documents: int
    queries: int


def first_sentence(docstring: str) -> str | None:
    """The docstring's first sentence, or None when it is too short or too long to be a query,
    or is markup rather than prose."""
    paragraph = " ".join(docstring.strip().split("\n\n")[0].split())
    match = re.match(r"(.+?[.!?])(\s|$)", paragraph)
    sentence = (match.group(1) if match else paragraph).rstrip(".")
    words = sentence.split()
    if not MIN_QUERY_WORDS <= len(words) <= MAX_QUERY_WORDS:
        return None
    if sentence.startswith((":", "..", ">>>")):
        return None
    return sentence


def functions_in(source: str) -> Iterator[Function]:
    """Every function and method of a module except dunders, docstring removed."""
    tree = ast.parse(source)
    lines = source.splitlines()
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if node.name.startswith("__") or node.end_lineno is None:
            continue
        kept = _without_docstring(lines, node)
        if len(kept) < MIN_LINES:
            continue
        docstring = ast.get_docstring(node)
        yield Function(
            code="\n".join(_dedent(line, node.col_offset) for line in kept),
            query=first_sentence(docstring) if docstring else None,
        )


def _without_docstring(lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    first = node.body[0]
    span = lines[node.lineno - 1 : node.end_lineno]
    is_docstring = (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    )
    if not is_docstring or first.end_lineno is None:
        return span
    kept = lines[node.lineno - 1 : first.lineno - 1] + lines[first.end_lineno : node.end_lineno]
    if len(node.body) == 1:  # the docstring was the whole body
        kept.append(" " * first.col_offset + "...")
    return kept


def _dedent(line: str, columns: int) -> str:
    return line[columns:] if not line[:columns].strip() else line


def package_root(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise InputError(f"package {name!r} is not installed (or is a single module)")
    return Path(next(iter(spec.submodule_search_locations)))


def library_functions(roots: Mapping[str, Path]) -> list[Function]:
    """Functions of every package's modules, tests left out, in a stable order."""
    found: list[Function] = []
    for _, root in sorted(roots.items()):
        for path in sorted(root.rglob("*.py")):
            if any(part.startswith("test") for part in path.relative_to(root).parts):
                continue
            try:
                found.extend(functions_in(path.read_text(encoding="utf-8")))
            except (SyntaxError, UnicodeDecodeError, ValueError):
                continue  # a template or a file for another Python: not library code
    return found


def build_code_set(
    roots: Mapping[str, Path],
    out: Path,
    *,
    queries: int = 300,
    max_documents: int = 3500,
    seed: int = 7,
) -> CodeSet:
    """Write `corpus.jsonl`, `queries.jsonl` and `qrels/test.tsv` under `out`. Queries whose
    sentence describes more than one function are dropped (no single right answer); every
    queried function is in the corpus, the rest is a seeded sample up to `max_documents`."""
    if queries < 1 or max_documents < queries:
        raise InputError(f"need 1 <= queries <= max documents, got {queries} and {max_documents}")
    functions = library_functions(roots)
    counts = Counter(f.query.lower() for f in functions if f.query)
    askable = [i for i, f in enumerate(functions) if f.query and counts[f.query.lower()] == 1]
    if len(askable) < queries:
        raise InputError(
            f"only {len(askable)} functions in {sorted(roots)} have a usable docstring sentence; "
            f"asked for {queries} queries"
        )
    rng = random.Random(seed)
    asked = rng.sample(askable, queries)
    rest = sorted(set(range(len(functions))) - set(asked))
    rng.shuffle(rest)
    corpus = asked + rest[: max_documents - queries]
    rng.shuffle(corpus)
    _write(out, functions, corpus, asked)
    return CodeSet(functions=len(functions), documents=len(corpus), queries=queries)


def _write(out: Path, functions: Sequence[Function], corpus: list[int], asked: list[int]) -> None:
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for i in corpus:
            f.write(json.dumps({"_id": f"fn-{i}", "title": "", "text": functions[i].code}) + "\n")
    with (out / "queries.jsonl").open("w", encoding="utf-8") as f:
        for n, i in enumerate(asked):
            f.write(json.dumps({"_id": f"q{n}", "text": functions[i].query}) + "\n")
    with (out / "qrels" / "test.tsv").open("w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        f.writelines(f"q{n}\tfn-{i}\t1\n" for n, i in enumerate(asked))
