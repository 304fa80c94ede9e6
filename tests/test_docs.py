"""The documentation cannot drift from the code.

Fails when a relative link in the docs points to a missing file or heading, when the docs name a
setting (`serve.retrieval.refiner`) or a `RAYWEAVE_...` variable that does not exist, when a TOML
example in the docs holds an unknown key, and when docs/configuration.md differs from what the
generator renders from the settings schema. Reads files only; starts nothing.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from rayweave.cluster.config_reference import (
    REFERENCE_PATH,
    REGENERATE,
    env_name,
    render_reference,
    setting_paths,
)
from rayweave.cluster.settings import Settings, load_settings

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted(
    [
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
        ROOT / "k8s" / "README.md",
        *(ROOT / "docs").rglob("*.md"),
    ]
)
EXAMPLES = sorted((ROOT / "docs" / "examples").glob("*.toml"))
SOURCE_DIRS = ("cluster", "ingest", "serve", "graph", "models", "bench", "k8s", "tests")

FENCE = re.compile(r"^(```|~~~)([^\n]*)\n(.*?)^\1[ \t]*$", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
CODE_SPAN = re.compile(r"`([^`]+)`")
ENV_VAR = re.compile(r"\bRAYWEAVE_[A-Z0-9_]*")
ENV_READ = re.compile(
    r"""(?:environ(?:\.get)?\s*[\[(]\s*|getenv\(\s*|envvar\s*=\s*|_ENV\s*=\s*)"""
    r"""["'](RAYWEAVE_[A-Z0-9_]+)["']"""
)
FILE_SUFFIXES = {"py", "md", "yaml", "yml", "toml", "json", "jsonl", "txt", "env", "sh"}


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _without_fences(text: str) -> str:
    """The text with fenced code blocks blanked (line count kept): links and headings in code are
    not links and headings."""
    return FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def _fences(text: str, language: str) -> Iterator[str]:
    for match in FENCE.finditer(text):
        if match.group(2).strip().lower() == language:
            yield match.group(3)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]|<[^>]+>", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for heading in HEADING.findall(_without_fences(text)):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(doc: Path) -> list[str]:
    """Relative links of `doc` whose file, or heading within a Markdown file, does not exist."""
    text = doc.read_text(encoding="utf-8")
    broken = []
    for target in LINK.findall(_without_fences(text)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
            continue  # http:, https:, mailto: ...
        path_part, _, fragment = target.partition("#")
        path = (doc.parent / path_part).resolve() if path_part else doc
        if not path.exists():
            broken.append(f"{target}: no such file")
            continue
        if (
            fragment
            and path.suffix == ".md"
            and fragment not in anchors(path.read_text(encoding="utf-8"))
        ):
            broken.append(f"{target}: no heading #{fragment} in {path.name}")
    return broken


def env_vars_read_by_code() -> set[str]:
    """`RAYWEAVE_...` variables that code reads itself, not through Settings: test switches
    (`os.environ`), CLI options (`envvar=`) and the constants that name them (`DATA_ENV = ...`)."""
    names: set[str] = set()
    for folder in SOURCE_DIRS:
        for path in (ROOT / folder).rglob("*.py"):
            names.update(ENV_READ.findall(path.read_text(encoding="utf-8")))
    return names


def unknown_env_vars(text: str, known: set[tuple[str, ...]], read: set[str]) -> list[str]:
    """Variables in `text` that name no setting or group (a trailing `__` names a group)."""
    prefix = env_name(())
    unknown = []
    for name in sorted(set(ENV_VAR.findall(text))):
        path = name[len(prefix) :].rstrip("_")
        if not path or name in read:
            continue
        if tuple(part.lower() for part in path.split("__")) not in known:
            unknown.append(name)
    return unknown


def unknown_dotted_names(text: str, known: set[tuple[str, ...]]) -> list[str]:
    """Dotted settings names in inline code (`serve.retrieval.graph_seeds`, `qdrant.url = ...`)
    that do not exist. File names (`graph.py`) and calls (`ray.init(`) are not settings names."""
    groups = "|".join(sorted({path[0] for path in known if len(path) > 1}))
    pattern = re.compile(rf"^(?:{groups})(?:\.[a-z_][a-z0-9_]*)+(?=$|[\s=,])")
    unknown = []
    for span in CODE_SPAN.findall(_without_fences(text)):
        match = pattern.match(" ".join(span.split()))
        if match is None:
            continue
        path = tuple(match.group(0).split("."))
        if path[-1] in FILE_SUFFIXES:
            continue
        if path not in known:
            unknown.append(match.group(0))
    return sorted(set(unknown))


def toml_keys(table: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for key, value in table.items():
        path = (*prefix, key)
        yield path
        if isinstance(value, Mapping):
            yield from toml_keys(value, path)


@pytest.fixture(scope="module")
def known() -> set[tuple[str, ...]]:
    return set(setting_paths())


@pytest.fixture(scope="module")
def read_by_code() -> set[str]:
    return env_vars_read_by_code()


def _doc_id(path: Path) -> str:
    return _rel(path)


@pytest.mark.parametrize("doc", DOCS, ids=_doc_id)
def test_relative_links_resolve(doc: Path) -> None:
    assert broken_links(doc) == [], f"{_rel(doc)} links to what does not exist"


@pytest.mark.parametrize("doc", DOCS, ids=_doc_id)
def test_environment_variables_name_settings(
    doc: Path, known: set[tuple[str, ...]], read_by_code: set[str]
) -> None:
    unknown = unknown_env_vars(doc.read_text(encoding="utf-8"), known, read_by_code)
    assert unknown == [], (
        f"{_rel(doc)} names RAYWEAVE_ variables that no setting in cluster/settings.py has "
        f"(see {REFERENCE_PATH})"
    )


@pytest.mark.parametrize("doc", DOCS, ids=_doc_id)
def test_dotted_settings_names_exist(doc: Path, known: set[tuple[str, ...]]) -> None:
    unknown = unknown_dotted_names(doc.read_text(encoding="utf-8"), known)
    assert unknown == [], (
        f"{_rel(doc)} names settings that cluster/settings.py does not have (see {REFERENCE_PATH})"
    )


@pytest.mark.parametrize("doc", DOCS, ids=_doc_id)
def test_toml_examples_hold_only_settings(doc: Path, known: set[tuple[str, ...]]) -> None:
    groups = {path[:i] for path in known for i in range(1, len(path))}
    leaves = known - groups  # a table under a leaf is its value (a dict setting's keys)
    unknown = [
        ".".join(path)
        for block in _fences(doc.read_text(encoding="utf-8"), "toml")
        for path in toml_keys(tomllib.loads(block))
        if path not in known and not any(path[:i] in leaves for i in range(1, len(path)))
    ]
    assert unknown == [], f"a TOML example in {_rel(doc)} holds keys that are no settings"


@pytest.mark.parametrize("example", EXAMPLES, ids=_doc_id)
def test_example_files_load(example: Path) -> None:
    settings = load_settings(example)
    assert isinstance(settings, Settings)


def test_the_production_example_is_quoted_in_the_readme() -> None:
    example = (ROOT / "docs" / "examples" / "rayweave.production.toml").read_text(encoding="utf-8")
    settings_part = example[example.index("log_level") :].strip()
    blocks = [b.strip() for b in _fences((ROOT / "README.md").read_text("utf-8"), "toml")]
    assert settings_part in blocks, (
        "README.md's TOML block differs from docs/examples/rayweave.production.toml "
        "(from `log_level` on); quote the file again"
    )


def test_configuration_reference_is_current() -> None:
    committed = (ROOT / REFERENCE_PATH).read_text(encoding="utf-8")
    assert committed == render_reference(), (
        f"{REFERENCE_PATH} is stale: regenerate it with `{REGENERATE}`"
    )


def test_readme_stays_short() -> None:
    lines = len((ROOT / "README.md").read_text(encoding="utf-8").splitlines())
    assert lines <= 300, f"README.md has {lines} lines; move detail to docs/ (at most 300)"


# The checkers themselves, on made-up text.


def test_a_missing_file_and_a_missing_heading_are_broken_links(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# Real heading\n", encoding="utf-8")
    doc = tmp_path / "doc.md"
    doc.write_text(
        "[a](there.md) [b](there.md#real-heading) [c](https://example.com/x)\n"
        "[d](gone.md) [e](there.md#no-heading)\n```\n[f](in-code.md)\n```\n",
        encoding="utf-8",
    )
    assert broken_links(doc) == [
        "gone.md: no such file",
        "there.md#no-heading: no heading #no-heading in there.md",
    ]


def test_unknown_names_are_found_and_known_ones_pass(known: set[tuple[str, ...]]) -> None:
    text = (
        '`serve.retrieval.refiner` `qdrant.url = "http://q:6333"` `graph/ppr.py` `graph.py` '
        "`serve.retrieval.no_such_knob` `models.nothing=1` RAYWEAVE_SERVE__RETRIEVAL__REFINER "
        "RAYWEAVE_INGEST__* RAYWEAVE_SERVE__NO_SUCH RAYWEAVE_* RAYWEAVE_TEST_SWITCH"
    )
    assert unknown_dotted_names(text, known) == ["models.nothing", "serve.retrieval.no_such_knob"]
    assert unknown_env_vars(text, known, {"RAYWEAVE_TEST_SWITCH"}) == ["RAYWEAVE_SERVE__NO_SUCH"]


def test_headings_slug_as_github_does() -> None:
    assert slug("Models on a GPU (one NVIDIA H200, 2026-11-26)") == (
        "models-on-a-gpu-one-nvidia-h200-2026-11-26"
    )
    assert slug("`serve.retrieval`") == "serveretrieval"
    assert anchors("# A\n## A\n```\n# not a heading\n```\n") == {"a", "a-1"}
