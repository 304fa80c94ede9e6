"""Identifiers split into words, for encoders that know `write boolean`, not `writeBoolean`."""

from __future__ import annotations

import pytest

from rayweave.ingest.code import identifier_words
from rayweave.ingest.code.identifiers import SELF, word_set


class TestIdentifierWords:
    def test_identifier_words(self) -> None:
        assert (
            identifier_words("writeBoolean write_boolean HTTPServer2")
            == "write Boolean write boolean HTTP Server2"
        )
        assert identifier_words("x = y + 1") == "x = y + 1"

    @pytest.mark.parametrize(
        ("text", "words"),
        [
            ("parseHTTPResponse", "parse HTTP Response"),  # an acronym ends before a capital
            ("getV2Api", "get V2 Api"),  # digits stay with the word before them
            ("snake_case_name", "snake case name"),
            ("ALL_CAPS", "ALL CAPS"),
            ("$scope.applyNow", "$scope.apply Now"),  # `$` is part of an identifier
        ],
    )
    def test_compound_identifiers_become_words(self, text: str, words: str) -> None:
        assert identifier_words(text) == words

    @pytest.mark.parametrize("text", ["__init__", "value", "HTTP", "x2", "100px", "a.b(c)"])
    def test_single_words_are_kept_as_written(self, text: str) -> None:
        assert identifier_words(text) == text


class TestSelfPrefix:
    @pytest.mark.parametrize(
        ("call", "member"),
        [
            ("self.save", "save"),
            ("this->flush", "flush"),
            ("super().close", "close"),
            ("Self::new", "new"),
            ("cls . make", "make"),
        ],
    )
    def test_calls_through_the_instance_name_the_member(self, call: str, member: str) -> None:
        assert SELF.sub("", call) == member

    @pytest.mark.parametrize("call", ["selfish.go", "itself.run", "store.save"])
    def test_other_receivers_are_kept(self, call: str) -> None:
        assert SELF.sub("", call) == call


def test_word_set_reads_a_keyword_table() -> None:
    assert word_set("  fn\tfun\nfn  def ") == frozenset({"fn", "fun", "def"})
    assert word_set("") == frozenset()
