from __future__ import annotations

import pytest

from rayweave.serve.classifier import classify_query, keywords
from rayweave.serve.schemas import ContentScope, QueryType


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("How do I configure retries for failed tasks?", QueryType.ERROR),
        ("TQ-1042 when enqueueing a job", QueryType.ERROR),
        ("Why does the scheduler back off exponentially?", QueryType.WHY),
        ("How do I install the worker on Kubernetes?", QueryType.HOW_TO),
        ("What is a dead-letter queue?", QueryType.WHAT_IS),
        ("What is the difference between a queue and a topic?", QueryType.COMPARISON),
        ("Are Joe Elliott and Paul Meany both keyboardists?", QueryType.COMPARISON),
        ("python check if a variable is iterable", QueryType.CODE),
        ("parse_config() return value", QueryType.CODE),
        (
            "What provinces comprise the area where the 1944 San Juan earthquake took place?",
            QueryType.MULTI_HOP,
        ),
        ("tide tables", QueryType.GENERAL),
    ],
)
def test_query_types(text: str, expected: QueryType) -> None:
    assert classify_query(text).query_type is expected


def test_scope_is_code_for_code_queries_and_docs_otherwise() -> None:
    assert classify_query("python read a file line by line").scope is ContentScope.CODE
    assert classify_query("What is a dead-letter queue?").scope is ContentScope.DOCS


def test_keywords_keep_capitalised_phrases_and_drop_stopwords() -> None:
    kws = keywords("Who directed the film that starred Paul Meany and Joe Elliott?")
    assert "Paul Meany" in kws
    assert "Joe Elliott" in kws
    assert "the" not in [k.casefold() for k in kws]
