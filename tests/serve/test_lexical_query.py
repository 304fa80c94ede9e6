from __future__ import annotations

import pytest

from rayweave.serve.lexical_query import without_language_words


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
