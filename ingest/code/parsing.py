"""tree-sitter parsers, one per language and thread, and the source they parse."""

from __future__ import annotations

import logging
import threading
import warnings
from collections.abc import Iterator
from typing import Any

from rayweave.ingest.code.languages import BRACE_LANGUAGES, SPECS

log = logging.getLogger(__name__)

CODE_EXTRA_HINT = "pip install 'rayweave[code]'"
"""tree-sitter and its grammars are the `code` extra; without them code splits on braces/lines."""

_local = threading.local()
_unavailable: dict[str, str] = {}


def parser(language: str) -> Any | None:
    """A cached tree-sitter parser, or None when the grammar cannot be loaded (the `code` extra
    is not installed, or a broken wheel): the caller then splits on braces and lines."""
    if language in _unavailable:
        return None
    parsers: dict[str, Any] = _local.__dict__.setdefault("parsers", {})
    cached = parsers.get(language)
    if cached is None:
        try:
            import tree_sitter

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # older grammars hand out ints
                cached = tree_sitter.Parser(tree_sitter.Language(SPECS[language].load()))
        except ImportError as exc:
            _unavailable[language] = f"{exc}; syntax-aware code chunking needs {CODE_EXTRA_HINT}"
            log.warning("%s code splits on braces and lines: %s", language, _unavailable[language])
            return None
        except Exception as exc:  # noqa: BLE001 - broken wheels (wrong-platform binaries) fall back
            _unavailable[language] = f"{type(exc).__name__}: {exc}"
            return None
        parsers[language] = cached
    return cached


def unavailable_grammars() -> dict[str, str]:
    """Languages whose tree-sitter parser failed to load in this process, and why."""
    return dict(_unavailable)


def supported_languages() -> dict[str, str]:
    """Each known language and how it is split: `tree-sitter`, `braces` or `lines`."""
    out = {}
    for lang in sorted(SPECS):
        out[lang] = "tree-sitter" if parser(lang) is not None else "braces"
    for lang in sorted(BRACE_LANGUAGES):
        out[lang] = "braces"
    return out


class Source:
    """The text, its UTF-8 bytes and a byte -> char offset map (identity for ASCII)."""

    __slots__ = ("_b2c", "ascii", "data", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.data = text.encode("utf-8", "surrogatepass")
        self.ascii = len(self.data) == len(text)
        self._b2c: list[int] | None = None

    def char(self, byte: int) -> int:
        if self.ascii:
            return byte
        if self._b2c is None:
            table = [0] * (len(self.data) + 1)
            b = 0
            for ci, ch in enumerate(self.text):
                n = len(ch.encode("utf-8", "surrogatepass"))
                for k in range(n):
                    table[b + k] = ci
                b += n
            table[b] = len(self.text)
            self._b2c = table
        return self._b2c[min(byte, len(self._b2c) - 1)]

    def node_text(self, node: Any) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "replace")


def walk(node: Any) -> Iterator[Any]:
    """`node` and everything below it, depth first, in source order."""
    cursor = node.walk()
    visited_children = False
    depth = 0
    while True:
        if not visited_children:
            yield cursor.node
            if cursor.goto_first_child():
                depth += 1
                continue
        if depth == 0:
            return
        if cursor.goto_next_sibling():
            visited_children = False
        elif cursor.goto_parent():
            depth -= 1
            visited_children = True
        else:
            return
