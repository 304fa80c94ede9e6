"""`split_code`: source code to units on syntax boundaries, whichever way the language allows."""

from __future__ import annotations

from rayweave.ingest.code.brace_layout import brace_layout
from rayweave.ingest.code.brace_scanner import brace_items
from rayweave.ingest.code.imports import index_file
from rayweave.ingest.code.languages import BRACE_LANGUAGES, SPECS, normalize_language
from rayweave.ingest.code.line_windows import line_units
from rayweave.ingest.code.parsing import Source, parser
from rayweave.ingest.code.tree_layout import items_from_nodes, layout
from rayweave.ingest.code.unit_builder import Ctx
from rayweave.ingest.code.units import CodeUnit, CountTokens
from rayweave.ingest.text_spans import trimmed


def split_code(
    code: str,
    language: str | None,
    *,
    count_tokens: CountTokens,
    max_tokens: int,
    min_tokens: int = 0,
) -> list[CodeUnit]:
    """Units of `code` in source order; together they cover every non-blank character.

    Each unit has at most `max_tokens` tokens unless it is one line that alone exceeds it.
    `count_tokens` is the embedding model's counter (called a few times per file, batched).
    """
    if max_tokens < 8:
        raise ValueError("max_tokens must be at least 8")
    lang = normalize_language(language)
    src = Source(code)
    a, b = trimmed(code, 0, len(code))
    if a >= b:
        return []
    ts_parser = parser(lang) if lang in SPECS else None
    if ts_parser is not None:
        spec = SPECS[lang]
        tree = ts_parser.parse(src.data)
        root = tree.root_node
        ctx = Ctx(
            src,
            lang,
            spec,
            index_file(root, spec, src),
            count_tokens,
            max_tokens,
            min(min_tokens, max_tokens),
        )
        items = items_from_nodes(root.children, ctx, 0, len(code))
        return layout(items, ctx, (), "")
    ctx = Ctx(src, lang, None, None, count_tokens, max_tokens, min(min_tokens, max_tokens))
    if lang in BRACE_LANGUAGES or (lang in SPECS and lang != "python"):
        return brace_layout(brace_items(code, 0, len(code)), ctx, (), "")
    return line_units(a, b, ctx, (), "block", "", "")
