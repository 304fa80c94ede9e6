"""CO_MENTIONED edges: sentence splitting, per-sentence entities, support and edge rows."""

from __future__ import annotations

import pytest

from rayweave.cluster.settings import GraphSettings
from rayweave.cluster.types import Chunk, ContentType, Level
from rayweave.graph.builders import build_graph
from rayweave.graph.comentions import (
    MAX_SENTENCE_ENTITIES,
    chunk_sentences,
    comention_edges,
    pair_support,
    sentence_entities,
    split_sentences,
)
from rayweave.graph.schema import EdgeSource, RelType


def doc(cid: str, text: str, **kw: object) -> Chunk:
    return Chunk(id=cid, doc_id=cid, level=Level.DOCUMENT, text=text, **kw)  # type: ignore[arg-type]


class TestSplitSentences:
    def test_terminal_punctuation_and_blank_lines(self) -> None:
        text = "Green is an album. Is it good? Yes!\n\nA new paragraph"
        assert split_sentences(text) == [
            "Green is an album.",
            "Is it good?",
            "Yes!",
            "A new paragraph",
        ]

    def test_abbreviations_initials_and_lowercase_do_not_split(self) -> None:
        text = (
            "Dr. Smith joined the U.S. Army in 1941. He studied at Princeton (Ph.D. 1965). "
            "J. R. R. Tolkien wrote it, e.g. this one."
        )
        assert split_sentences(text) == [
            "Dr. Smith joined the U.S. Army in 1941.",
            "He studied at Princeton (Ph.D. 1965).",
            "J. R. R. Tolkien wrote it, e.g. this one.",
        ]

    def test_empty(self) -> None:
        assert split_sentences("") == []
        assert split_sentences("  \n ") == []


class TestChunkSentences:
    def test_a_document_repeats_count_once_and_code_is_skipped(self) -> None:
        chunks = [
            doc("d", "One sentence. Two sentence."),
            Chunk(id="s", doc_id="d", level=Level.SECTION, text="Two sentence. Three."),
            doc("c", "x = 1. y = 2.", content_type=ContentType.CODE),
        ]
        assert chunk_sentences(chunks) == {
            "d": ["One sentence.", "Two sentence."],
            "s": ["Three."],
        }


class TestSentenceEntities:
    def test_generic_names_drop_and_ambiguity_lowers_certainty(self) -> None:
        got = sentence_entities(
            ["A and B and C."],
            [{"a": (1, True, 1), "b": (1, False, 2), "c": (2, True, 1)}],
            (),
            {"c"},
        )
        assert got == [{"a": 1.0, "b": 0.5}]

    def test_subject_joins_the_first_and_pronoun_led_sentences(self) -> None:
        sentences = ["Kessler is a historian.", "Born in Chicago.", "He studied at Princeton."]
        matches = [{}, {"chicago": (1, False, 1)}, {"princeton": (1, False, 1)}]
        got = sentence_entities(sentences, matches, ["kessler"], set())
        assert got == [{"kessler": 1.0}, {"chicago": 1.0}, {"princeton": 1.0, "kessler": 1.0}]


class TestPairSupport:
    def test_a_sentence_splits_its_unit_over_its_partners(self) -> None:
        got = pair_support([{"a": 1.0, "b": 1.0}, {"a": 1.0, "b": 1.0, "c": 0.5}], {})
        assert got[("a", "b")] == (pytest.approx(1.5), 2)
        assert got[("a", "c")] == (pytest.approx(0.25), 1)
        assert got[("b", "c")] == (pytest.approx(0.25), 1)

    def test_a_long_list_keeps_its_rarest_names(self) -> None:
        names = {f"e{i:02d}": 1.0 for i in range(MAX_SENTENCE_ENTITIES + 3)}
        df = {"e00": 100, "e01": 50, "e02": 20}  # the three most common names drop out
        got = pair_support([names], df)
        assert not {"e00", "e01", "e02"} & {x for pair in got for x in pair}
        k = MAX_SENTENCE_ENTITIES
        assert len(got) == k * (k - 1) // 2
        assert all(s == pytest.approx(1 / (k - 1)) for s, _ in got.values())

    def test_a_lone_name_makes_no_pair(self) -> None:
        assert pair_support([{"a": 1.0}, {}], {}) == {}


class TestComentionEdges:
    def test_confidence_from_support_and_weight_from_rarity(self) -> None:
        (edge,) = comention_edges({("a", "b"): (1.0, 1)}, {"a": 1, "b": 1})
        assert (edge.rel, edge.src.id, edge.dst.id) == (RelType.CO_MENTIONED, "a", "b")
        assert edge.source is EdgeSource.SENTENCE
        assert edge.confidence == pytest.approx(0.5)
        assert edge.weight == pytest.approx(1.0)
        (common,) = comention_edges({("a", "b"): (1.0, 1)}, {"a": 1, "b": 20})
        assert common.weight < edge.weight

    def test_each_entity_keeps_its_strongest(self) -> None:
        support = {("hub", f"x{i}"): (float(i + 1), 1) for i in range(5)}
        got = comention_edges(support, {}, max_per_entity=2)
        assert [e.dst.id for e in got] == ["x4", "x3"]


class TestBuild:
    CHUNKS = (
        doc("green", "Green is an album by Steve Hillage. It sold well.", title="Green"),
        doc(
            "hillage",
            "Steve Hillage is a guitarist. He married Miquette Giraudy.",
            title="Steve Hillage",
        ),
        doc("giraudy", "Miquette Giraudy is a keyboard player.", title="Miquette Giraudy"),
    )

    def test_the_sentence_links_the_two_hops(self) -> None:
        b = build_graph(list(self.CHUNKS), settings=GraphSettings(sentence_links=True))
        pairs = {(e.src.id, e.dst.id) for e in b.edges if e.rel is RelType.CO_MENTIONED}
        ids = {e.name: e.id for e in b.entities}
        green, hillage = ids["Green"], ids["Steve Hillage"]
        assert tuple(sorted((green, hillage))) in pairs
        # The pronoun-led sentence speaks of its passage's subject.
        giraudy = ids["Miquette Giraudy"]
        assert tuple(sorted((hillage, giraudy))) in pairs
        assert tuple(sorted((green, giraudy))) not in pairs

    def test_off_by_default(self) -> None:
        assert not GraphSettings().sentence_links
        b = build_graph(list(self.CHUNKS))
        assert not [e for e in b.edges if e.rel is RelType.CO_MENTIONED]
