from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rayweave.ingest.sentences import is_dangling, split_sentences


def texts(t: str) -> list[str]:
    return [t[a:b] for a, b in split_sentences(t)]


SPLITS = {
    "plain": (
        "One two. Three four! Five six? Seven.",
        ["One two.", "Three four!", "Five six?", "Seven."],
    ),
    "abbreviations_initials_decimals": (
        "Use a queue, e.g. Redis. Dr. Smith wrote v1.2 of J. R. R. Tolkien's tool. "
        "It costs 3.50 dollars.",
        [
            "Use a queue, e.g. Redis.",
            "Dr. Smith wrote v1.2 of J. R. R. Tolkien's tool.",
            "It costs 3.50 dollars.",
        ],
    ),
    "code_spans_urls_and_paths_do_not_split": (
        "Call `os.path.join(a. B)` first. See https://example.com/a.b. "
        "Then edit config.yaml. Done.",
        [
            "Call `os.path.join(a. B)` first.",
            "See https://example.com/a.b.",
            "Then edit config.yaml.",
            "Done.",
        ],
    ),
    "list_markers_and_blank_lines": (
        "Steps:\n1. Install it.\n2. Run it.\n\nNew paragraph here",
        ["Steps:", "1. Install it.", "2. Run it.", "New paragraph here"],
    ),
    "lowercase_continuation_is_not_a_boundary": (
        "Set the flag, i.e. the value. then go.",
        ["Set the flag, i.e. the value. then go."],
    ),
}


class TestSplitSentences:
    @pytest.mark.parametrize(("t", "expected"), list(SPLITS.values()), ids=list(SPLITS))
    def test_sentences(self, t: str, expected: list[str]) -> None:
        assert texts(t) == expected

    def test_range_offsets_are_absolute(self) -> None:
        t = "XXXX First one. Second one. YYYY"
        spans = split_sentences(t, 5, 27)
        assert [t[a:b] for a, b in spans] == ["First one.", "Second one."]

    @settings(max_examples=300, deadline=None)
    @given(st.text(alphabet=st.sampled_from(list("ab .!?\n`[]()e.g:/1U")), max_size=200))
    def test_spans_cover_every_non_space_character_once(self, t: str) -> None:
        spans = split_sentences(t)
        covered = "".join(t[a:b] for a, b in spans)
        assert re.sub(r"\s", "", covered) == re.sub(r"\s", "", t)
        for (a, b), (c, _d) in itertools.pairwise(spans):
            assert a < b <= c
        for a, b in spans:
            assert t[a:b] == t[a:b].strip()


class TestDangling:
    def test_pronouns_and_connectives(self) -> None:
        for s in (
            "It runs.",
            "This works.",
            "They fail.",
            "However, no.",
            "**Therefore** yes",
            "In addition, x.",
        ):
            assert is_dangling(s), s

    def test_self_contained(self) -> None:
        for s in ("Italy is large.", "Thesis text.", "The worker runs.", "Items are queued."):
            assert not is_dangling(s), s
