"""Character spans over a document's text, shared by the prose and code chunkers."""

from __future__ import annotations


def trimmed(text: str, a: int, b: int) -> tuple[int, int]:
    """[a, b) without the whitespace at either end, so that a chunk never starts or ends blank."""
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b
