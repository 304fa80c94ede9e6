"""Documents -> three levels of chunks (seed 002), with relationship metadata (seed 000).

Level 1, DOCUMENT: one summary per document, extractive by default (title, lead sentences,
headings; for code the module docstring and the signatures it defines), or an LLM's summary when
`summarize` is given. Level 2, SECTION: `section_min_tokens`-`section_max_tokens` semantic
sections, split on headings first (a heading's subtree stays whole when it fits; small siblings
merge), then, inside a heading region that is still too long, at topic shifts (boundaries where
the similarity of the sentence windows either side drops well below the region's mean, when
`embed` is given) or else with a sliding window whose sections overlap by about
`section_overlap_tokens` of whole sentences. Level 3, PROPOSITION: `proposition_min_tokens`-
`proposition_max_tokens` groups of whole sentences inside a section's own (non-overlapping)
text; a sentence opening with a dangling pronoun or connective ("It", "However", ...) stays with
the sentence before it whenever the group still fits. Code follows module -> class -> function
(`rayweave.ingest.code`): sections are code units, their propositions the functions inside them.

Every section and proposition is an exact slice of `ChunkedDocument.text` (the document text, or
for HTML and notebooks their Markdown rendering): `chunk.text == text[start_char:end_char]`.
Sections tile the text in reading order (only window overlaps repeat text); prose propositions
tile their section's own text. Sizes are in the embedding model's tokens, counted in one batched
call per document (counts of whitespace-separated pieces add up exactly for WordPiece).

Bounds hold except for indivisible units, which are kept whole rather than cut mid-way: a
sentence longer than `proposition_max_tokens` is a proposition of its own; a code block,
table or function over `section_max_tokens` is split on lines or statements, but one line that
alone exceeds the limit stays whole; such an oversize piece may carry neighbours worth less than
the minimum (the "Schema:" line before it). A heading region smaller than `section_min_tokens`
with no sibling to merge with stays small (structure beats size), as does a short document.

A section whose only proposition would repeat it word for word gets no propositions (the same
text embedded twice adds cost and duplicate hits, nothing else); the section is then the leaf.

Ids are `stable_id(doc id, level, occurrence, content hash)`: unchanged text keeps its id even
when an edit elsewhere shifts positions, so re-ingesting changes only what changed.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rayweave.cluster.errors import SourceError
from rayweave.cluster.settings import IngestSettings
from rayweave.cluster.types import Chunk, ContentType, Document, Level, content_hash, stable_id
from rayweave.ingest.code import CodeUnit, code_embed_text, identifier_words, split_code
from rayweave.ingest.metadata import chunk_metadata, extract_keywords
from rayweave.ingest.readers import ReadError
from rayweave.ingest.segmenter import segment
from rayweave.ingest.sentences import is_dangling, split_sentences
from rayweave.ingest.structure import (
    Structured,
    parse_html,
    parse_markdown,
    parse_notebook,
    parse_plain,
    parse_rst,
)
from rayweave.models.protocols import TokenCounter

__all__ = [
    "ChunkBatch",
    "ChunkedDocument",
    "Embed",
    "Summarize",
    "chunk_document",
    "chunk_documents",
]

Embed = Callable[[list[str]], np.ndarray]
Summarize = Callable[[Document], str]

_TOPIC_WINDOW = 2
_LEAD_SENTENCES = 3
_SUMMARY_HEADINGS_LEVEL = 3
_MAX_AGGREGATE = 48


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkedDocument:
    """All chunks of one document: the summary, then sections, then propositions.

    `embed_texts[i]` is what the encoders should see for `chunks[i]` (context header, links
    reduced to their text, code rendered in words); `chunks[i].text` is what is stored and shown.
    """

    doc_id: str
    source: str
    text: str
    chunks: tuple[Chunk, ...]
    embed_texts: tuple[str, ...]
    warnings: tuple[str, ...] = ()

    @property
    def summary(self) -> Chunk:
        return self.chunks[0]

    @property
    def sections(self) -> tuple[Chunk, ...]:
        return tuple(c for c in self.chunks if c.level == Level.SECTION)

    @property
    def propositions(self) -> tuple[Chunk, ...]:
        return tuple(c for c in self.chunks if c.level == Level.PROPOSITION)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkBatch:
    chunked: list[ChunkedDocument] = field(default_factory=list)
    errors: list[ReadError] = field(default_factory=list)


# -- pieces: the atoms sections and propositions are made of --------------------------------------


class _Piece:
    """A sentence, heading, code block or table row group: never cut by sections or propositions."""

    __slots__ = ("block", "dangling", "end", "heading", "kind", "lang", "level", "start", "tokens")

    def __init__(
        self,
        start: int,
        end: int,
        kind: str,
        block: int,
        *,
        level: int = 0,
        lang: str | None = None,
        heading: str = "",
        dangling: bool = False,
    ) -> None:
        self.start = start
        self.end = end
        self.kind = kind  # sentence | heading | code | table
        self.block = block
        self.level = level
        self.lang = lang
        self.heading = heading
        self.dangling = dangling
        self.tokens = 0


def _pieces(st: Structured) -> list[_Piece]:
    text = st.text
    out: list[_Piece] = []
    for bi, b in enumerate(st.blocks):
        if b.kind == "heading":
            out.append(_Piece(b.start, b.end, "heading", bi, level=b.level, heading=b.heading))
        elif b.kind in ("code", "table"):
            out.append(_Piece(b.start, b.end, b.kind, bi, lang=b.lang))
        else:
            for s, e in split_sentences(text, b.start, b.end):
                out.append(_Piece(s, e, "sentence", bi, dangling=is_dangling(text[s : s + 40])))
    return out


_CLAUSE = re.compile(r"[;,:]\s+|\s+[-–—]\s+|\n")
_SPACE = re.compile(r"\s+")


def _split_oversize(
    text: str, pieces: list[_Piece], counter: TokenCounter, limit: int
) -> list[_Piece]:
    """Cut pieces over `limit` tokens: code and tables by lines, sentences at clauses, then words.

    Repeats until every piece fits or is one line/word that cannot be cut. Counts are batched.
    """
    for _round in range(6):
        if all(p.tokens <= limit for p in pieces):
            return pieces
        out: list[_Piece] = []
        fresh: list[_Piece] = []
        for p in pieces:
            if p.tokens <= limit:
                out.append(p)
                continue
            spans = _cut_spans(text, p, limit)
            if len(spans) <= 1:
                out.append(p)  # indivisible
                continue
            for a, b in spans:
                q = _Piece(
                    a,
                    b,
                    p.kind,
                    p.block,
                    level=p.level,
                    lang=p.lang,
                    heading=p.heading,
                    dangling=p.dangling and a == p.start,
                )
                out.append(q)
                fresh.append(q)
        if not fresh:
            return out
        for q, n in zip(
            fresh, counter.count_tokens([text[q.start : q.end] for q in fresh]), strict=True
        ):
            q.tokens = int(n)
        pieces = out
    return pieces


def _cut_spans(text: str, p: _Piece, limit: int) -> list[tuple[int, int]]:
    """Candidate sub-spans of an oversize piece, each aiming at about half the limit."""
    a, b = p.start, p.end
    share = max(1, math.ceil(p.tokens / max(1, limit // 2)))  # how many parts we want
    target_chars = max(1, (b - a) // share)
    if p.kind in ("code", "table") or "\n" in text[a:b]:
        cuts = [m.end() for m in re.finditer(r"\n", text[a:b])]
    else:
        cuts = [m.end() for m in _CLAUSE.finditer(text[a:b])]
        if not cuts or max(_gaps(cuts, b - a)) > 2 * target_chars:
            cuts = [m.end() for m in _SPACE.finditer(text[a:b])]
    if not cuts:
        return [(a, b)]
    spans: list[tuple[int, int]] = []
    start = 0
    last_cut = 0
    for c in cuts:
        if c - start >= target_chars and last_cut > start:
            spans.append((start, last_cut))
            start = last_cut
        last_cut = c
    spans.append((start, b - a))
    out = []
    for s, e in spans:
        s2, e2 = _trim(text, a + s, a + e)
        if s2 < e2:
            out.append((s2, e2))
    return out


def _gaps(cuts: list[int], length: int) -> list[int]:
    points = [0, *cuts, length]
    return [y - x for x, y in itertools.pairwise(points)]


def _trim(text: str, a: int, b: int) -> tuple[int, int]:
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b


# -- plans: what becomes a chunk, before ids and metadata ----------------------------------------


@dataclass(slots=True)
class _Span:
    start: int
    end: int
    tokens: int
    path: tuple[str, ...]
    content_type: ContentType
    language: str | None = None
    unit: CodeUnit | None = None


@dataclass(slots=True)
class _SectionPlan(_Span):
    propositions: list[_Span] = field(default_factory=list)


@dataclass(slots=True)
class _Plan:
    text: str
    sections: list[_SectionPlan]
    summary_parts: list[tuple[str, int]]  # (text, tokens): title, lead, then the outline
    summary_primary: int = 2  # leading parts that are lines of their own (title, lead)
    outline_separator: str = "; "
    keywords: tuple[str, ...] = ()
    warnings: list[str] = field(default_factory=list)


# -- heading tree and sections -------------------------------------------------------------------


@dataclass(slots=True)
class _Node:
    start: int
    end: int
    level: int
    path: tuple[str, ...]
    children: list[_Node] = field(default_factory=list)


@dataclass(slots=True)
class _Sec:
    start: int  # first piece, including a window overlap
    core: int  # first piece of the section's own text
    end: int
    path: tuple[str, ...]
    whole: bool


def _tree(pieces: list[_Piece]) -> _Node:
    root = _Node(0, len(pieces), 0, ())
    stack = [root]
    for i, p in enumerate(pieces):
        if p.kind != "heading":
            continue
        while len(stack) > 1 and stack[-1].level >= p.level:
            stack.pop().end = i
        parent = stack[-1]
        node = _Node(i, len(pieces), p.level, (*parent.path, p.heading or "untitled"))
        parent.children.append(node)
        stack.append(node)
    return root


class _Sectioner:
    """Recursive heading-first sectioning over one document's pieces."""

    def __init__(
        self,
        text: str,
        pieces: list[_Piece],
        settings: IngestSettings,
        vectors: dict[int, np.ndarray] | None,
    ) -> None:
        self.text = text
        self.pieces = pieces
        self.s = settings
        self.vectors = vectors
        self.prefix = [0]
        for p in pieces:
            self.prefix.append(self.prefix[-1] + p.tokens)

    def tokens(self, a: int, b: int) -> int:
        return self.prefix[b] - self.prefix[a]

    def build(self, node: _Node, carry: int | None = None) -> list[_Sec]:
        a = node.start if carry is None else carry
        b = node.end
        smax = self.s.section_max_tokens
        if a >= b:
            return []
        if self.tokens(a, b) <= smax:
            return [_Sec(a, a, b, node.path, True)]
        if not node.children:
            return self.split_region(a, b, node.path)
        units: list[list[_Sec]] = []
        first_child = node.children[0].start
        carry_next: int | None = None
        if first_child > a:
            intro = self.tokens(a, first_child)
            if intro < self.s.proposition_min_tokens:
                carry_next = a  # a bare heading or one short line introduces the first child
            elif intro <= smax:
                units.append([_Sec(a, a, first_child, node.path, True)])
            else:
                units.append(self.split_region(a, first_child, node.path))
        for k, child in enumerate(node.children):
            units.append(self.build(child, carry_next if k == 0 else None))
        return self.merge(units, node.path)

    def merge(self, units: list[list[_Sec]], path: tuple[str, ...]) -> list[_Sec]:
        """Merge neighbouring whole subtrees while one is under the minimum and both fit."""
        out: list[_Sec] = []
        smin, smax = self.s.section_min_tokens, self.s.section_max_tokens
        for unit in units:
            if len(unit) == 1 and unit[0].whole and out and out[-1].whole:
                prev, cur = out[-1], unit[0]
                small = (
                    self.tokens(prev.start, prev.end) < smin
                    or self.tokens(cur.start, cur.end) < smin
                )
                if small and self.tokens(prev.start, cur.end) <= smax:
                    out[-1] = _Sec(
                        prev.start, prev.start, cur.end, _common(prev.path, cur.path, path), True
                    )
                    continue
            out.extend(unit)
        return out

    def split_region(self, a: int, b: int, path: tuple[str, ...]) -> list[_Sec]:
        """A heading region over the limit: topic shifts when vectors exist, else sliding windows."""
        s = self.s
        pieces = self.pieces[a:b]
        counts = [p.tokens for p in pieces]
        topic = self.vectors is not None and sum(1 for i in range(a, b) if i in self.vectors) >= 3
        overlap = 0 if topic else s.section_overlap_tokens
        overlap = min(overlap, s.section_max_tokens // 4)
        cmax = s.section_max_tokens - overlap
        cmin = max(1, min(s.section_min_tokens - overlap, cmax))
        cuts = self.cut_costs(a, b, topic)
        groups = segment(counts, min_tokens=cmin, max_tokens=cmax, cut_cost=cuts)
        out: list[_Sec] = []
        for gi, (i, j) in enumerate(groups):
            start = a + i
            if gi > 0 and overlap > 0:
                budget = overlap
                while start > a + groups[gi - 1][0] + 1 and self.pieces[start - 1].tokens <= budget:
                    if self.pieces[start - 1].kind == "heading":
                        break
                    budget -= self.pieces[start - 1].tokens
                    start -= 1
            out.append(_Sec(start, a + i, a + j, path, False))
        return out

    def cut_costs(self, a: int, b: int, topic: bool) -> list[float]:
        """Cost of cutting before each piece: structure first, then (topic mode) similarity.

        In topic mode a cut where the similarity across the boundary is well below the region's
        mean is rewarded (negative cost), so a real topic shift becomes a boundary even when a
        section could have held more.
        """
        pieces = self.pieces
        costs = [0.0] * (b - a)
        shift = self.topic_scores(a, b) if topic else None
        inside = 0.2 if topic else 0.6
        for k in range(1, b - a):
            prev, cur = pieces[a + k - 1], pieces[a + k]
            if prev.kind == "heading":
                cost = 10.0
            elif cur.block == prev.block:
                cost = inside
            else:
                cost = 0.0
            if cur.dangling:
                cost += 0.8
            if self.text[prev.end - 1 : prev.end] == ":":
                cost += 0.8
            if shift is not None:
                cost += shift[k]
            costs[k] = cost
        return costs

    def topic_scores(self, a: int, b: int) -> list[float]:
        """Per boundary: similarity of the sentence windows either side, as a z-score (scaled)."""
        assert self.vectors is not None
        sims = [math.nan] * (b - a)
        for k in range(1, b - a):
            left = [
                self.vectors[i]
                for i in range(a + max(0, k - _TOPIC_WINDOW), a + k)
                if i in self.vectors
            ]
            right = [
                self.vectors[i]
                for i in range(a + k, min(b, a + k + _TOPIC_WINDOW))
                if i in self.vectors
            ]
            if not left or not right:
                continue
            lv, rv = np.mean(left, axis=0), np.mean(right, axis=0)
            denom = float(np.linalg.norm(lv) * np.linalg.norm(rv)) or 1.0
            sims[k] = float(lv @ rv) / denom
        valid = [x for x in sims[1:] if not math.isnan(x)]
        if len(valid) < 2:
            return [0.0] * (b - a)
        mean = sum(valid) / len(valid)
        std = math.sqrt(sum((x - mean) ** 2 for x in valid) / len(valid)) or 1.0
        return [0.0 if math.isnan(x) else max(-1.2, min(1.2, 0.6 * (x - mean) / std)) for x in sims]


def _common(p: tuple[str, ...], q: tuple[str, ...], fallback: tuple[str, ...]) -> tuple[str, ...]:
    n = 0
    while n < min(len(p), len(q)) and p[n] == q[n]:
        n += 1
    common = p[:n]
    return common if len(common) >= len(fallback) else fallback


def _regions_to_split(root: _Node, sec: _Sectioner) -> list[tuple[int, int]]:
    """Piece ranges the sectioner will split by size (to embed their sentences in one call)."""
    out: list[tuple[int, int]] = []
    smax = sec.s.section_max_tokens
    stack = [root]
    while stack:
        node = stack.pop()
        if sec.tokens(node.start, node.end) <= smax:
            continue
        if not node.children:
            out.append((node.start, node.end))
            continue
        first = node.children[0].start
        if sec.tokens(node.start, first) > smax:
            out.append((node.start, first))
        stack.extend(node.children)
    return out


# -- propositions --------------------------------------------------------------------------------


def _propositions(
    pieces: list[_Piece], a: int, b: int, text: str, settings: IngestSettings
) -> list[tuple[int, int]]:
    """Segment a section into propositions, each heading region on its own.

    A heading opens a new proposition: merged sections hold several small headed subtrees, and
    a proposition that ends with the next subtree's heading would be indexed under the wrong
    subject (the heading names what follows it, never what precedes it).
    """
    out: list[tuple[int, int]] = []
    start = a
    for k in range(a + 1, b):
        if pieces[k].kind == "heading" and pieces[k - 1].kind != "heading":
            out.extend(_segment_region(pieces, start, k, text, settings))
            start = k
    out.extend(_segment_region(pieces, start, b, text, settings))
    return out


def _segment_region(
    pieces: list[_Piece], a: int, b: int, text: str, settings: IngestSettings
) -> list[tuple[int, int]]:
    pmin, pmax = settings.proposition_min_tokens, settings.proposition_max_tokens
    counts = [p.tokens for p in pieces[a:b]]
    costs = [0.0] * (b - a)
    for k in range(1, b - a):
        prev, cur = pieces[a + k - 1], pieces[a + k]
        cost = 0.0 if cur.block != prev.block else 0.15
        if cur.dangling:
            cost += 3.0
        if prev.kind == "heading":
            cost += 10.0
        if text[prev.end - 1 : prev.end] == ":":
            cost += 1.0
        costs[k] = cost
    return [
        (a + i, a + j) for i, j in segment(counts, min_tokens=pmin, max_tokens=pmax, cut_cost=costs)
    ]


# -- planning per content type -------------------------------------------------------------------


def _structure(doc: Document) -> Structured:
    match doc.content_type:
        case ContentType.MARKDOWN:
            return parse_markdown(doc.text)
        case ContentType.RST:
            return parse_rst(doc.text)
        case ContentType.HTML:
            return parse_html(doc.text)
        case ContentType.NOTEBOOK:
            return parse_notebook(doc.text)
        case _:
            return parse_plain(doc.text)


def _span_type(pieces: Sequence[_Piece], doc: Document) -> tuple[ContentType, str | None]:
    if pieces and all(p.kind == "code" for p in pieces):
        return ContentType.CODE, pieces[0].lang or (
            doc.language if doc.content_type == ContentType.CODE else None
        )
    return doc.content_type, doc.language


def _plan_prose(
    doc: Document, counter: TokenCounter, settings: IngestSettings, embed: Embed | None
) -> _Plan:
    st = _structure(doc)
    text = st.text
    pieces = _pieces(st)
    if not pieces:
        raise SourceError(
            f"{doc.source}: no text to chunk after parsing {doc.content_type.value}",
            path=doc.source,
        )
    title = doc.title.strip()
    counts = counter.count_tokens([text[p.start : p.end] for p in pieces] + [title])
    for p, n in zip(pieces, counts, strict=False):
        p.tokens = int(n)
    title_tokens = int(counts[-1])
    pieces = _split_oversize(text, pieces, counter, settings.section_max_tokens)

    root = _tree(pieces)
    sectioner = _Sectioner(text, pieces, settings, None)
    warnings: list[str] = []
    if embed is not None:
        regions = _regions_to_split(root, sectioner)
        wanted = [i for a, b in regions for i in range(a, b) if pieces[i].kind == "sentence"]
        if len(wanted) >= 3:
            try:
                vecs = np.asarray(
                    embed([text[pieces[i].start : pieces[i].end] for i in wanted]), dtype=np.float32
                )
                if vecs.shape[0] != len(wanted):
                    raise ValueError(
                        f"embed returned {vecs.shape[0]} vectors for {len(wanted)} texts"
                    )
                sectioner.vectors = {i: vecs[k] for k, i in enumerate(wanted)}
            except Exception as exc:  # topic splitting is an optimisation: fall back to windows
                warnings.append(f"topic-shift embedding failed ({exc}); sliding windows used")
    secs = sectioner.build(root)

    sections: list[_SectionPlan] = []
    for sec in secs:
        span_pieces = pieces[sec.start : sec.end]
        ctype, lang = _span_type(span_pieces, doc)
        plan = _SectionPlan(
            start=pieces[sec.start].start,
            end=pieces[sec.end - 1].end,
            tokens=sectioner.tokens(sec.start, sec.end),
            path=sec.path,
            content_type=ctype,
            language=lang,
        )
        props = _propositions(pieces, sec.core, sec.end, text, settings)
        if not (len(props) == 1 and sec.core == sec.start):
            for i, j in props:
                ptype, plang = _span_type(pieces[i:j], doc)
                plan.propositions.append(
                    _Span(
                        pieces[i].start,
                        pieces[j - 1].end,
                        sectioner.tokens(i, j),
                        sec.path,
                        ptype,
                        plang,
                    )
                )
        sections.append(plan)

    parts, primary = _prose_summary_parts(text, pieces, title, title_tokens, settings)
    return _Plan(text, sections, parts, summary_primary=primary, warnings=warnings)


def _prose_summary_parts(
    text: str, pieces: list[_Piece], title: str, title_tokens: int, settings: IngestSettings
) -> tuple[list[tuple[str, int]], int]:
    """Title, lead sentences (first prose paragraph) and the heading outline, with token counts."""
    parts: list[tuple[str, int]] = [(title, title_tokens)] if title else []
    lead_budget = int(settings.summary_max_tokens * 0.6)
    lead: list[_Piece] = []
    lead_tokens = 0
    for p in pieces:
        if p.kind != "sentence":
            if lead and p.kind == "heading":
                break
            continue
        if len(lead) >= _LEAD_SENTENCES or (lead and lead_tokens + p.tokens > lead_budget):
            break
        if lead and p.block != lead[-1].block:
            break
        lead.append(p)
        lead_tokens += p.tokens
    if lead:
        parts.append((text[lead[0].start : lead[-1].end], lead_tokens))
    primary = len(parts)
    for p in pieces:
        if (
            p.kind == "heading"
            and p.level <= _SUMMARY_HEADINGS_LEVEL
            and p.heading
            and p.heading != title
        ):
            parts.append((p.heading, max(1, p.tokens - 1)))
    return parts, primary


def _plan_code(doc: Document, counter: TokenCounter, settings: IngestSettings) -> _Plan:
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
    sections: list[_SectionPlan] = []
    for u in units:
        plan = _SectionPlan(
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
                _Span(m.start, m.end, m.tokens, m.path, ContentType.CODE, m.language, unit=m)
            )
        sections.append(plan)
    # Summary: title, module docstring, then the signatures the file defines.
    title = doc.title.strip()
    candidates: list[str] = [title] if title else []
    doc_text = _module_docstring(text, doc.language)
    if doc_text and doc_text != title:
        candidates.append(doc_text)
    primary = len(candidates)
    for u in units:
        for unit in (u, *u.members):
            line = _outline_line(unit)
            if line and line not in candidates:
                candidates.append(line)
    counts = counter.count_tokens(candidates) if candidates else []
    parts = list(zip(candidates, (int(c) for c in counts), strict=True))
    return _Plan(
        text,
        sections,
        parts,
        summary_primary=primary,
        outline_separator="\n",
        keywords=extract_keywords(text, code=True),
    )


def _outline_line(unit: CodeUnit) -> str:
    """`signature: first sentence of the docstring` for a definition, "" for other code."""
    if not unit.signature or (unit.kind == "part" and not unit.docstring):
        return "" if unit.kind == "part" else unit.signature
    doc = " ".join(unit.docstring.split())
    if doc:
        spans = split_sentences(doc)
        doc = doc[spans[0][0] : spans[0][1]] if spans else doc
        return f"{unit.signature} {doc[:200]}"
    return unit.signature


_PY_DOC = re.compile(r"\A(?:\s*#[^\n]*\n|\s*\n)*\s*[rRuU]?(\"\"\"|''')(.*?)\1", re.DOTALL)


def _module_docstring(text: str, language: str | None) -> str:
    if language == "python":
        m = _PY_DOC.match(text)
        return " ".join(m.group(2).split())[:600] if m else ""
    return ""


# -- summary -------------------------------------------------------------------------------------


def _pack_summary(plan: _Plan, budget: int) -> tuple[str, int]:
    """Title and lead as lines, then as much of the outline (headings, signatures) as fits."""
    lines: list[str] = []
    total = 0
    for part, n in plan.summary_parts[: plan.summary_primary]:
        if part and (not lines or total + n <= budget):
            lines.append(part)
            total += n
    outline: list[str] = []
    for part, n in plan.summary_parts[plan.summary_primary :]:
        if total + n + 1 > budget:
            break
        outline.append(part)
        total += n + 1
    if outline:
        lines.append(plan.outline_separator.join(outline))
    return "\n".join(lines), total


def _summary(
    doc: Document,
    plan: _Plan,
    counter: TokenCounter,
    settings: IngestSettings,
    summarize: Summarize | None,
) -> tuple[str, int]:
    if summarize is not None:
        try:
            generated = (summarize(doc) or "").strip()
        except Exception as exc:  # an LLM outage must not stop ingestion
            plan.warnings.append(
                f"LLM summary failed ({type(exc).__name__}: {exc}); extractive summary used"
            )
            generated = ""
        if generated:
            sentences = [generated[a:b] for a, b in split_sentences(generated)]
            counts = counter.count_tokens(sentences)
            kept: list[str] = []
            total = 0
            for s, n in zip(sentences, counts, strict=True):
                if kept and total + n > settings.summary_max_tokens:
                    break
                kept.append(s)
                total += int(n)
            return " ".join(kept), total
    text, total = _pack_summary(plan, settings.summary_max_tokens)
    if not text:
        first = plan.sections[0]
        text = plan.text[first.start : first.end]
        total = first.tokens
    return text, total


# -- assembly ------------------------------------------------------------------------------------

_LINK_TEXT = re.compile(r"!?\[([^\]\n]*)\]\([^)\n]*\)")
_HTML_TAG = re.compile(r"</?[A-Za-z][^>\n]*>")


def _prose_embed_text(text: str, header: str) -> str:
    body = _HTML_TAG.sub(" ", _LINK_TEXT.sub(r"\1", text))
    if header and not body.lstrip("# ").startswith(header):
        return f"{header}\n{body}"
    return body


def _header(title: str, path: tuple[str, ...]) -> str:
    return " > ".join(p for p in (title, *path) if p)


class _Ids:
    """Content-derived ids; `occurrence` separates equal texts on one level of one document."""

    def __init__(self, doc_id: str) -> None:
        self.doc_id = doc_id
        self.seen: dict[tuple[str, str], int] = {}

    def __call__(self, level: Level, text: str) -> str:
        digest = content_hash(text)
        key = (level.value, digest)
        n = self.seen.get(key, 0)
        self.seen[key] = n + 1
        return stable_id(self.doc_id, level.value, n, digest)


def _assemble(
    doc: Document, plan: _Plan, summary_text: str, summary_tokens: int, code_mode: str
) -> ChunkedDocument:
    text = plan.text
    ids = _Ids(doc.id)
    title = doc.title
    path_prefix = (title,) if title else ()

    def clean_path(path: tuple[str, ...]) -> tuple[str, ...]:
        if path and path_prefix and path[0].strip().lower() == title.strip().lower():
            return path[1:]
        return path

    doc_chunk_id = ids(Level.DOCUMENT, summary_text)
    section_ids: list[str] = []
    prop_ids: list[list[str]] = []
    for sec in plan.sections:
        section_ids.append(ids(Level.SECTION, text[sec.start : sec.end]))
        prop_ids.append([ids(Level.PROPOSITION, text[p.start : p.end]) for p in sec.propositions])
    flat_props = [pid for group in prop_ids for pid in group]

    sections: list[Chunk] = []
    props: list[Chunk] = []
    sec_embed: list[str] = []
    prop_embed: list[str] = []
    agg_refs: list[str] = []
    agg_defs: list[str] = []
    agg_deps: list[str] = []
    agg_errs: list[str] = []
    code_title = str(doc.metadata.get("path") or "") if doc.content_type == ContentType.CODE else ""
    p_index = 0
    for si, sec in enumerate(plan.sections):
        sec_text = text[sec.start : sec.end]
        path = clean_path(sec.path)
        meta = _metadata(sec_text, sec, doc)
        agg_refs.extend(meta[0])
        agg_defs.extend(meta[1])
        agg_deps.extend(meta[2])
        agg_errs.extend(meta[3])
        sections.append(
            Chunk(
                id=section_ids[si],
                doc_id=doc.id,
                level=Level.SECTION,
                text=sec_text,
                position=si,
                parent_id=doc_chunk_id,
                children_ids=tuple(prop_ids[si]),
                prev_id=section_ids[si - 1] if si > 0 else None,
                next_id=section_ids[si + 1] if si + 1 < len(section_ids) else None,
                section_path=path,
                title=title,
                source=doc.source,
                content_type=sec.content_type,
                language=sec.language,
                token_count=sec.tokens,
                start_char=sec.start,
                end_char=sec.end,
                references=meta[0],
                defined_symbols=meta[1],
                dependencies=meta[2],
                error_codes=meta[3],
                keywords=meta[4],
            )
        )
        sec_embed.append(_embed_text(sec, sec_text, title, path, code_title, code_mode))
        for prop in sec.propositions:
            ptext = text[prop.start : prop.end]
            ppath = clean_path(prop.path)
            pmeta = _metadata(ptext, prop, doc)
            props.append(
                Chunk(
                    id=flat_props[p_index],
                    doc_id=doc.id,
                    level=Level.PROPOSITION,
                    text=ptext,
                    position=p_index,
                    parent_id=section_ids[si],
                    prev_id=flat_props[p_index - 1] if p_index > 0 else None,
                    next_id=flat_props[p_index + 1] if p_index + 1 < len(flat_props) else None,
                    section_path=ppath,
                    title=title,
                    source=doc.source,
                    content_type=prop.content_type,
                    language=prop.language,
                    token_count=prop.tokens,
                    start_char=prop.start,
                    end_char=prop.end,
                    references=pmeta[0],
                    defined_symbols=pmeta[1],
                    dependencies=pmeta[2],
                    error_codes=pmeta[3],
                    keywords=pmeta[4],
                )
            )
            prop_embed.append(_embed_text(prop, ptext, title, ppath, code_title, code_mode))
            p_index += 1

    keywords = plan.keywords or extract_keywords(text, top_k=10)
    summary = Chunk(
        id=doc_chunk_id,
        doc_id=doc.id,
        level=Level.DOCUMENT,
        text=summary_text,
        position=0,
        children_ids=tuple(section_ids),
        title=title,
        source=doc.source,
        content_type=doc.content_type,
        language=doc.language,
        token_count=summary_tokens,
        start_char=0,
        end_char=len(text),
        references=_unique(agg_refs),
        defined_symbols=_unique(agg_defs),
        dependencies=_unique(agg_deps),
        error_codes=_unique(agg_errs),
        keywords=keywords,
    )
    if doc.content_type == ContentType.CODE:
        summary_embed = identifier_words(summary_text) if code_mode == "words" else summary_text
    elif summary_text.startswith(title):
        summary_embed = summary_text
    else:
        summary_embed = _prose_embed_text(summary_text, title)
    return ChunkedDocument(
        doc_id=doc.id,
        source=doc.source,
        text=text,
        chunks=(summary, *sections, *props),
        embed_texts=(summary_embed, *sec_embed, *prop_embed),
        warnings=tuple(plan.warnings),
    )


def _unique(items: Sequence[str], limit: int = _MAX_AGGREGATE) -> tuple[str, ...]:
    return tuple(dict.fromkeys(i for i in items if i))[:limit]


def _metadata(
    text: str, span: _Span, doc: Document
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(references, defined symbols, dependencies, error codes, keywords) of one chunk."""
    meta = chunk_metadata(text, content_type=span.content_type, language=span.language)
    unit = span.unit
    if unit is not None:
        refs = _unique([*unit.references, *unit.calls], 32)
        return (
            refs,
            unit.defined,
            _unique([*unit.dependencies, *meta.dependencies], 32),
            meta.error_codes,
            meta.keywords,
        )
    return meta.references, (), meta.dependencies, meta.error_codes, meta.keywords


def _embed_text(
    span: _Span, text: str, title: str, path: tuple[str, ...], code_title: str, code_mode: str
) -> str:
    if span.unit is not None:
        if code_mode == "raw":
            return text
        hint = code_title or title
        return code_embed_text(span.unit, title=hint if hint and hint != span.unit.name else "")
    return _prose_embed_text(text, _header(title, path))


# -- images --------------------------------------------------------------------------------------


def _image(doc: Document) -> ChunkedDocument:
    """A summary plus one section that stands for the image itself.

    The section carries the image (its `source` is the image file, `content_type` IMAGE) for the
    CLIP encoder; its text, the caption from the file name, feeds the text encoders. Every
    document thus has the same shape: one summary with at least one section.
    """
    caption = (doc.text or doc.title).strip() or Path(doc.source).stem
    keywords = extract_keywords(caption, top_k=5)
    digest = doc.content_hash or content_hash(doc.source)
    summary_id = stable_id(doc.id, Level.DOCUMENT.value, 0, digest)
    image_id = stable_id(doc.id, Level.SECTION.value, 0, digest)
    common = {
        "doc_id": doc.id,
        "text": caption,
        "title": doc.title,
        "source": doc.source,
        "content_type": ContentType.IMAGE,
        "language": doc.language,
        "start_char": 0,
        "end_char": len(caption),
        "keywords": keywords,
    }
    summary = Chunk(id=summary_id, level=Level.DOCUMENT, children_ids=(image_id,), **common)
    image = Chunk(id=image_id, level=Level.SECTION, parent_id=summary_id, **common)
    return ChunkedDocument(
        doc_id=doc.id,
        source=doc.source,
        text=caption,
        chunks=(summary, image),
        embed_texts=(caption, caption),
    )


# -- entry points --------------------------------------------------------------------------------


class _WithoutSpecials:
    """A counter whose counts include special tokens ([CLS], [SEP]), minus that constant.

    Piece counts are added up into chunk counts, which only works without the per-text extras.
    """

    def __init__(self, inner: TokenCounter, extra: int) -> None:
        self.inner = inner
        self.extra = extra

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [max(0, n - self.extra) for n in self.inner.count_tokens(texts)]


def _additive(tokens: TokenCounter) -> TokenCounter:
    if isinstance(tokens, _WithoutSpecials):
        return tokens
    extra = int(tokens.count_tokens([""])[0])
    return _WithoutSpecials(tokens, extra) if extra > 0 else tokens


def _check(settings: IngestSettings) -> None:
    if settings.section_min_tokens > settings.section_max_tokens:
        raise ValueError("ingest.section_min_tokens must not exceed ingest.section_max_tokens")
    if settings.proposition_min_tokens > settings.proposition_max_tokens:
        raise ValueError(
            "ingest.proposition_min_tokens must not exceed ingest.proposition_max_tokens"
        )


def chunk_document(
    doc: Document,
    *,
    tokens: TokenCounter,
    settings: IngestSettings,
    embed: Embed | None = None,
    summarize: Summarize | None = None,
) -> ChunkedDocument:
    """Chunk one document on all three levels; an empty or unparsable document raises `SourceError`.

    `tokens` counts with the embedding model's tokenizer (counts that include special tokens are
    corrected; `TokenizerCounter` is the fast choice). `embed` (texts -> vectors) enables
    topic-shift splitting of long heading-less regions; `summarize` replaces the extractive
    summary (a failing call falls back to it and leaves a warning).
    """
    _check(settings)
    if doc.content_type == ContentType.IMAGE:
        return _image(doc)
    tokens = _additive(tokens)
    if not doc.text.strip():
        raise SourceError(
            f"{doc.source or doc.id}: empty document (no text)", path=doc.source or doc.id
        )
    try:
        if doc.content_type == ContentType.CODE:
            plan = _plan_code(doc, tokens, settings)
        else:
            plan = _plan_prose(doc, tokens, settings, embed)
    except SourceError as exc:
        if exc.path is None:
            raise SourceError(f"{doc.source}: {exc}", path=doc.source) from exc
        raise
    summary_text, summary_tokens = _summary(doc, plan, tokens, settings, summarize)
    return _assemble(doc, plan, summary_text, summary_tokens, settings.code_embed)


def chunk_documents(
    docs: Sequence[Document],
    *,
    tokens: TokenCounter,
    settings: IngestSettings,
    embed: Embed | None = None,
    summarize: Summarize | None = None,
) -> ChunkBatch:
    """Chunk many documents; one that fails becomes a `ReadError` (path and reason), the rest go on."""
    batch = ChunkBatch()
    tokens = _additive(tokens)
    for doc in docs:
        try:
            batch.chunked.append(
                chunk_document(
                    doc, tokens=tokens, settings=settings, embed=embed, summarize=summarize
                )
            )
        except SourceError as exc:
            where = exc.path or doc.source or doc.id
            reason = str(exc).removeprefix(f"{where}: ")
            batch.errors.append(ReadError(path=where, reason=reason))
        except (ValueError, RecursionError, UnicodeError) as exc:  # parser failures on odd input
            batch.errors.append(
                ReadError(
                    path=doc.source or doc.id, reason=f"cannot chunk: {type(exc).__name__}: {exc}"
                )
            )
    return batch
