"""`code_embed_text`: code rendered for dense encoders, identifiers split into words."""

from __future__ import annotations

from dataclasses import replace

from rayweave.ingest.code.identifiers import identifier_words
from rayweave.ingest.code.languages import normalize_language
from rayweave.ingest.code.split import split_code
from rayweave.ingest.code.units import CodeUnit


def code_embed_text(unit: CodeUnit | str, language: str | None = None, *, title: str = "") -> str:
    """What a dense encoder may see for code: words first, then the code.

    A header in plain words (language, kind, split names of the unit and its parents), the
    docstring, then the code with identifiers split into words. The raw code stays the stored
    text; this only feeds the encoder. Accepts a `CodeUnit` or raw code (plus its language),
    which is parsed for the header. Whether this beats raw code depends on the encoder (on
    code search with all-MiniLM-L6-v2 it does not), which is why `IngestSettings.code_embed`
    defaults to "raw".
    """
    if isinstance(unit, str):
        unit = _unit_for(unit, language)
    parts = []
    head = [unit.language] if unit.language else []
    if unit.kind in ("class", "function", "part", "definition") and unit.name:
        head.append({"part": "part of"}.get(unit.kind, unit.kind))
        head.append(identifier_words(unit.name))
    if len(unit.path) > 1:
        head.append("in " + identifier_words(" ".join(unit.path[:-1])))
    if title:
        head.append(f"({title})")
    if head:
        parts.append(" ".join(head))
    if unit.docstring:
        doc = " ".join(unit.docstring.split())
        parts.append(doc[:400])
    if unit.kind == "part" and unit.context:
        parts.append(identifier_words(unit.context))
    parts.append(identifier_words(unit.text))
    return "\n".join(parts)


def _unit_for(code: str, language: str | None) -> CodeUnit:
    """One unit spanning `code`, named after its first definition (for embed-text headers)."""
    units = split_code(code, language, count_tokens=lambda texts: [0] * len(texts), max_tokens=8)
    named = next((u for u in units if u.name), None)
    lang = normalize_language(language)
    if named is None:
        return CodeUnit(
            kind="block", name="", path=(), language=lang, start=0, end=len(code), text=code
        )
    kind = named.kind if len(units) == 1 else "block"
    return replace(named, kind=kind, start=0, end=len(code), text=code, language=lang)
