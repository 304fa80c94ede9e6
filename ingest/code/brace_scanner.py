"""Boundaries of C-like code without a grammar: statements and `{...}` blocks at depth 0.

The scanner skips comments and strings and needs no parser, so any brace syntax (Move, or a
language whose grammar wheel fails to load) gets module -> declaration -> function boundaries.
"""

from __future__ import annotations

import re

from rayweave.ingest.code.identifiers import word_set
from rayweave.ingest.code.regex_symbols import DEF_KINDS
from rayweave.ingest.code.spans import Item, tile
from rayweave.ingest.code.units import CodeDefinition
from rayweave.ingest.text_spans import trimmed

_BRACE_HEAD = re.compile(
    r"(?:^|\n)[ \t]*"
    r"(?:(?:public(?:\([\w:]+\))?|private|protected|internal|entry|native|inline|static"
    r"|pub(?:\([\w:]+\))?|export|async|abstract|final|override|open|virtual|extern|unsafe|friend"
    r"|data|sealed|suspend)\s+)*"
    r"(module|contract|interface|library|class|struct|enum|trait|impl|namespace|object|script|spec|"
    r"fun|fn|function|func)\b\s*([A-Za-z_0-9][\w:]*)?"
)
_CONTAINER_WORDS = word_set(
    "module contract interface library class trait impl namespace object script"
)
_FUNCTION_WORDS = frozenset({"fun", "fn", "function", "func"})
_COMMENTS_ONLY = re.compile(r"/\*.*?\*/|//[^\n]*|#\[[^\]]*\]", re.DOTALL)


def brace_scan(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Statement spans of [start, end) at depth 0: each ends at `;` or at a `}` back to depth 0."""
    spans: list[tuple[int, int]] = []
    depth = 0
    i = item_start = start
    while i < end:
        c = text[i]
        if c == "/" and i + 1 < end and text[i + 1] == "/":
            nl = text.find("\n", i, end)
            i = end if nl == -1 else nl
            continue
        if c == "/" and i + 1 < end and text[i + 1] == "*":
            close = text.find("*/", i + 2, end)
            i = end if close == -1 else close + 2
            continue
        if c == '"':
            j = i + 1
            while j < end and text[j] != '"' and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth = max(0, depth - 1)
            if depth == 0:
                spans.append((item_start, i + 1))
                item_start = i + 1
        elif c == ";" and depth == 0:
            spans.append((item_start, i + 1))
            item_start = i + 1
        i += 1
    if item_start < end:
        spans.append((item_start, end))
    return spans


def brace_items(text: str, start: int, end: int) -> list[Item]:
    items: list[Item] = []
    for a, b in brace_scan(text, start, end):
        a, b = trimmed(text, a, b)
        if a >= b:
            continue
        brace = text.find("{", a, b)
        head = _COMMENTS_ONLY.sub(
            lambda m: " " * len(m.group()), text[a : brace if brace != -1 else b]
        )
        m = _BRACE_HEAD.search(head)
        if m is None:
            items.append(Item(a, b, "other"))
            continue
        word = m.group(1)
        if word in _CONTAINER_WORDS and brace != -1:
            kind = "container"
        elif word in _FUNCTION_WORDS:
            kind = "function"
        else:
            kind = "definition"
        items.append(Item(a, b, kind, None, (m.group(2) or word).split("::")[-1]))
    merged: list[Item] = []
    for it in items:
        prev = merged[-1] if merged else None
        if prev is not None and prev.kind == "other" and it.kind == "other":
            prev.end = it.end
        elif (
            prev is not None
            and prev.kind == "other"
            and not _COMMENTS_ONLY.sub("", text[prev.start : prev.end]).strip()
        ):
            it.start = prev.start  # leading comments belong to the definition
            merged[-1] = it
        else:
            merged.append(it)
    return tile(merged, text, start, end)


def brace_definitions(code: str) -> list[CodeDefinition]:
    """Definitions found by the brace scanner, qualified by the containers around them."""
    out: list[CodeDefinition] = []
    stack: list[tuple[int, int, tuple[str, ...], int]] = [(0, len(code), (), 0)]
    while stack:
        start, end, prefix, depth = stack.pop()
        for it in brace_items(code, start, end):
            if it.kind == "other" or not it.name:
                continue
            head = _BRACE_HEAD.search(_COMMENTS_ONLY.sub(" ", code[it.start : it.end]))
            word = head.group(1) if head else ""
            out.append(
                CodeDefinition(
                    name=it.name,
                    qualified_name=".".join((*prefix, _full_name(code, it))),
                    kind=DEF_KINDS.get(word, it.kind),
                    start_line=code.count("\n", 0, it.start) + 1,
                    end_line=code.count("\n", 0, it.end) + 1,
                )
            )
            body = brace_body(code, it) if it.kind == "container" and depth < 8 else None
            if body is not None:
                stack.append((*body, (*prefix, _full_name(code, it)), depth + 1))
    out.sort(key=lambda d: d.start_line)
    return out


def _full_name(code: str, it: Item) -> str:
    head = _BRACE_HEAD.search(_COMMENTS_ONLY.sub(" ", code[it.start : it.end]))
    return (head.group(2) if head and head.group(2) else it.name) or it.name


_LEADING_TRIVIA = re.compile(r"(?:\s+|//[^\n]*|/\*.*?\*/|#\[[^\]]*\])*", re.DOTALL)


def brace_core_start(text: str, it: Item) -> int:
    """Where the definition itself starts, after its leading comments and attributes."""
    m = _LEADING_TRIVIA.match(text, it.start, it.end)
    return m.end() if m else it.start


def brace_signature(text: str, it: Item) -> str:
    brace = text.find("{", it.start, it.end)
    head = text[it.start : brace if brace != -1 else it.end]
    lines = [
        ln
        for ln in head.split("\n")
        if ln.strip() and not ln.strip().startswith(("//", "/*", "*", "#["))
    ]
    return " ".join(" ".join(lines).split())[:300]


def brace_doc(text: str, it: Item) -> str:
    comments = re.findall(
        r"^\s*///?\s?(.*)$", text[it.start : text.find("{", it.start, it.end)], re.MULTILINE
    )
    return "\n".join(c.rstrip() for c in comments).strip()


def brace_body(text: str, it: Item) -> tuple[int, int] | None:
    open_ = text.find("{", it.start, it.end)
    close = text.rfind("}", open_ + 1, it.end) if open_ != -1 else -1
    return (open_ + 1, close) if close != -1 else None
