"""HippoRAG OpenIE files as an extractor: both file shapes, chunk matching, export round trip."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rayweave.cluster.errors import ConfigError
from rayweave.cluster.types import Entity
from rayweave.graph.extraction import Extraction, GraphExtractor, Statement
from rayweave.graph.names import entity_id, normalize_name
from rayweave.graph.openie_file import (
    FileExtractor,
    parse_triples,
    passage_id,
    read_openie,
    write_openie,
)

PARIS = "Paris is the capital and largest city of France. It hosts the Louvre museum."
CURIE = "Marie Curie discovered polonium and radium with Pierre Curie in 1898."
JAWS = "Jaws is a 1975 thriller film directed by Steven Spielberg."


def _write(tmp_path: Path, data: object, name: str = "openie.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _v2() -> dict[str, Any]:
    """HippoRAG 2: md5 `idx`, passages as "title\\ntext", averages beside the docs."""
    docs = [
        {
            "idx": passage_id(f"Paris\n{PARIS}"),
            "passage": f"Paris\n{PARIS}",
            "extracted_entities": ["Paris", "France", "Louvre"],
            "extracted_triples": [
                ["Paris", "capital of", "France"],
                ["Paris", "hosts", "Louvre"],
            ],
        },
        {
            "idx": passage_id(CURIE),
            "passage": CURIE,
            "extracted_entities": ["Marie Curie", "polonium", "radium"],
            "extracted_triples": [
                ["Marie Curie", "discovered", "polonium"],
                ["Marie Curie", "discovered", "radium"],
                ["Marie Curie", "discovered in", 1898],
            ],
        },
    ]
    return {"docs": docs, "avg_ent_chars": 7.1, "avg_ent_words": 1.2}


def _v1() -> dict[str, Any]:
    """HippoRAG 1: corpus rows (integer idx, title, text) plus `passage` = title + text."""
    return {
        "docs": [
            {
                "idx": 0,
                "title": "Jaws (film)",
                "text": JAWS,
                "passage": f"Jaws (film)\n{JAWS}",
                "extracted_entities": ["Jaws", "Steven Spielberg", "1975"],
                "extracted_triples": [["Jaws", "directed by", "Steven Spielberg"]],
            }
        ],
        "ents_by_doc": [["Jaws", "Steven Spielberg", "1975"]],
        "avg_ent_chars": 8.0,
        "avg_ent_words": 1.3,
    }


def _triples(extraction: Extraction) -> list[tuple[str, str, str]]:
    return [(s.subject, s.predicate, s.object) for s in extraction.statements]


class TestReading:
    def test_hipporag2_exact_and_title_line(self, tmp_path: Path) -> None:
        ex = FileExtractor(_write(tmp_path, _v2()))
        assert isinstance(ex, GraphExtractor)
        titled, plain = ex.extract([f"Paris\n{PARIS}", PARIS])
        assert _triples(titled) == [("Paris", "capital of", "France"), ("Paris", "hosts", "Louvre")]
        assert plain == titled  # the chunk lacks the passage's title line
        names = {e.name for e in titled.entities}
        assert names == {"Paris", "France", "Louvre"}
        paris = next(e for e in titled.entities if e.name == "Paris")
        assert paris.id == entity_id(normalize_name("Paris"))
        assert all(
            s.confidence == Statement(subject="a", predicate="b", object="c").confidence
            for s in titled.statements
        )

    def test_numbers_in_triples_are_text(self, tmp_path: Path) -> None:
        (curie,) = FileExtractor(_write(tmp_path, _v2())).extract([CURIE])
        assert ("Marie Curie", "discovered in", "1898") in _triples(curie)

    def test_hipporag1_rows_with_title_and_text(self, tmp_path: Path) -> None:
        ex = FileExtractor(_write(tmp_path, _v1()))
        # Whitespace and case do not matter; the title line may be there, missing or another one.
        texts = [f"Jaws (film)\n{JAWS}", JAWS, f"  {JAWS.upper()}  \n", f"# Jaws\n{JAWS}"]
        expected = [("Jaws", "directed by", "Steven Spielberg")]
        assert [_triples(x) for x in ex.extract(texts)] == [expected] * 4
        report = ex.report()
        assert (report.matched_exact, report.matched_title) == (1, 3)
        assert report.passages_unused == 0

    def test_text_only_rows_and_bare_list(self, tmp_path: Path) -> None:
        rows = [{"text": CURIE, "extracted_triples": [["Marie Curie", "discovered", "radium"]]}]
        (out,) = FileExtractor(_write(tmp_path, rows)).extract([CURIE])
        assert _triples(out) == [("Marie Curie", "discovered", "radium")]

    def test_bad_triples_and_entities_are_dropped_and_counted(self, tmp_path: Path) -> None:
        data = {
            "docs": [
                {
                    "passage": CURIE,
                    "extracted_entities": ["Marie Curie", "", None, "Marie Curie"],
                    "extracted_triples": [
                        ["Marie Curie", "discovered", "polonium"],
                        ["Marie Curie", "", "radium"],
                        ["Marie Curie", "discovered"],
                        ["a", "b", "c", "d"],
                        ["Marie Curie", "discovered", None],
                        "not a triple",
                        ["Marie Curie", "discovered", "polonium"],  # repeat: kept once
                    ],
                }
            ]
        }
        ex = FileExtractor(_write(tmp_path, data))
        (out,) = ex.extract([CURIE])
        assert _triples(out) == [("Marie Curie", "discovered", "polonium")]
        report = ex.report()
        assert (report.triples_dropped, report.entities_dropped) == (5, 2)

    def test_parse_triples_is_pure(self) -> None:
        assert parse_triples([["a", "b", "c"], ["a", " ", "c"], [1, 2, 3], [True, "b", "c"]]) == (
            (("a", "b", "c"), ("1", "2", "3")),
            2,
        )


class TestMatching:
    def test_unmatched_chunk_is_empty_not_an_error(self, tmp_path: Path) -> None:
        ex = FileExtractor(_write(tmp_path, _v2()))
        (out,) = ex.extract(["Something else entirely, never seen by the extractor."])
        assert out == Extraction()
        report = ex.report()
        assert (report.chunks_matched, report.chunks_unmatched) == (0, 1)
        assert report.passages_unused == 2
        assert set(report.unused_sample) == {passage_id(f"Paris\n{PARIS}"), passage_id(CURIE)}

    def test_chunk_inside_one_passage_keeps_what_it_mentions(self, tmp_path: Path) -> None:
        ex = FileExtractor(_write(tmp_path, _v2()))
        # A chunker cut the passage, mid-word at the start: "ris is the capital ..."
        (part,) = ex.extract(["ris is the capital and largest city of France."])
        assert _triples(part) == [("Paris", "capital of", "France")]
        (tail,) = ex.extract(["It hosts the Louvre museum."])
        assert _triples(tail) == [("Paris", "hosts", "Louvre")]
        assert ex.report().matched_contained == 2

    def test_short_or_ambiguous_fragments_do_not_match(self, tmp_path: Path) -> None:
        data = {"docs": [{"passage": f"{CURIE} Paris is nice."}, {"passage": f"{CURIE} Rome."}]}
        ex = FileExtractor(_write(tmp_path, data))
        short, ambiguous = ex.extract(["Paris is nice.", CURIE])
        assert short == ambiguous == Extraction()
        assert ex.report().chunks_unmatched == 2

    def test_a_long_first_line_is_not_a_title(self, tmp_path: Path) -> None:
        first = (
            "Jaws was released in the summer of 1975 and soon became the highest-grossing film "
            "of its time."
        )
        data = {
            "docs": [
                {
                    "passage": f"{first}\n{CURIE}",
                    "extracted_triples": [
                        ["Jaws", "released in", "1975"],
                        ["Marie Curie", "discovered", "radium"],
                    ],
                }
            ]
        }
        ex = FileExtractor(_write(tmp_path, data))
        (out,) = ex.extract([CURIE])
        assert _triples(out) == [("Marie Curie", "discovered", "radium")]
        assert ex.report().matched_contained == 1

    def test_chunk_holding_several_passages_gets_them_all(self, tmp_path: Path) -> None:
        ex = FileExtractor(_write(tmp_path, _v2()))
        (both,) = ex.extract([f"Intro.\n\n{PARIS}\n\n{CURIE}\n\nOutro."])
        triples = _triples(both)
        assert ("Paris", "hosts", "Louvre") in triples
        assert ("Marie Curie", "discovered", "radium") in triples
        report = ex.report()
        assert (report.matched_merged, report.passages_unused) == (1, 0)

    def test_duplicate_rows_count_once(self, tmp_path: Path) -> None:
        row = {"passage": CURIE, "extracted_triples": [["Marie Curie", "discovered", "radium"]]}
        ex = FileExtractor(_write(tmp_path, {"docs": [row, {**row, "extracted_triples": []}]}))
        (out,) = ex.extract([CURIE])
        assert len(out.statements) == 1  # the first row wins
        report = ex.report()
        assert (report.passages, report.duplicate_rows, report.passages_unused) == (1, 1, 0)


class TestMalformed:
    def test_missing_file_names_the_path(self, tmp_path: Path) -> None:
        missing = tmp_path / "nope.json"
        with pytest.raises(ConfigError, match=r"nope\.json"):
            FileExtractor(missing)

    def test_bad_json_names_the_path(self, tmp_path: Path) -> None:
        path = tmp_path / "broken.json"
        path.write_text('{"docs": [', encoding="utf-8")
        with pytest.raises(ConfigError, match=r"broken\.json.*JSON"):
            FileExtractor(path)

    @pytest.mark.parametrize(
        "data",
        [
            {"documents": []},
            "docs",
            {"docs": ["a passage"]},
            {"docs": [{"extracted_triples": []}]},
            {"docs": [{"passage": "text", "extracted_triples": "[[a, b, c]]"}]},
        ],
    )
    def test_wrong_shape_is_a_config_error(self, tmp_path: Path, data: object) -> None:
        with pytest.raises(ConfigError, match=r"shape\.json"):
            read_openie(_write(tmp_path, data, "shape.json"))


class TestWriting:
    def test_round_trip(self, tmp_path: Path) -> None:
        def ent(name: str) -> Entity:
            return Entity(id=entity_id(normalize_name(name)), name=name, kind="concept")

        paris = Extraction(
            entities=(ent("Paris"), ent("France")),
            statements=(Statement(subject="Paris", predicate="capital of", object="France"),),
        )
        curie = Extraction(
            entities=(ent("Marie Curie"), ent("radium")),
            statements=(Statement(subject="Marie Curie", predicate="discovered", object="radium"),),
        )
        rows = [
            (PARIS, paris),
            (CURIE, curie),
            (JAWS, Extraction(error="model timed out")),  # a failure is not exported
            (PARIS, paris),  # nor a repeat
        ]
        path = tmp_path / "out" / "openie_results_ner_rayweave.json"
        assert write_openie(path, rows) == 2

        data = json.loads(path.read_text(encoding="utf-8"))
        assert [d["idx"] for d in data["docs"]] == [passage_id(PARIS), passage_id(CURIE)]
        assert data["docs"][0]["extracted_triples"] == [["Paris", "capital of", "France"]]
        assert data["avg_ent_words"] == 1.25

        again = FileExtractor(path).extract([PARIS, CURIE, JAWS])
        assert again == [paris, curie, Extraction()]

    def test_unwritable_target_is_a_config_error(self, tmp_path: Path) -> None:
        blocker = tmp_path / "file"
        blocker.write_text("x", encoding="utf-8")
        with pytest.raises(ConfigError, match="cannot write"):
            write_openie(blocker / "openie.json", [(CURIE, Extraction())])
