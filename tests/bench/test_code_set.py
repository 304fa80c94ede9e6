"""The library code-search set: docstrings out of the code, their first sentences as queries,
each query judged against the function it came from, readable by the eval's BEIR loader."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from rayweave.bench.code_set import (
    build_code_set,
    first_sentence,
    functions_in,
    library_functions,
    package_root,
)
from rayweave.bench.evaluation.beir import load_beir
from rayweave.cluster.errors import InputError

MODULE = textwrap.dedent(
    '''
    """Module docstring."""

    def connected_parts(graph, source):
        """Return the nodes reachable from source in an undirected graph.

        More text that is not the first paragraph.
        """
        seen = {source}
        return seen


    class Client:
        def send_request(self, request, timeout=None):
            """Send a prepared request and return its response object."""
            response = self.transport(request)
            return response

        def __repr__(self):
            """Dunders are not searched for."""
            return "Client"

        def stub(self):
            """A docstring-only body leaves a stub too short to search."""


    def undocumented(x):
        y = x + 1
        return y
    '''
)


def _package(root: Path, name: str, modules: dict[str, str]) -> Path:
    pkg = root / name
    for rel, text in modules.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    return pkg


def test_first_sentence_keeps_descriptions_and_drops_markup() -> None:
    assert (
        first_sentence("Return the shortest path.  Raises if none.") == "Return the shortest path"
    )
    assert first_sentence("Add a node\nto the graph G.\n\nMore.") == "Add a node to the graph G"
    assert first_sentence("Short.") is None
    assert first_sentence(">>> run(a, b, c, d)") is None
    assert first_sentence(" ".join(["word"] * 40)) is None


def test_functions_lose_their_docstrings_and_keep_their_code() -> None:
    found = {f.code.splitlines()[0]: f for f in functions_in(MODULE)}
    assert set(found) == {
        "def connected_parts(graph, source):",
        "def send_request(self, request, timeout=None):",
        "def undocumented(x):",
    }
    method = found["def send_request(self, request, timeout=None):"]
    assert method.query == "Send a prepared request and return its response object"
    assert '"""' not in method.code
    assert method.code.splitlines()[1] == "    response = self.transport(request)"  # dedented
    assert found["def undocumented(x):"].query is None


def test_the_set_judges_each_query_against_its_own_function(tmp_path: Path) -> None:
    many = "\n".join(
        f'def task_{i}(x):\n    """Compute the {i}th checksum of a buffer quickly."""\n'
        f"    y = x * {i}\n    return y\n"
        for i in range(20)
    )
    root = _package(
        tmp_path / "src", "lib", {"core.py": MODULE, "more.py": many, "tests/test_x.py": many}
    )
    out = tmp_path / "set"
    made = build_code_set({"lib": root}, out, queries=5, max_documents=10, seed=3)
    assert (made.functions, made.documents, made.queries) == (23, 10, 5)  # tests/ left out

    data = load_beir(out)
    assert len(data.queries) == 5
    rows = [json.loads(line) for line in (out / "corpus.jsonl").read_text().splitlines()]
    corpus = {row["_id"]: row["text"] for row in rows}
    for qid, text in data.queries.items():
        (doc_id,) = data.qrels[qid]
        code = corpus[doc_id]
        assert text not in code  # the docstring is gone from its function
        head = code.splitlines()[0]
        if head.startswith("def task_"):
            index = head.removeprefix("def task_").split("(")[0]
            assert text == f"Compute the {index}th checksum of a buffer quickly"

    again = tmp_path / "again"
    build_code_set({"lib": root}, again, queries=5, max_documents=10, seed=3)
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        assert (again / name).read_text() == (out / name).read_text()  # seeded


def test_ambiguous_sentences_are_not_asked_and_too_few_is_refused(tmp_path: Path) -> None:
    twice = 'def a(x):\n    """Return the value of x plus one."""\n    y = x\n    return y + 1\n'
    root = _package(tmp_path, "dup", {"a.py": twice, "b.py": twice})
    assert len(library_functions({"dup": root})) == 2
    with pytest.raises(InputError, match=r"only 0 functions in \['dup'\].*asked for 1"):
        build_code_set({"dup": root}, tmp_path / "out", queries=1, max_documents=2)
    with pytest.raises(InputError, match="queries <= max documents"):
        build_code_set({"dup": root}, tmp_path / "out", queries=3, max_documents=2)
    assert not (tmp_path / "out").exists()


def test_package_roots_are_found_or_named() -> None:
    assert (package_root("httpx") / "__init__.py").is_file()
    with pytest.raises(InputError, match="'no_such_package_here' is not installed"):
        package_root("no_such_package_here")
