from __future__ import annotations

from typing import Any

import pytest

from rayweave.cluster.settings import IngestSettings
from rayweave.cluster.types import ContentType, Document
from rayweave.ingest.chunking import chunk_document
from rayweave.ingest.chunking.plans import Plan, SectionPlan
from rayweave.ingest.chunking.summary import document_summary, pack_summary
from rayweave.models.tokens import TokenizerCounter

from .conftest import ESTIMATE, make


class TestSummaries:
    def test_llm_summary_used_and_failures_fall_back(self, settings: IngestSettings) -> None:
        doc = make("# Guide\n\nFerry runs tasks on workers. Workers lease tasks.\n", title="Guide")
        llm = chunk_document(
            doc, tokens=ESTIMATE, settings=settings, summarize=lambda d: f"{d.title}: a task queue."
        )
        assert llm.summary.text == "Guide: a task queue."
        assert not llm.warnings

        def down(d: Document) -> str:
            raise TimeoutError("no answer")

        fallback = chunk_document(doc, tokens=ESTIMATE, settings=settings, summarize=down)
        assert fallback.summary.text.startswith("Guide\nFerry runs tasks")
        assert "LLM summary failed (TimeoutError" in fallback.warnings[0]

    def test_summary_respects_budget(self, minilm: TokenizerCounter) -> None:
        headings = "\n\n".join(f"## Heading number {i}\n\nBody {i}." for i in range(60))
        doc = make(f"# Big\n\nLead sentence here.\n\n{headings}\n", title="Big")
        s = IngestSettings(summary_max_tokens=40)
        cd = chunk_document(doc, tokens=minilm, settings=s)
        assert cd.summary.token_count <= 40
        assert (
            minilm.count_tokens([cd.summary.text])[0] <= 42
        )  # joins add no more than a token or two


def _parts_plan(**kw: Any) -> Plan:
    """A plan whose summary parts are a title, a lead and three outline entries."""
    parts = [("Title", 1), ("Lead one.", 3), ("A", 1), ("B", 1), ("C", 1)]
    text = "Title\n\nLead one. Body."
    section = SectionPlan(0, len(text), 6, (), ContentType.MARKDOWN)
    return Plan(text=text, sections=[section], summary_parts=parts, **kw)


class TestPackSummary:
    @pytest.mark.parametrize(
        ("budget", "text", "tokens"),
        [
            (0, "Title", 1),  # the title is kept whatever the budget
            (3, "Title\nA", 3),  # a lead over the budget is left out, the outline not
            (4, "Title\nLead one.", 4),
            (5, "Title\nLead one.", 4),  # an outline entry costs its separator too
            (6, "Title\nLead one.\nA", 6),
            (8, "Title\nLead one.\nA; B", 8),
            (99, "Title\nLead one.\nA; B; C", 10),
        ],
    )
    def test_outline_fills_the_budget(self, budget: int, text: str, tokens: int) -> None:
        assert pack_summary(_parts_plan(), budget) == (text, tokens)

    def test_primary_count_and_separator_come_from_the_plan(self) -> None:
        plan = _parts_plan(summary_primary=1, outline_separator=" | ")
        assert pack_summary(plan, 99) == ("Title\nLead one. | A | B | C", 11)


class TestDocumentSummary:
    def test_llm_summary_cut_to_whole_sentences_in_budget(self) -> None:
        sentences = ["The first point is here now.", "The second point is here now."]
        answer = " ".join([*sentences, "The third point is here now."])
        s = IngestSettings(summary_max_tokens=16)
        text, tokens, _ = document_summary(make("x"), _parts_plan(), ESTIMATE, s, lambda d: answer)
        assert text == " ".join(sentences)
        assert tokens == sum(ESTIMATE.count_tokens(sentences)) <= 16

    def test_blank_llm_answer_falls_back_without_warning(self, settings: IngestSettings) -> None:
        plan = _parts_plan()
        text, _, _ = document_summary(make("x"), plan, ESTIMATE, settings, lambda d: "  ")
        assert text == "Title\nLead one.\nA; B; C"
        assert not plan.warnings

    def test_no_parts_fall_back_to_the_first_section(self, settings: IngestSettings) -> None:
        plan = _parts_plan()
        plan.summary_parts = []
        assert document_summary(make("x"), plan, ESTIMATE, settings, None) == (plan.text, 6, False)
