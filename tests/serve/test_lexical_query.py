from __future__ import annotations

import pytest

from rayweave.serve.lexical_query import web_phrased, without_language_words


@pytest.mark.parametrize(
    ("query", "sparse"),
    [
        ("python how to read a csv file", "read a csv file"),
        ("How do I sort a dict by value in Python?", "sort a dict by value ?"),
        ("convert string to datetime using python3", "convert string to datetime"),
        ("pyramid of numbers", "pyramid of numbers"),  # words, not prefixes
        ("python", "python"),  # nothing left: the query stays whole
    ],
)
def test_language_names_and_question_openers_leave_the_sparse_query(
    query: str, sparse: str
) -> None:
    assert without_language_words(query) == sparse


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("python how to read a csv file", True),
        ("convert string to datetime using python3", True),
        ("How do I sort a dict by value?", False),  # prose questions open this way too
        ("pyramid of numbers", False),
        ("Return the value of the named header", False),
    ],
)
def test_a_language_name_marks_a_web_phrased_question(query: str, expected: bool) -> None:
    assert web_phrased(query) is expected
