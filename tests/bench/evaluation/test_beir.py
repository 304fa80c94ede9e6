import json
from pathlib import Path

import pytest
from tests_support import BEIR_FIXTURES

from rayweave.bench.evaluation.beir import load_beir
from rayweave.cluster.beir import BeirDocument, index_corpus, iter_corpus
from rayweave.cluster.errors import SourceError


def write_set(root: Path, *, corpus: list[dict], queries: list[dict], qrels: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "corpus.jsonl").write_text(
        "\n".join(json.dumps(r) for r in corpus) + "\n", encoding="utf-8"
    )
    (root / "queries.jsonl").write_text(
        "\n".join(json.dumps(r) for r in queries) + "\n", encoding="utf-8"
    )
    (root / "qrels").mkdir(exist_ok=True)
    (root / "qrels" / "test.tsv").write_text(qrels, encoding="utf-8")
    return root


@pytest.fixture
def small(tmp_path: Path) -> Path:
    return write_set(
        tmp_path / "tiny",
        corpus=[
            {"_id": "d1", "title": "Ray", "text": "Distributed Python."},
            {"_id": "d2", "text": "No title here."},
        ],
        queries=[{"_id": "q1", "text": "what is ray"}, {"_id": "q2", "text": "unjudged"}],
        qrels="query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t0\n",
    )


class TestLoadBeir:
    def test_loads_fields_and_drops_unjudged_queries(self, small: Path) -> None:
        ds = load_beir(small)
        assert ds.name == "tiny"
        assert ds.corpus["d1"].full_text() == "Ray Distributed Python."
        assert ds.corpus["d2"].title == ""
        assert ds.corpus["d2"].full_text() == "No title here."
        assert ds.queries == {"q1": "what is ray"}
        assert ds.qrels == {"q1": {"d1": 1, "d2": 0}}

    def test_missing_folder_and_file_are_named(self, small: Path, tmp_path: Path) -> None:
        with pytest.raises(SourceError, match="does not exist"):
            load_beir(tmp_path / "nope")
        (small / "queries.jsonl").unlink()
        with pytest.raises(SourceError, match=r"queries\.jsonl does not exist"):
            load_beir(small)

    def test_bad_json_names_file_and_line(self, small: Path) -> None:
        with (small / "corpus.jsonl").open("a", encoding="utf-8") as f:
            f.write("{not json\n")
        with pytest.raises(SourceError, match=r"corpus\.jsonl:3: invalid JSON"):
            load_beir(small)

    def test_missing_field_and_duplicate_id(self, tmp_path: Path) -> None:
        root = write_set(
            tmp_path / "a",
            corpus=[{"_id": "d1"}],
            queries=[{"_id": "q", "text": "t"}],
            qrels="q\td1\t1\n",
        )
        with pytest.raises(SourceError, match="missing field 'text'"):
            load_beir(root)
        root = write_set(
            tmp_path / "b",
            corpus=[{"_id": "d1", "text": "x"}, {"_id": "d1", "text": "y"}],
            queries=[{"_id": "q", "text": "t"}],
            qrels="q\td1\t1\n",
        )
        with pytest.raises(SourceError, match="duplicate _id 'd1'"):
            load_beir(root)

    def test_qrels_must_reference_known_ids(self, tmp_path: Path) -> None:
        corpus = [{"_id": "d1", "text": "x"}]
        queries = [{"_id": "q", "text": "t"}]
        root = write_set(tmp_path / "a", corpus=corpus, queries=queries, qrels="q\tzz\t1\n")
        with pytest.raises(SourceError, match="corpus-id 'zz'"):
            load_beir(root)
        root = write_set(tmp_path / "b", corpus=corpus, queries=queries, qrels="qq\td1\t1\n")
        with pytest.raises(SourceError, match="query-id 'qq'"):
            load_beir(root)
        root = write_set(tmp_path / "c", corpus=corpus, queries=queries, qrels="q\td1\n")
        with pytest.raises(SourceError, match=r"test\.tsv:1: expected"):
            load_beir(root)
        root = write_set(tmp_path / "d", corpus=corpus, queries=queries, qrels="q\td1\thigh\n")
        with pytest.raises(SourceError, match="not a number"):
            load_beir(root)

    def test_ids_only_still_checks_judgements(self, small: Path, tmp_path: Path) -> None:
        ds = load_beir(small, corpus=False)
        assert ds.corpus == {}
        assert ds.index is not None
        assert ds.index.ids == {"d1", "d2"}
        assert ds.index.lines == 2
        assert ds.qrels == load_beir(small).qrels
        root = write_set(
            tmp_path / "x",
            corpus=[{"_id": "d1", "text": "x"}],
            queries=[{"_id": "q", "text": "t"}],
            qrels="q\tzz\t1\n",
        )
        with pytest.raises(SourceError, match="corpus-id 'zz'"):
            load_beir(root, corpus=False)

    def test_corpus_is_streamed_not_loaded(self, tmp_path: Path) -> None:
        """Records come out one by one: a broken line is met only when reached, and the
        tolerant index counts it as a line the pipeline will see."""
        path = tmp_path / "corpus.jsonl"
        path.write_text(
            json.dumps({"_id": 7, "text": "numeric id"})
            + "\n\n{broken\n"
            + json.dumps({"_id": "7", "text": "same id as a string"})
            + "\n"
            + json.dumps({"_id": "b", "title": "B", "text": "ok"})
            + "\n"
        )
        records = iter_corpus(path)
        assert next(records) == (1, BeirDocument(id="7", title="", text="numeric id"))
        with pytest.raises(SourceError, match=r"corpus\.jsonl:3: invalid JSON"):
            next(records)
        problems: list[tuple[int, str]] = []
        index = index_corpus(path, on_error=lambda line, why: problems.append((line, why)))
        assert index.ids == {"7", "b"}
        assert index.lines == 4
        assert [(line, why.split(":")[0]) for line, why in problems] == [
            (3, "invalid JSON"),
            (4, "duplicate _id '7'"),
        ]

    def test_committed_dev_sets(self) -> None:
        """The fixtures (subsets of the dev sets' shapes, tests/fixtures/README.md) load whole:
        every query judged, every judged passage in the corpus."""
        hotpot = load_beir(BEIR_FIXTURES / "hotpotqa-dev")
        assert (len(hotpot.corpus), len(hotpot.queries)) == (300, 30)
        assert all(len(rel) == 2 for rel in hotpot.qrels.values())
        assert set(hotpot.qrels) == set(hotpot.queries)
        assert {d for rel in hotpot.qrels.values() for d in rel} <= set(hotpot.corpus)
        code = load_beir(BEIR_FIXTURES / "code-dev")
        assert (len(code.corpus), len(code.queries)) == (240, 40)
        assert all(len(rel) == 1 for rel in code.qrels.values())
        ids_only = load_beir(BEIR_FIXTURES / "code-dev", corpus=False)
        assert ids_only.index is not None
        assert ids_only.index.ids == set(code.corpus)
        assert ids_only.qrels == code.qrels
