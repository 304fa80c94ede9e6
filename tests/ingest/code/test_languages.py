"""The language table: node-type roles per grammar, and names of languages."""

from __future__ import annotations

import itertools

import pytest

from rayweave.ingest.code.languages import ALIASES, BRACE_LANGUAGES, SPECS, normalize_language


class TestLanguageTable:
    def test_a_node_type_has_one_role(self) -> None:
        for spec in SPECS.values():
            roles = [set(spec.containers), set(spec.functions), set(spec.definitions)]
            assert not any(a & b for a, b in itertools.combinations(roles, 2)), spec.name

    def test_aliases_name_known_languages(self) -> None:
        assert set(ALIASES.values()) <= set(SPECS)

    def test_kind_of_a_node_type(self) -> None:
        go = SPECS["go"]
        assert go.kind("method_declaration", "function") == "method"
        assert go.kind("type_declaration", "definition") == "type"
        assert go.kind("not_a_definition", "definition") == "definition"


class TestNormalizeLanguage:
    @pytest.mark.parametrize(
        ("given", "language"),
        [
            ("py", "python"),
            ("  TS ", "typescript"),
            ("C++", "cpp"),
            ("c#", "csharp"),
            ("golang", "go"),
            ("Python", "python"),
            ("move", "move"),
            ("yaml", "yaml"),  # unknown names are kept, lower-cased, for the line fall-back
        ],
    )
    def test_aliases_and_case(self, given: str, language: str) -> None:
        assert normalize_language(given) == language

    def test_no_language_is_the_empty_name(self) -> None:
        assert normalize_language(None) == ""
        assert normalize_language("   ") == ""

    def test_every_spec_and_brace_language_is_its_own_name(self) -> None:
        for name in (*SPECS, *BRACE_LANGUAGES):
            assert normalize_language(name) == name
        assert not set(SPECS) & BRACE_LANGUAGES
