"""The extractor factory's pure parts: cached extraction and the `file:` match note."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from rayweave.cluster.settings import Settings
from rayweave.graph.extraction import Extraction, Statement
from rayweave.graph.extractor_factory import (
    build_graph_extractor,
    extract_cached,
    extractor_identity,
    file_match_note,
)
from rayweave.graph.openie_file import FileExtractor

FACT = Statement(subject="Ada Lovelace", predicate="wrote", object="the first program")


class CountingExtractor:
    """Answers one fact per text, fails texts containing 'bad', and counts what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        self.asked.extend(texts)
        return [
            Extraction(error="malformed answer") if "bad" in t else Extraction(statements=(FACT,))
            for t in texts
        ]


class DictCache:
    """The store's cache contract over a dict (the store's own is tested against ArcadeDB)."""

    def __init__(self) -> None:
        self.rows: dict[str, str] = {}

    def cached_extractions(self, keys: Sequence[str]) -> dict[str, str]:
        return {k: self.rows[k] for k in keys if k in self.rows}

    def cache_extractions(self, values: Mapping[str, str]) -> int:
        self.rows.update(values)
        return len(values)


def test_each_distinct_text_is_asked_once_and_failures_are_asked_again() -> None:
    extractor, cache = CountingExtractor(), DictCache()
    texts = ["a", "b", "a", "bad"]
    found, cached = extract_cached(extractor, texts, identity="m", cache=cache)
    assert extractor.asked == ["a", "b", "bad"]
    assert cached == [False] * 4
    assert [x.error for x in found] == [None, None, None, "malformed answer"]
    assert len(cache.rows) == 2  # the failure is not cached

    extractor.asked.clear()
    found, cached = extract_cached(extractor, texts, identity="m", cache=cache)
    assert extractor.asked == ["bad"]
    assert cached == [True, True, True, False]
    assert found[0].statements == (FACT,)
    # Another extractor (or prompt version) never reads these answers.
    extract_cached(extractor, ["a"], identity="other", cache=cache)
    assert extractor.asked == ["bad", "a"]


def test_files_and_rules_are_not_cached_models_are() -> None:
    assert extractor_identity(Settings(graph={"extractor": "rules"})) is None
    assert extractor_identity(Settings(graph={"extractor": "file:/x.json"})) is None
    assert extractor_identity(Settings()) is None
    model = extractor_identity(Settings(graph={"extractor": "openai:http://h:1/v1#m"}))
    assert model is not None
    assert model.startswith("openai:http://h:1/v1#m|")


def test_file_match_note_names_what_matched_and_what_did_not(tmp_path: Path) -> None:
    path = tmp_path / "openie.json"
    docs = [
        {
            "passage": "Ada Lovelace wrote the first program for the Analytical Engine.",
            "extracted_entities": ["Ada Lovelace"],
            "extracted_triples": [["Ada Lovelace", "wrote", "the first program"], ["", "x", "y"]],
        },
        {
            "passage": "A passage no chunk holds at all, about something else entirely.",
            "extracted_entities": [],
            "extracted_triples": [],
        },
    ]
    path.write_text(json.dumps({"docs": docs}))
    extractor = build_graph_extractor(Settings(graph={"extractor": f"file:{path}"}))
    assert isinstance(extractor, FileExtractor)
    note = file_match_note(
        str(path),
        ["Ada Lovelace wrote the first program for the Analytical Engine.", "Unrelated text."],
    )
    assert "1 of 2 section chunks matched a passage (1 did not)" in note
    assert "1 of 2 passages matched no chunk" in note
    assert "1 malformed triples dropped" in note
