from __future__ import annotations

from rayweave.cluster.types import Hit, Level
from rayweave.serve.context import assemble_context, estimate_tokens


def hit(
    i: str,
    doc: str,
    level: Level,
    text: str,
    *,
    parent: str | None = None,
    pos: int = 0,
    score: float = 1.0,
) -> Hit:
    meta: dict[str, object] = {"position": pos}
    if parent:
        meta["parent_id"] = parent
    return Hit(
        id=i,
        doc_id=doc,
        text=text,
        score=score,
        level=level,
        title=f"Doc {doc}",
        source=f"{doc}.md",
        section_path=("Guide", f"S{parent or i}"),
        metadata=meta,
    )


def test_groups_by_document_then_section_in_reading_order() -> None:
    hits = [
        hit("p2", "A", Level.PROPOSITION, "second fact", parent="s1", pos=2, score=0.9),
        hit("b1", "B", Level.SECTION, "other doc", pos=0, score=0.8),
        hit("p1", "A", Level.PROPOSITION, "first fact", parent="s1", pos=1, score=0.7),
        hit("s0", "A", Level.SECTION, "intro section", pos=0, score=0.6),
    ]
    ctx = assemble_context(hits, max_tokens=1000)
    assert [d.doc_id for d in ctx.documents] == ["A", "B"]  # by best hit
    a = ctx.documents[0]
    assert [s.text for s in a.sections] == ["intro section", "first fact\nsecond fact"]
    assert a.sections[1].chunk_ids == ["p1", "p2"]
    assert (
        ctx.text.index("intro section") < ctx.text.index("first fact") < ctx.text.index("other doc")
    )


def test_a_section_hit_supersedes_its_propositions() -> None:
    hits = [
        hit("p1", "A", Level.PROPOSITION, "fact one", parent="s1", pos=1),
        hit("s1", "A", Level.SECTION, "fact one. fact two.", pos=0),
        hit("p2", "A", Level.PROPOSITION, "fact two", parent="s1", pos=2),
    ]
    ctx = assemble_context(hits, max_tokens=1000)
    assert [s.text for s in ctx.documents[0].sections] == ["fact one. fact two."]
    assert ctx.tokens == estimate_tokens("fact one. fact two.")


def test_budget_is_respected_and_document_summaries_are_skipped() -> None:
    long = "word " * 300
    hits = [
        hit("d", "A", Level.DOCUMENT, "summary"),
        hit("s1", "A", Level.SECTION, long, pos=0),
        hit("s2", "B", Level.SECTION, "short", pos=0),
    ]
    ctx = assemble_context(hits, max_tokens=50)
    assert [d.doc_id for d in ctx.documents] == ["B"]
    assert ctx.tokens <= 50
