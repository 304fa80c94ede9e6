"""Every settings field is read by some code: a knob that nothing reads is a setting that lies.

The check walks the `Settings` model tree and, for each leaf field, looks in the product
packages' sources (`cluster/settings*.py` excluded, where the fields are declared) for an
attribute access `.name` or the name as a string literal (`getattr`, `model_copy(update=...)`,
dumps keyed by name). That is a textual test, so a name shared with something else can pass
it; it never passes a field whose name appears nowhere, which is how dead settings looked
(`serve.retrieval.graph_seeds` and `log_level` before they were wired).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from pydantic import BaseModel

from rayweave.cluster.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("cluster", "ingest", "serve", "graph", "models", "bench")
DECLARED_IN = frozenset((ROOT / "cluster").glob("settings*.py"))

# Fields that no source names because they are read dynamically. Each entry says how it is
# read; keep it short, and remove an entry once the field is read by name.
READ_DYNAMICALLY: dict[str, str] = {}


def leaf_fields(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, str]]:
    """(dotted path, field name) of every non-group field under `model`."""
    for name, info in model.model_fields.items():
        annotation = info.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            yield from leaf_fields(annotation, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", name


@cache
def product_sources() -> str:
    """The product packages' Python sources, without the settings module and the sample
    corpus (documents to ingest, whose code samples are not rayweave's)."""
    texts = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path in DECLARED_IN or "sample_corpus" in path.parts:
                continue
            texts.append(path.read_text(encoding="utf-8"))
    return "\n".join(texts)


def is_read(name: str, sources: str) -> bool:
    pattern = rf"\.{re.escape(name)}\b|[\"']{re.escape(name)}[\"']"
    return re.search(pattern, sources) is not None


def test_the_walk_finds_nested_groups() -> None:
    paths = dict(leaf_fields(Settings))
    assert paths["serve.retrieval.graph_seeds"] == "graph_seeds"
    assert paths["qdrant.url"] == "url"
    assert paths["log_level"] == "log_level"
    assert "serve.retrieval" not in paths
    assert "serve" not in paths


def test_the_search_tells_a_read_from_a_mention() -> None:
    source = 'x = settings.graph_seeds\ny = getattr(s, "log_level")\n# unread_knob in a comment\n'
    assert is_read("graph_seeds", source)
    assert is_read("log_level", source)
    assert not is_read("unread_knob", source)
    assert not is_read("seeds", source)  # `.graph_seeds` is not `.seeds`


def test_every_settings_field_is_read_by_some_code() -> None:
    sources = product_sources()
    unread = [
        path
        for path, name in leaf_fields(Settings)
        if path not in READ_DYNAMICALLY and not is_read(name, sources)
    ]
    assert unread == [], (
        "settings read by no code (wire them, remove them, or list them in READ_DYNAMICALLY "
        f"with how they are read): {', '.join(unread)}"
    )


def test_the_allowlist_names_real_fields_that_still_need_it() -> None:
    fields = dict(leaf_fields(Settings))
    sources = product_sources()
    stale = [
        path for path in READ_DYNAMICALLY if path not in fields or is_read(fields[path], sources)
    ]
    assert stale == [], f"remove from READ_DYNAMICALLY: {', '.join(stale)}"
