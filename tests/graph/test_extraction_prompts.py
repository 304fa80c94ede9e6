"""The extractor's prompts and the tolerant reader of model answers (pure functions)."""

from __future__ import annotations

import json

import pytest

from rayweave.cluster.errors import ModelError
from rayweave.graph.extraction_prompts import (
    ENTITY_SYSTEM,
    EXAMPLE_ENTITIES,
    EXAMPLE_PASSAGE,
    EXAMPLE_TOPICS,
    EXAMPLE_TRIPLES,
    TOPIC_TRIPLES_SYSTEM,
    TRIPLES_SYSTEM,
    MalformedAnswer,
    NamedEntity,
    ParseLimits,
    clean_kind,
    clean_part,
    entity_messages,
    find_json_object,
    parse_entities,
    parse_triples,
    passage_of,
    strip_fences,
    triple_messages,
)

PASSAGE = "KubeRay runs Ray clusters on Kubernetes.\n```python\nray.init()\n```\nSee {braces}."


class TestPrompts:
    def test_entity_step_is_system_example_then_passage(self) -> None:
        msgs = entity_messages(PASSAGE)
        assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
        assert msgs[0]["content"] == ENTITY_SYSTEM
        assert '{"named_entities"' in ENTITY_SYSTEM
        assert "JSON" in ENTITY_SYSTEM
        assert passage_of(msgs[1]["content"]) == EXAMPLE_PASSAGE
        # The passage comes back whole, fenced code and braces included.
        assert passage_of(msgs[-1]["content"]) == PASSAGE
        # The worked answer is exactly what the parser reads.
        assert parse_entities(msgs[2]["content"]).names == EXAMPLE_ENTITIES

    def test_triple_step_carries_the_entities(self) -> None:
        msgs = triple_messages(PASSAGE, ["KubeRay", "Ray", "Kubernetes"])
        assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
        assert msgs[0]["content"] == TRIPLES_SYSTEM != ENTITY_SYSTEM
        assert '{"triples"' in TRIPLES_SYSTEM
        assert "JSON" in TRIPLES_SYSTEM
        last = msgs[-1]["content"]
        assert passage_of(last) == PASSAGE
        assert find_json_object(last, "named_entities") == {
            "named_entities": ["KubeRay", "Ray", "Kubernetes"]
        }
        assert passage_of(msgs[1]["content"]) == EXAMPLE_PASSAGE
        assert parse_triples(msgs[2]["content"]).triples == EXAMPLE_TRIPLES
        # Every example triple names at least one example entity, as the rules ask.
        for s, _, o in EXAMPLE_TRIPLES:
            assert s in EXAMPLE_ENTITIES or o in EXAMPLE_ENTITIES
            assert s in EXAMPLE_PASSAGE

    def test_topic_step_asks_for_groups_and_its_example_reads_back(self) -> None:
        msgs = triple_messages(PASSAGE, ["KubeRay"], topics=True)
        assert msgs[0]["content"] == TOPIC_TRIPLES_SYSTEM != TRIPLES_SYSTEM
        assert '{"topics": [{"topic"' in TOPIC_TRIPLES_SYSTEM
        assert passage_of(msgs[-1]["content"]) == PASSAGE
        parsed = parse_triples(msgs[2]["content"])
        assert parsed.triples == EXAMPLE_TRIPLES  # every example triple sits under one topic
        assert {parsed.topics[t] for t in EXAMPLE_TRIPLES} == {t for t, _ in EXAMPLE_TOPICS}
        assert parsed.topics[EXAMPLE_TRIPLES[1]] == "Qdrant's origins"

    def test_passage_of_untagged_text_is_the_text(self) -> None:
        assert passage_of("just text") == "just text"


class TestFencesAndObjects:
    def test_strip_fences(self) -> None:
        assert strip_fences('```json\n{"a": 1}\n```') == '{"a": 1}'
        assert strip_fences('Here you go:\n```\n{"a": 1}\n```\nDone.') == '{"a": 1}'
        assert strip_fences('```JSON\n{"a": [1,') == '{"a": [1,'  # cut short, never closed
        assert strip_fences('  {"a": 1}  ') == '{"a": 1}'

    def test_first_object_in_chatter(self) -> None:
        text = 'Sure! {not json} then {"x": 1} and {"triples": []} and {"triples": [1]}'
        assert find_json_object(text) == {"x": 1}
        assert find_json_object(text, "triples") == {"triples": []}
        assert find_json_object(text, "missing") is None
        assert find_json_object("no braces at all") is None


class TestParseEntities:
    def test_strings_dicts_numbers_deduplicated(self) -> None:
        answer = (
            'The entities are:\n```json\n{"named_entities": ["Ray Serve", "  ray   serve ", '
            '{"name": "Alice Smith", "type": "Person"}, {"entity": "KubeRay"}, 2021, "", "  ", '
            'null, true, ["nested"], {"type": "org"}]}\n```'
        )
        parsed = parse_entities(answer)
        assert parsed.entities == (
            NamedEntity(name="Ray Serve"),
            NamedEntity(name="Alice Smith", kind="person"),
            NamedEntity(name="KubeRay"),
            NamedEntity(name="2021"),
        )
        # "", "  ", null, true, ["nested"] and the nameless dict; the duplicate is not counted.
        assert parsed.dropped == 6
        assert not parsed.salvaged

    def test_bare_list_and_cut_short_answers(self) -> None:
        assert parse_entities('["A", "B"]').names == ("A", "B")
        cut = parse_entities('{"named_entities": ["Qdrant", "Rust", "Ber')
        assert cut.names == ("Qdrant", "Rust")
        assert cut.salvaged

    def test_limits(self) -> None:
        names = [f"Name{i}" for i in range(10)]
        parsed = parse_entities(json.dumps({"named_entities": names}), ParseLimits(max_items=3))
        assert parsed.names == ("Name0", "Name1", "Name2")
        assert parsed.dropped == 7

    @pytest.mark.parametrize(
        ("answer", "message"),
        [
            ("", "empty answer"),
            ("   \n ", "empty answer"),
            ("I could not find any entities.", "no JSON object"),
            ('{"entities": ["A"]}', 'without a "named_entities" list'),
            ('{"named_entities": "A, B"}', "is a str, not a list"),
        ],
    )
    def test_malformed(self, answer: str, message: str) -> None:
        with pytest.raises(MalformedAnswer, match=message) as info:
            parse_entities(answer)
        assert isinstance(info.value, ModelError)


class TestParseTriples:
    def test_lists_and_dicts(self) -> None:
        answer = json.dumps(
            {
                "triples": [
                    ["Ray Serve", "runs on", "Ray"],
                    {"subject": "KubeRay", "predicate": "deploys", "object": "Ray"},
                    {"head": "Qdrant", "relation": "first released in", "tail": 2021},
                ]
            }
        )
        parsed = parse_triples(answer)
        assert parsed.triples == (
            ("Ray Serve", "runs on", "Ray"),
            ("KubeRay", "deploys", "Ray"),
            ("Qdrant", "first released in", "2021"),
        )
        assert parsed.dropped == 0

    def test_bad_triples_are_dropped_and_counted(self) -> None:
        answer = json.dumps(
            {
                "triples": [
                    ["A", "likes", "B"],
                    ["a", " LIKES ", "b"],  # duplicate, case and spaces aside: not counted
                    ["A", "", "B"],  # empty predicate
                    ["  ", "likes", "B"],  # whitespace subject
                    ["A", "likes", None],  # null object
                    ["A", "likes"],  # two parts
                    ["A", "likes", "B", "C", "D"],  # five parts (a fourth is a topic)
                    "A likes B",  # not a list
                    {"subject": "A", "predicate": "likes"},  # no object
                    ["Ray", "is", "ray"],  # subject is the object
                    ["A", ["nested"], "B"],
                    ["C", "knows", "D"],
                ]
            }
        )
        parsed = parse_triples(answer)
        assert parsed.triples == (("A", "likes", "B"), ("C", "knows", "D"))
        assert parsed.dropped == 9

    def test_chatter_fences_and_cut_short(self) -> None:
        chatty = 'Sure!\n```json\n{"triples": [["A", "b", "C"]]}\n```\nLet me know.'
        assert parse_triples(chatty).triples == (("A", "b", "C"),)
        # JSON outside an echoed code fence is still found.
        outside = 'The passage had ```ray.init()``` in it.\n{"triples": [["A", "b", "C"]]}'
        assert parse_triples(outside).triples == (("A", "b", "C"),)
        cut = parse_triples('```json\n{"triples": [["A", "b", "C"], ["D", "e", "F"], ["G", "h')
        assert cut.triples == (("A", "b", "C"), ("D", "e", "F"))
        assert cut.salvaged
        assert parse_triples('[["A", "b", "C"]]').triples == (("A", "b", "C"),)

    def test_long_parts_are_trimmed_at_a_word(self) -> None:
        long_object = "a very long object phrase " * 10
        parsed = parse_triples(
            json.dumps({"triples": [["S", "has", long_object]]}), ParseLimits(max_chars=30)
        )
        (_, _, obj), *_ = parsed.triples
        assert len(obj) <= 30
        assert long_object.startswith(obj)
        assert obj.endswith(("phrase", "long", "object", "very", "a"))

    def test_item_limit(self) -> None:
        triples = [[f"S{i}", "p", f"O{i}"] for i in range(5)]
        parsed = parse_triples(json.dumps({"triples": triples}), ParseLimits(max_items=2))
        assert [t[0] for t in parsed.triples] == ["S0", "S1"]
        assert parsed.dropped == 3

    @pytest.mark.parametrize(
        ("answer", "message"),
        [
            ("", "empty answer"),
            ('{"triples": [["A", "b"', "no JSON object"),  # cut inside the first triple
            ("Ray Serve runs on Ray.", "no JSON object"),
            ('{"named_entities": ["A"]}', 'without a "triples" list'),
            ('{"triples": {"A": "B"}}', "is a dict, not a list"),
        ],
    )
    def test_malformed(self, answer: str, message: str) -> None:
        with pytest.raises(MalformedAnswer, match=message):
            parse_triples(answer)


class TestTopics:
    def test_flat_answers_have_no_topics(self) -> None:
        assert parse_triples('{"triples": [["a", "b", "c"]]}').topics == {}

    def test_a_topic_per_triple(self) -> None:
        parsed = parse_triples(
            '{"triples": [["Ray", "runs on", "Kubernetes", "Deployment"], '
            '{"subject": "Ray", "predicate": "is", "object": "framework", "topic": " Ray "}, '
            '["Ray", "has", "actors", ""], ["x", "y", "z", ["not", "text"]]]}'
        )
        assert parsed.topics == {
            ("Ray", "runs on", "Kubernetes"): "Deployment",
            ("Ray", "is", "framework"): "Ray",
        }
        assert ("Ray", "has", "actors") in parsed.triples  # an empty topic is no topic
        assert ("x", "y", "z") in parsed.triples  # an unusable topic is dropped, not the triple
        assert parsed.dropped == 0

    def test_grouped_as_a_list_or_a_mapping(self) -> None:
        listed = parse_triples(
            'Here:\n```json\n{"topics": [{"topic": "Serving", "triples": [["Serve", "runs on", '
            '"Ray"], ["Serve", "", "x"]]}, {"topic": "Storage", "triples": [["Qdrant", "stores", '
            '"vectors"], ["serve", "RUNS ON", "ray"]]}, {"topic": "Empty", "triples": "none"}, '
            '"stray"]}\n```'
        )
        assert listed.triples == (("Serve", "runs on", "Ray"), ("Qdrant", "stores", "vectors"))
        assert listed.topics == {
            ("Serve", "runs on", "Ray"): "Serving",  # the repeat under Storage keeps the first
            ("Qdrant", "stores", "vectors"): "Storage",
        }
        assert listed.dropped == 1
        mapped = parse_triples('{"topics": {"Serving": [["Serve", "runs on", "Ray"]]}}')
        assert mapped.topics == {("Serve", "runs on", "Ray"): "Serving"}

    def test_a_cut_short_grouped_answer_keeps_what_is_whole(self) -> None:
        parsed = parse_triples(
            '{"topics": [{"topic": "Serving", "triples": [["Serve", "runs on", "Ray"], '
            '["Serve", "sc'
        )
        assert parsed.triples == (("Serve", "runs on", "Ray"),)
        assert parsed.salvaged
        # A grouped answer with no usable group is malformed, as a flat one would be.
        with pytest.raises(MalformedAnswer, match='without a "triples" list'):
            parse_triples('{"topics": [{"topic": "Serving"}]}')


class TestCleaning:
    def test_clean_part(self) -> None:
        assert clean_part("  Ray\n  Serve  ", 100) == "Ray Serve"
        assert clean_part('"quoted"', 100) == "quoted"
        assert clean_part(3.5, 100) == "3.5"
        assert clean_part(True, 100) == ""
        assert clean_part(None, 100) == ""
        assert clean_part({"a": 1}, 100) == ""
        assert clean_part("x" * 50, 10) == "x" * 10  # no word boundary: a hard cut

    def test_clean_kind(self) -> None:
        assert clean_kind("Person") == "person"
        assert clean_kind(" Software Library ") == "software_library"
        assert clean_kind("ORG/Company") == "org_company"
        assert clean_kind("  ") is None
        assert clean_kind(7) is None
