"""`extract_symbols`: what a whole file defines, imports, calls and references."""

from __future__ import annotations

from dataclasses import replace

from rayweave.ingest.code.brace_scanner import brace_definitions
from rayweave.ingest.code.imports import index_file
from rayweave.ingest.code.languages import BRACE_LANGUAGES, SPECS, normalize_language
from rayweave.ingest.code.parsing import Source, parser
from rayweave.ingest.code.regex_symbols import regex_symbols
from rayweave.ingest.code.symbols import collect
from rayweave.ingest.code.units import CodeSymbols, dedupe


def extract_symbols(code: str, language: str) -> CodeSymbols:
    """Definitions, imports, calls and references of a whole file (any language; never raises)."""
    lang = normalize_language(language)
    ts_parser = parser(lang) if lang in SPECS else None
    if ts_parser is None:
        flat = regex_symbols(code, lang)
        if lang in BRACE_LANGUAGES or lang in SPECS:
            return replace(flat, definitions=tuple(brace_definitions(code)))
        return flat
    spec = SPECS[lang]
    src = Source(code)
    tree = ts_parser.parse(src.data)
    index = index_file(tree.root_node, spec, src)
    uses = collect(tree.root_node.named_children, spec, src, index, ())
    return CodeSymbols(
        language=lang,
        definitions=tuple(uses.definitions),
        imports=dedupe([m for m, _n, _o in index.imports]),
        calls=dedupe(uses.calls),
        references=dedupe(uses.references),
    )
