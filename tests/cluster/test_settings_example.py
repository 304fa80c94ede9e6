"""docs/examples/rayweave.production.toml, the README's production configuration, loads through
the real loader both ways (as ./rayweave.toml and named with --config) into what it promises:
a Qdrant server, Neo4j, BGE-M3 dense + sparse, a cross-encoder refiner and an `openai:` LLM."""

from __future__ import annotations

import os
import shutil
import tomllib
from pathlib import Path

import pytest

from rayweave.cluster.settings import Settings, load_settings
from rayweave.cluster.stack_status import resolved_rows

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "rayweave.production.toml"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for key in [k for k in os.environ if k.startswith("RAYWEAVE_")]:
        monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def check_production(s: Settings) -> None:
    assert s.qdrant.backend == "client"
    assert s.qdrant.url is not None
    assert s.qdrant.url.startswith("http")
    assert s.graph.uri is not None
    assert s.graph.uri.startswith(("bolt://", "neo4j://"))
    assert s.graph.user == "neo4j"
    m = s.models
    assert (m.dense_kind, m.sparse_kind) == ("bge-m3", "bge-m3")
    assert m.dense == "BAAI/bge-m3"
    assert m.llm is not None
    assert m.llm.startswith("openai:http")
    assert "#" in m.llm
    r = s.serve.retrieval
    assert r.refiner == "cross-encoder"
    assert r.cross_encoder
    assert r.default_profile.endswith("+refine")


def test_as_the_working_folder_rayweave_toml(clean_env: Path) -> None:
    shutil.copy(EXAMPLE, clean_env / "rayweave.toml")
    check_production(load_settings())


def test_named_with_config(clean_env: Path) -> None:
    s = load_settings(EXAMPLE)
    check_production(s)
    assert s.config_file == EXAMPLE


def test_environment_still_overrides_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAYWEAVE_GRAPH__URI", "neo4j://other:7687")
    monkeypatch.setenv("RAYWEAVE_QDRANT__API_KEY", "from-a-secret")
    s = load_settings(EXAMPLE)
    assert s.graph.uri == "neo4j://other:7687"
    assert s.qdrant.api_key is not None


def test_it_keeps_secrets_out() -> None:
    raw = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))
    assert "api_key" not in raw.get("qdrant", {})
    assert "password" not in raw.get("graph", {})
    assert "llm_api_key" not in raw.get("models", {})
    assert "api_keys" not in raw.get("serve", {})


def test_status_shows_what_it_resolves_to() -> None:
    s = load_settings(EXAMPLE)
    rows = dict(resolved_rows(s, resolve=lambda ref: f"<{ref}>"))
    assert rows["vectors"].startswith(f"Qdrant server {s.qdrant.url} ")
    assert rows["graph"].startswith(f"Bolt server {s.graph.uri} ")
    assert rows["dense"] == "bge-m3: <BAAI/bge-m3>"
    assert rows["sparse"].startswith("lexical weights of the dense BGE-M3")
    assert rows["llm"].startswith("OpenAI-compatible endpoint http")
    assert rows["refiner"] == f"cross-encoder <{s.serve.retrieval.cross_encoder}>"
