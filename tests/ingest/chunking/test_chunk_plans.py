"""Plans are plain records; what they must not do is share mutable defaults between instances."""

from __future__ import annotations

import dataclasses

from rayweave.cluster.types import ContentType
from rayweave.ingest.chunking.plans import Plan, SectionPlan, Span


def test_section_plan_is_a_span_with_its_own_propositions() -> None:
    first = SectionPlan(0, 10, 4, ("A",), ContentType.MARKDOWN)
    second = SectionPlan(10, 20, 4, ("B",), ContentType.MARKDOWN)
    assert isinstance(first, Span)
    first.propositions.append(Span(0, 5, 2, ("A",), ContentType.MARKDOWN))
    assert second.propositions == []
    assert (first.language, first.unit) == (None, None)
    names = [f.name for f in dataclasses.fields(SectionPlan)]
    assert names[: len(dataclasses.fields(Span))] == [f.name for f in dataclasses.fields(Span)]


def test_plan_defaults_and_unshared_warnings() -> None:
    first = Plan(text="t", sections=[], summary_parts=[])
    second = Plan(text="u", sections=[], summary_parts=[])
    first.warnings.append("embedder down")
    assert second.warnings == []
    assert (first.summary_primary, first.outline_separator, first.keywords) == (2, "; ", ())
