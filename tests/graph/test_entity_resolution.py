"""Entity resolution: which surface forms are entities and how their variants merge."""

from __future__ import annotations

import pytest

from rayweave.graph.entities import EntityResolver, definition_subjects
from rayweave.graph.names import entity_id


class TestResolver:
    def test_case_plural_and_punctuation_merge_into_one_entity(self) -> None:
        r = EntityResolver()
        for s in ("Deployment", "deployments", "DEPLOYMENT", "deployment."):
            r.add(s)
        (row,) = r.rows()
        assert row.id == entity_id("deployment")
        assert set(row.aliases) >= {"deployment", "deployments"}
        assert r.resolve("deployments") == [row.id]

    def test_short_code_name_merges_into_its_unique_qualified_name(self) -> None:
        r = EntityResolver()
        r.add("ray.serve.run", "symbol")
        r.add("run", "symbol")
        r.add("numpy.save", "symbol")
        r.add("torch.save", "symbol")
        r.add("save", "symbol")
        ids = {row.name: row.id for row in r.rows()}
        assert r.resolve("run") == [ids["ray.serve.run"]]
        assert "run" not in ids
        # "save" is ambiguous (numpy.save, torch.save): it stays its own entity.
        assert r.resolve("save") == [ids["save"]]

    def test_known_aliases_reuse_stored_ids(self) -> None:
        r = EntityResolver(known={"ray serve": ["stored-id"]})
        r.add("Ray Serve")
        assert r.resolve("ray serve") == ["stored-id"]
        assert r.rows()[0].id == "stored-id"

    def test_kind_prefers_specific_over_concept_and_title(self) -> None:
        r = EntityResolver()
        r.add("Ada Lovelace", "title", title=True)
        r.add("Ada Lovelace", "PERSON")
        assert r.rows()[0].kind == "PERSON"
        assert r.rows()[0].name == "Ada Lovelace"

    def test_stopwords_and_numbers_are_not_entities(self) -> None:
        r = EntityResolver()
        assert r.add("The") == ""
        assert r.add("1999") == ""
        assert r.rows() == []

    @pytest.mark.parametrize(
        ("text", "names"),
        [
            (
                "Arthur's Magazine (1844–1846) was an American literary periodical.",
                ["Arthur's Magazine"],
            ),
            ("BM25 refers to a ranking function. It is a bag-of-words model.", ["BM25"]),
            ("It is a tool. This is a test. There is a way.", []),
            ("The quick brown fox jumps over the lazy sleeping dog is a sentence.", []),
        ],
    )
    def test_definition_patterns(self, text: str, names: list[str]) -> None:
        assert [n for n, _ in definition_subjects(text)] == names
