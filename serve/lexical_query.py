"""The sparse query of a code search: the question without the words that name its language.

A web-style code question ("python how to read a csv file") names the language and the shape of
a question; an index of one language's functions holds neither in its code, so for a learned
sparse encoder those words only add weight to chance matches (a docstring that says "Python", a
`how` in a comment). Dropped from the sparse query of code-scope questions, they took the sparse
list alone on cosqa-dev from Recall@5 0.336 to 0.448 (MRR@10 0.239 to 0.316); on the library-code
set, whose queries are docstring sentences, nothing changed, and prose questions are never
touched (docs/experiments/2026-11-27-document-view.md). The dense query keeps every word: without
them all-MiniLM-L6-v2 lost MRR@10 0.020 on cosqa-dev (brute force over the raw functions,
docs/experiments/2026-11-28-web-phrased-code-questions.md).

A language name also marks a question phrased for a web search (`web_phrased`), which planning
reads as a question in the asker's words rather than the code's.
"""

from __future__ import annotations

import re

LANGUAGES = (
    "python3",
    "python",
    "py",
    "java",
    "javascript",
    "typescript",
    "golang",
    "ruby",
    "php",
    "csharp",
    "cpp",
    "kotlin",
)
_LANG = "|".join(LANGUAGES)
_PATTERN = re.compile(
    rf"\b(?:(?:in|using|with)\s+(?:{_LANG})|{_LANG}|how\s+(?:to|do\s+i|can\s+i))\b",
    re.IGNORECASE,
)


_LANGUAGE_NAME = re.compile(rf"\b(?:{_LANG})\b", re.IGNORECASE)


def web_phrased(text: str) -> bool:
    """Whether `text` names a programming language, as a question typed into a web search does
    ("python read a csv file"); a "how do I" alone is how prose questions are asked too."""
    return _LANGUAGE_NAME.search(text) is not None


def without_language_words(text: str) -> str:
    """`text` without language names and question openers; `text` itself when nothing is left."""
    kept = " ".join(_PATTERN.sub(" ", text).split())
    return kept or text
