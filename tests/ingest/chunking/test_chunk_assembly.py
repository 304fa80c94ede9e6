from __future__ import annotations

import re
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rayweave.cluster.types import ContentType, Level
from rayweave.ingest.chunking import chunk_document
from rayweave.ingest.chunking.assembly import ChunkMeta, assemble, chunk_meta, span_chunk
from rayweave.ingest.chunking.plans import Plan, SectionPlan, Span

from ..conftest import SMALL
from ..doc_strategies import markdown_doc
from .conftest import ESTIMATE, make


class TestIds:
    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(markdown_doc(), st.data())
    def test_ids_stable_and_content_derived(self, text: str, data: st.DataObject) -> None:
        doc = make(text)
        first = chunk_document(doc, tokens=ESTIMATE, settings=SMALL)
        again = chunk_document(doc, tokens=ESTIMATE, settings=SMALL)
        assert [c.to_row() for c in first.chunks] == [c.to_row() for c in again.chunks]
        assert first.embed_texts == again.embed_texts
        # Edit one sentence: its chunks get new ids, chunks whose text is unchanged keep theirs.
        sentences = [m for m in re.finditer(r"[A-Z][a-z]+ [a-z ]+[.?!]", text)]
        if not sentences:
            return
        m = data.draw(st.sampled_from(sentences))
        edited = text[: m.start()] + "Zebra " + text[m.start() :]
        second = chunk_document(make(edited), tokens=ESTIMATE, settings=SMALL)
        old = {(c.level, c.text): c.id for c in first.chunks}
        counts = Counter((c.level, c.text) for c in (*first.chunks, *second.chunks))
        for c in second.chunks:
            if (c.level, c.text) in old and counts[(c.level, c.text)] == 2:  # once in each version
                assert c.id == old[(c.level, c.text)]
        changed = [c for c in second.chunks if "Zebra" in c.text and c.level != Level.DOCUMENT]
        assert changed
        assert all(c.id not in old.values() for c in changed)


_SAME = "Leases expire after ten seconds."
_REF = "See [setup](setup.md) for the broker. Error E1003 means it is down."


def _span(a: int, b: int, tokens: int = 5) -> Span:
    return Span(a, b, tokens, ("Doc", "Part"), ContentType.MARKDOWN)


def _section(a: int, b: int, *cuts: int) -> SectionPlan:
    """A section of text[a:b] whose propositions end at `cuts` (whitespace after each dropped)."""
    ends = [*cuts, b]
    starts = [a, *(c + 1 for c in cuts)]
    props = [_span(s, e) for s, e in zip(starts, ends, strict=True)]
    return SectionPlan(
        a, b, 5 * len(props), ("Doc", "Part"), ContentType.MARKDOWN, propositions=props
    )


def _plan() -> Plan:
    """Two sections with equal text (one proposition each), then one with two propositions."""
    text = f"{_SAME}\n\n{_SAME}\n\n{_REF}"
    n, third = len(_SAME), text.index(_REF)
    sections = [
        _section(0, n),
        _section(n + 2, 2 * n + 2),
        _section(third, len(text), text.index("Error") - 1),
    ]
    return Plan(text=text, sections=sections, summary_parts=[], warnings=["a warning"])


class TestAssemble:
    def test_links_levels_and_offsets(self) -> None:
        plan = _plan()
        cd = assemble(make(plan.text), plan, "Doc summary.", 3, "raw")
        summary, secs, props = cd.summary, cd.sections, cd.propositions
        assert cd.chunks == (summary, *secs, *props)
        assert len(cd.embed_texts) == len(cd.chunks)
        assert cd.warnings == ("a warning",)
        assert summary.children_ids == tuple(s.id for s in secs)
        assert (summary.start_char, summary.end_char) == (0, len(plan.text))
        assert summary.token_count == 3
        for c in (*secs, *props):
            assert c.text == plan.text[c.start_char : c.end_char]
            assert c.section_path == ("Part",)  # the heading that repeats the title dropped
        for sec, sp in zip(secs, plan.sections, strict=True):
            assert sec.parent_id == summary.id
            kids = [p for p in props if p.parent_id == sec.id]
            assert sec.children_ids == tuple(p.id for p in kids)
            assert len(kids) == len(sp.propositions)
        for level in (secs, props):  # a sequence runs through its whole level
            assert [c.position for c in level] == list(range(len(level)))
            assert [c.prev_id for c in level] == [None, *(c.id for c in level[:-1])]
            assert [c.next_id for c in level] == [*(c.id for c in level[1:]), None]

    def test_equal_texts_get_distinct_stable_ids(self) -> None:
        plan = _plan()
        first = assemble(make(plan.text), plan, "Doc summary.", 3, "raw")
        again = assemble(make(plan.text), _plan(), "Doc summary.", 3, "raw")
        assert [c.id for c in first.chunks] == [c.id for c in again.chunks]
        ids = [c.id for c in first.chunks]
        assert len(set(ids)) == len(ids)
        assert first.sections[0].text == first.sections[1].text
        other = assemble(make(plan.text, doc_id="doc-2"), _plan(), "Doc summary.", 3, "raw")
        assert not {c.id for c in other.chunks} & set(ids)

    def test_summary_gathers_section_metadata(self) -> None:
        plan = _plan()
        cd = assemble(make(plan.text), plan, "Doc summary.", 3, "raw")
        assert "setup.md" in cd.sections[2].references
        assert cd.summary.references == cd.sections[2].references
        assert "E1003" in cd.summary.error_codes
        assert cd.summary.keywords  # extracted from the text when the plan has none
        plan.keywords = ("chosen",)
        assert assemble(make(plan.text), plan, "S.", 1, "raw").summary.keywords == ("chosen",)


class TestSpanChunk:
    def test_sequence_links_and_metadata(self) -> None:
        text = f"{_SAME} {_REF}"
        span = Span(len(_SAME) + 1, len(text), 12, ("Doc",), ContentType.MARKDOWN)
        doc = make(text)
        last = span_chunk(
            doc, span, text, level=Level.SECTION, ids=["a", "b", "c"], index=2, parent_id="p"
        )
        assert (last.id, last.prev_id, last.next_id, last.position) == ("c", "b", None, 2)
        assert last.text == _REF
        assert (last.start_char, last.end_char, last.token_count) == (span.start, len(text), 12)
        assert last.section_path == ()
        assert (last.parent_id, last.doc_id, last.source) == ("p", doc.id, doc.source)
        assert last.references == chunk_meta(_REF, span).references == ("setup.md",)
        first = span_chunk(
            doc, span, text, level=Level.SECTION, ids=["a", "b"], index=0, parent_id="p"
        )
        assert (first.prev_id, first.next_id) == (None, "b")

    def test_prose_meta_has_no_symbols(self) -> None:
        meta = chunk_meta(_REF, Span(0, len(_REF), 9, (), ContentType.MARKDOWN))
        assert meta.error_codes == ("E1003",)
        assert meta.defined_symbols == ()
        assert ChunkMeta() == ChunkMeta(references=(), keywords=())
