"""Stop-word sets: the relationships between them that the graph, ingest and serve code rely on."""

from __future__ import annotations

import pytest

from rayweave.models.stopwords import (
    CODE_KEYWORDS,
    FUNCTION_WORDS,
    KEYWORD_STOPWORDS,
    QUERY_STOPWORDS,
)

ALL_SETS = {
    "FUNCTION_WORDS": FUNCTION_WORDS,
    "KEYWORD_STOPWORDS": KEYWORD_STOPWORDS,
    "QUERY_STOPWORDS": QUERY_STOPWORDS,
    "CODE_KEYWORDS": CODE_KEYWORDS,
}

# Words that carry a subject: no set may swallow them, or entities, keywords and query
# lookups would lose them.
CONTENT_WORDS = ("lease", "retry", "queue", "error", "python", "database", "timeout", "graph")


@pytest.mark.parametrize("name", ALL_SETS)
def test_sets_are_lowercase_single_tokens(name: str) -> None:
    words = ALL_SETS[name]
    assert isinstance(words, frozenset)
    assert words
    # Callers lower-case (or casefold) a token before the lookup.
    assert sorted(w for w in words if w != w.lower() or w != w.casefold()) == []
    assert sorted(w for w in words if not w or any(c.isspace() for c in w)) == []


def test_keyword_stopwords_include_every_function_word() -> None:
    assert FUNCTION_WORDS <= KEYWORD_STOPWORDS
    assert len(KEYWORD_STOPWORDS) > len(FUNCTION_WORDS)
    # The filler of technical prose that would otherwise top a chunk's keywords.
    assert {"use", "example", "returns", "using"} <= KEYWORD_STOPWORDS
    assert not {"use", "example", "returns"} & FUNCTION_WORDS


def test_query_stopwords_stay_a_short_list() -> None:
    assert len(QUERY_STOPWORDS) < len(FUNCTION_WORDS)
    # A short question keeps its content-bearing verbs and nouns.
    for word in ("use", "run", "example", "return", "set", "get", "new", "error"):
        assert word not in QUERY_STOPWORDS, word
    # Question words are dropped from lookups.
    assert {"what", "how", "why", "which", "who", "when", "where"} <= QUERY_STOPWORDS


def test_question_words_are_function_words() -> None:
    assert {"what", "how", "why", "which", "who", "when", "where"} <= FUNCTION_WORDS


def test_articles_are_function_words() -> None:
    # Entity naming exempts exactly these function words when they lead a name ("The Hague").
    assert {"the", "a", "an"} <= FUNCTION_WORDS


def test_code_keywords_cover_language_keywords_not_subjects() -> None:
    assert {"def", "class", "func", "fn", "lambda", "self", "struct", "null", "nil"} <= (
        CODE_KEYWORDS
    )
    assert "self" not in KEYWORD_STOPWORDS  # prose about `self` keeps the word


@pytest.mark.parametrize("word", CONTENT_WORDS)
def test_content_words_are_in_no_set(word: str) -> None:
    for name, words in ALL_SETS.items():
        assert word not in words, name
