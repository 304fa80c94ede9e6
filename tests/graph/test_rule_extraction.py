"""The no-model baseline: statements from the packaged spaCy pipeline's dependency parses."""

from __future__ import annotations

import pytest
import spacy

from rayweave.cluster.errors import ModelError
from rayweave.graph.extraction import Extraction, GraphExtractor
from rayweave.graph.names import entity_id, normalize_name
from rayweave.graph.rule_extraction import RULE_CONFIDENCE, RuleExtractor

Triple = tuple[str, str, str]


@pytest.fixture(scope="module")
def rules() -> RuleExtractor:
    return RuleExtractor()  # the packaged en_core_web_sm


def _triples(extraction: Extraction) -> list[Triple]:
    return [(s.subject, s.predicate, s.object) for s in extraction.statements]


def _one(rules: RuleExtractor, text: str) -> Extraction:
    (out,) = rules.extract([text])
    return out


class TestPatterns:
    def test_copula(self, rules: RuleExtractor) -> None:
        out = _one(rules, "Paris is the capital of France.")
        triples = _triples(out)
        assert ("Paris", "is", "capital of France") in triples
        assert ("Paris", "is capital of", "France") in triples  # links the two places directly
        kinds = {e.name: e.kind for e in out.entities}
        assert kinds["Paris"] == kinds["France"] == "gpe"
        assert kinds["capital of France"] == "concept"
        paris = next(e for e in out.entities if e.name == "Paris")
        assert paris.id == entity_id(normalize_name("Paris"))

    def test_director_of(self, rules: RuleExtractor) -> None:
        triples = _triples(_one(rules, "Steven Spielberg is the director of Jaws."))
        assert ("Steven Spielberg", "is director of", "Jaws") in triples

    def test_born_in(self, rules: RuleExtractor) -> None:
        triples = _triples(_one(rules, "Albert Einstein was born in Ulm in 1879."))
        assert ("Albert Einstein", "born in", "Ulm") in triples

    def test_appositive(self, rules: RuleExtractor) -> None:
        triples = _triples(_one(rules, "Berlin, the capital of Germany, is a large city."))
        assert ("Berlin", "is", "capital of Germany") in triples
        assert ("Berlin", "is capital of", "Germany") in triples
        assert ("Berlin", "is", "large city") in triples

    def test_conjoined_objects_and_subjects_fan_out(self, rules: RuleExtractor) -> None:
        assert _triples(_one(rules, "Marie Curie discovered polonium and radium.")) == [
            ("Marie Curie", "discovered", "polonium"),
            ("Marie Curie", "discovered", "radium"),
        ]
        triples = _triples(_one(rules, "Alice and Bob founded Acme Corp."))
        assert {s for s, _, _ in triples} == {"Alice", "Bob"}

    def test_passive_agent_particle_and_negation(self, rules: RuleExtractor) -> None:
        out = rules.extract(
            [
                "The company was founded by Bill Gates in 1975.",
                "John looked up the answer.",
                "Microsoft did not acquire Google.",
            ]
        )
        assert ("company", "founded by", "Bill Gates") in _triples(out[0])
        assert _triples(out[1]) == [("John", "looked up", "answer")]
        assert _triples(out[2]) == [("Microsoft", "not acquire", "Google")]

    def test_relative_clause_and_conjoined_verb_borrow_a_subject(
        self, rules: RuleExtractor
    ) -> None:
        tower = _triples(_one(rules, "The Eiffel Tower, which is located in Paris, was built."))
        assert ("Eiffel Tower", "located in", "Paris") in tower
        einstein = _triples(
            _one(rules, "Einstein worked at the patent office and later taught at Princeton.")
        )
        assert ("Einstein", "taught at", "Princeton") in einstein

    def test_pronoun_arguments_are_skipped(self, rules: RuleExtractor) -> None:
        out = _one(rules, "He moved to Berlin.")
        assert out.statements == ()
        assert [e.name for e in out.entities] == ["Berlin"]


class TestExtractor:
    def test_protocol_batches_and_determinism(self, rules: RuleExtractor) -> None:
        assert isinstance(rules, GraphExtractor)
        texts = ["Paris is the capital of France.", "", "Marie Curie discovered radium."]
        first = rules.extract(texts)
        assert len(first) == 3
        assert first[1] == Extraction()
        assert rules.extract(texts) == first
        assert rules.extract(texts[2:]) == first[2:]  # a text's answer does not depend on others
        assert all(s.confidence == RULE_CONFIDENCE for s in first[0].statements)

    def test_one_string_is_refused(self, rules: RuleExtractor) -> None:
        with pytest.raises(TypeError):
            rules.extract("Paris is the capital of France.")

    def test_pipeline_without_parser_is_a_model_error(self) -> None:
        with pytest.raises(ModelError, match="parser"):
            RuleExtractor(spacy.blank("en"))
