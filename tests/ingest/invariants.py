"""The structural contract of a chunked document, checked by several test modules."""

from __future__ import annotations

import re

from rayweave.cluster.settings import IngestSettings
from rayweave.cluster.types import ContentType, Document, Level
from rayweave.ingest.chunking import ChunkedDocument
from rayweave.ingest.sentences import split_sentences
from rayweave.models.protocols import TokenCounter


def word_chars(text: str) -> set[int]:
    return {m.start() for m in re.finditer(r"\w", text)}


def check_invariants(
    doc: Document, cd: ChunkedDocument, s: IngestSettings, counter: TokenCounter
) -> None:
    """The structural contract every chunked document satisfies (see `rayweave.ingest.chunking`)."""
    _check_identity(doc, cd)
    _check_texts(doc, cd)
    _check_coverage(doc, cd)
    _check_links(cd)
    _check_counts(doc, cd, s, counter)


def _check_identity(doc: Document, cd: ChunkedDocument) -> None:
    sections, props = cd.sections, cd.propositions
    assert cd.chunks[0].level == Level.DOCUMENT
    assert len(cd.chunks) == 1 + len(sections) + len(props)
    assert len(cd.embed_texts) == len(cd.chunks)
    assert all(e.strip() for e in cd.embed_texts)
    ids = [c.id for c in cd.chunks]
    assert len(set(ids)) == len(ids)
    for c in cd.chunks:
        assert c.doc_id == doc.id
        assert c.source == doc.source
        assert c.title == doc.title


def _check_texts(doc: Document, cd: ChunkedDocument) -> None:
    """Every level's text comes from the document."""
    text = cd.text
    for c in (*cd.sections, *cd.propositions):
        assert c.text == text[c.start_char : c.end_char]
        assert c.text.strip() == c.text
        assert c.text
    for line in cd.summary.text.split("\n"):
        for part in line.split("; "):
            if doc.content_type == ContentType.CODE:  # "signature docstring-sentence": both quoted
                assert part == doc.title or all(w in text for w in part.split()), part
            else:
                assert part == doc.title or part in text, part


def _check_coverage(doc: Document, cd: ChunkedDocument) -> None:
    """Sections in reading order cover all content; leaves (propositions and childless
    sections) tile it exactly once."""
    text, sections = cd.text, cd.sections
    starts = [c.start_char for c in sections]
    assert starts == sorted(starts)
    covered: set[int] = set()
    for c in sections:
        covered |= set(range(c.start_char, c.end_char))
    assert word_chars(text) <= covered
    leaves = [c for c in sections if not c.children_ids] + list(cd.propositions)
    seen: list[int] = []
    for c in leaves:
        seen.extend(i for i in range(c.start_char, c.end_char) if not text[i].isspace())
    assert len(seen) == len(set(seen)), "leaves overlap"
    if doc.content_type != ContentType.CODE:
        # Prose propositions tile their section; a code section's propositions are the
        # functions inside it (module -> class -> function), not the code between them.
        assert word_chars(text) <= set(seen)


def _check_links(cd: ChunkedDocument) -> None:
    """Structure: parent, children, prev/next, positions."""
    summary, sections, props = cd.summary, cd.sections, cd.propositions
    assert summary.parent_id is None
    assert summary.children_ids == tuple(c.id for c in sections)
    for level_chunks in (sections, props):
        for k, c in enumerate(level_chunks):
            assert c.position == k
            assert c.prev_id == (level_chunks[k - 1].id if k else None)
            assert c.next_id == (level_chunks[k + 1].id if k + 1 < len(level_chunks) else None)
    by_id = {c.id: c for c in cd.chunks}
    for sec in sections:
        assert sec.parent_id == summary.id
        kids = [by_id[i] for i in sec.children_ids]
        assert all(k.parent_id == sec.id and k.level == Level.PROPOSITION for k in kids)
        assert [k.start_char for k in kids] == sorted(k.start_char for k in kids)
        for kid in kids:
            assert sec.start_char <= kid.start_char
            assert kid.end_char <= sec.end_char
        if len(kids) == 1:
            assert kids[0].text != sec.text, "a proposition repeating its section is not emitted"
    assert sum(len(s.children_ids) for s in sections) == len(props)


def _check_counts(
    doc: Document, cd: ChunkedDocument, s: IngestSettings, counter: TokenCounter
) -> None:
    """Token counts are the model's counts of the stored text; bounds hold."""
    summary, sections, props = cd.summary, cd.sections, cd.propositions
    count = counter.count_tokens
    assert [c.token_count for c in (*sections, *props)] == count(
        [c.text for c in (*sections, *props)]
    )
    assert summary.token_count <= s.summary_max_tokens or len(summary.text.split("\n")) == 1
    for sec in sections:
        assert sec.token_count <= s.section_max_tokens, (sec.token_count, sec.text)
    for p in props:
        if doc.content_type == ContentType.CODE:  # whole functions: bounded like sections
            assert p.token_count <= s.section_max_tokens
            continue
        if p.token_count > s.proposition_max_tokens:  # one indivisible piece (+ a small attachment)
            units = _blocks(p.text)
            biggest = max(count(units))
            assert biggest > s.proposition_max_tokens or len(split_sentences(p.text)) == 1, p.text
            assert p.token_count - biggest < s.proposition_min_tokens or len(units) == 1


_FENCE = re.compile(r"```.*?```", re.DOTALL)


def _blocks(text: str) -> list[str]:
    """Blank-line separated blocks, fenced code kept as one block."""
    out: list[str] = []
    cursor = 0
    for m in _FENCE.finditer(text):
        out.extend(b for b in re.split(r"\n\n+", text[cursor : m.start()]) if b.strip())
        out.append(m.group())
        cursor = m.end()
    out.extend(b for b in re.split(r"\n\n+", text[cursor:]) if b.strip())
    return out
