"""The plan of a source file: module -> class -> function (`rayweave.ingest.code`).

Sections are code units, their propositions the functions inside them; the summary is the
title, the module docstring and the signatures the file defines.
"""

from __future__ import annotations

import re

from rayweave.cluster.errors import SourceError
from rayweave.cluster.settings import IngestSettings
from rayweave.cluster.types import ContentType, Document
from rayweave.ingest.chunking.plans import Plan, SectionPlan, Span
from rayweave.ingest.code import CodeUnit, split_code
from rayweave.ingest.metadata import extract_keywords
from rayweave.ingest.sentences import split_sentences
from rayweave.models.protocols import TokenCounter

__all__ = ["plan_code"]


def plan_code(doc: Document, counter: TokenCounter, settings: IngestSettings) -> Plan:
    text = doc.text
    units = split_code(
        text,
        doc.language,
        count_tokens=counter.count_tokens,
        max_tokens=settings.section_max_tokens,
        min_tokens=settings.section_min_tokens,
    )
    if not units:
        raise SourceError(f"{doc.source}: no code to chunk", path=doc.source)
    sections: list[SectionPlan] = []
    for u in units:
        plan = SectionPlan(
            start=u.start,
            end=u.end,
            tokens=u.tokens,
            path=u.path,
            content_type=ContentType.CODE,
            language=u.language,
            unit=u,
        )
        members = [m for m in u.members if (m.start, m.end) != (u.start, u.end)]
        for m in members:
            plan.propositions.append(
                Span(m.start, m.end, m.tokens, m.path, ContentType.CODE, m.language, unit=m)
            )
        sections.append(plan)
    # Summary: title, module docstring, then the signatures the file defines.
    title = doc.title.strip()
    candidates: list[str] = [title] if title else []
    doc_text = _module_docstring(text, doc.language)
    if doc_text and doc_text != title:
        candidates.append(doc_text)
    primary = len(candidates)
    # A code title is a file or a definition's name: words only where docstrings are.
    worded = bool(doc_text) or any(m.docstring for u in units for m in (u, *u.members))
    for u in units:
        for unit in (u, *u.members):
            line = _outline_line(unit)
            if line and line not in candidates:
                candidates.append(line)
    counts = counter.count_tokens(candidates) if candidates else []
    parts = list(zip(candidates, (int(c) for c in counts), strict=True))
    return Plan(
        text,
        sections,
        parts,
        summary_primary=primary,
        outline_separator="\n",
        keywords=extract_keywords(text, code=True),
        outline_only=not worded,
    )


def _outline_line(unit: CodeUnit) -> str:
    """`signature: first sentence of the docstring` for a definition, "" for other code."""
    signature: str = unit.signature
    if not signature or (unit.kind == "part" and not unit.docstring):
        return "" if unit.kind == "part" else signature
    doc = " ".join(unit.docstring.split())
    if doc:
        spans = split_sentences(doc)
        doc = doc[spans[0][0] : spans[0][1]] if spans else doc
        return f"{signature} {doc[:200]}"
    return signature


_PY_DOC = re.compile(r"\A(?:\s*#[^\n]*\n|\s*\n)*\s*[rRuU]?(\"\"\"|''')(.*?)\1", re.DOTALL)


def _module_docstring(text: str, language: str | None) -> str:
    if language == "python":
        m = _PY_DOC.match(text)
        return " ".join(m.group(2).split())[:600] if m else ""
    return ""
