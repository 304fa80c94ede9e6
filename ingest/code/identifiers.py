"""Identifiers as words, for encoders whose vocabularies know `write boolean`, not
`writeBoolean`; and word lists written as text."""

from __future__ import annotations

import re

CAMEL = re.compile(r"[A-Z]+\d*(?=[A-Z][a-z])|[A-Z]?[a-z]+\d*|[A-Z]+\d*|\d+")
IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
# A call through the instance or class itself names the member: `self.save` -> `save`.
SELF = re.compile(r"^(?:self|this|cls|super\(\)|Self)\s*(?:\.|::|->)\s*")


def identifier_words(text: str) -> str:
    """`writeBoolean`, `write_boolean`, `HTTPServer2` -> `write Boolean`, `write boolean`,
    `HTTP Server2`.

    Applied to any text: every compound identifier becomes its words, everything else is kept.
    """

    def split(m: re.Match[str]) -> str:
        parts = CAMEL.findall(m.group(0))
        return " ".join(parts) if len(parts) > 1 else m.group(0)

    return IDENT.sub(split, text)


def word_set(text: str) -> frozenset[str]:
    """The whitespace-separated words of `text`: long keyword tables read as prose."""
    return frozenset(text.split())
