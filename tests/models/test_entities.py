from __future__ import annotations

import pytest

from rayweave.cluster.errors import ModelError
from rayweave.models.entities import (
    RuleEntityExtractor,
    SpacyEntityExtractor,
    entity_id,
    load_spacy_extractor,
)
from rayweave.models.protocols import EntityExtractor

from .conftest import SPACY

TEXTS = [
    "Barack Obama was born in Hawaii in 1961. He was president of the United States.",
    "Ray Serve deploys FastAPI apps on Kubernetes. Call `get_user_name` or np.linalg.norm first.",
    "",
]


@pytest.fixture(scope="module")
def spacy_extractor() -> SpacyEntityExtractor:
    return load_spacy_extractor(SPACY)


def by_id(entities: list) -> dict[str, tuple[str, str]]:
    return {e.id: (e.name, e.kind) for e in entities}


class TestSpacy:
    def test_protocol_and_one_list_per_text(self, spacy_extractor: SpacyEntityExtractor) -> None:
        assert isinstance(spacy_extractor, EntityExtractor)
        out = spacy_extractor.extract(TEXTS)
        assert len(out) == 3
        assert out[2] == []

    def test_named_entities_noun_chunks_and_symbols(
        self, spacy_extractor: SpacyEntityExtractor
    ) -> None:
        first, second, _ = spacy_extractor.extract(TEXTS)
        ents = by_id(first)
        assert ents["barack obama"] == ("Barack Obama", "person")
        assert ents["hawaii"][1] == "gpe"
        # "the United States": determiner stripped, NER label wins over the noun chunk.
        assert ents["united states"] == ("United States", "gpe")
        assert "president" in ents
        assert "1961" not in ents  # numeric labels are not linked
        assert "he" not in ents  # pronoun chunks dropped
        symbols = {e.name for e in second if e.kind == "symbol"}
        assert {"get_user_name", "np.linalg.norm"} <= symbols
        ids = [e.id for e in first]
        assert len(ids) == len(set(ids))

    def test_ids_are_casefolded_surfaces(self) -> None:
        assert entity_id("  Ray   Serve ") == "ray serve"
        assert entity_id("Straße") == "strasse"

    def test_other_languages_use_rules(self, spacy_extractor: SpacyEntityExtractor) -> None:
        out = spacy_extractor.extract(
            ["Die Bundesregierung tagt in Berlin mit Angela Merkel."], language="de"
        )
        assert all(e.kind in ("concept", "symbol") for e in out[0])
        assert "angela merkel" in by_id(out[0])

    def test_bad_reference(self) -> None:
        with pytest.raises(ModelError):
            load_spacy_extractor("package:cognition/model")
        with pytest.raises(TypeError, match="one string"):
            RuleEntityExtractor().extract("text")  # type: ignore[arg-type]


class TestRules:
    def test_cheap_fallback(self) -> None:
        out = RuleEntityExtractor().extract(TEXTS)
        first, second = by_id(out[0]), by_id(out[1])
        assert "barack obama" in first
        assert "united states" in first
        assert "obama" not in first  # inside a longer capitalised run
        assert "he" not in first
        assert second["ray serve"][1] == "concept"
        assert second["get_user_name"][1] == "symbol"
        assert second["np.linalg.norm"][1] == "symbol"
        assert second["kubernetes"][1] == "concept"
        assert out[2] == []

    def test_acronyms_and_sentence_initial_words(self) -> None:
        ents = by_id(
            RuleEntityExtractor().extract(["Indexes use HNSW graphs. Search is fast with Qdrant."])[
                0
            ]
        )
        assert "hnsw" in ents
        assert "qdrant" in ents
        assert "indexes" not in ents  # sentence-initial capital
        assert "search" not in ents


def test_ner_text_drops_long_runs_that_hold_no_entities() -> None:
    from rayweave.models.entities import ner_text

    text = "#" * 65_536 + " Ray Serve runs on Anyscale " + "[" * 5000 + "]" * 5000
    assert ner_text(text).split() == ["Ray", "Serve", "runs", "on", "Anyscale"]
    assert ner_text("ray.serve.handle.DeploymentHandle is fine") == (
        "ray.serve.handle.DeploymentHandle is fine"
    )
