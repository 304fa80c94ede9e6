"""Statement groups of a search response (`serve/service.py`, a pure function over hits)."""

from __future__ import annotations

from rayweave.cluster.types import Hit, Level
from rayweave.serve.service import group_statements


def hit(cid: str, score: float, **fields: object) -> Hit:
    base: dict[str, object] = {"source": "guide.md", "title": "Guide", "level": Level.SECTION}
    base.update(fields)
    return Hit(id=cid, doc_id="d1", text=f"text of {cid}", score=score, **base)  # type: ignore[arg-type]


def test_passages_group_under_their_sections_best_group_first() -> None:
    groups = group_statements(
        [
            hit("c1", 0.4, section_path=("Guide", "Install")),
            hit("c2", 0.9, section_path=("Guide", "Serve")),
            hit("c3", 0.5, section_path=("Guide", "Install")),
            hit("doc", 1.0, level=Level.DOCUMENT),  # a document summary states nothing itself
        ]
    )
    assert [(g.topic, g.statements, g.score) for g in groups] == [
        ("Serve", ["text of c2"], 0.9),
        ("Install", ["text of c1", "text of c3"], 0.5),
    ]


def test_extracted_facts_are_the_statements_under_the_models_topics() -> None:
    facts = ["Ray Serve runs on Ray", "Ray is fast", "Qdrant stores vectors"]
    groups = group_statements(
        [
            hit(
                "c1",
                0.8,
                section_path=("Guide", "Serve"),
                metadata={
                    "facts": facts,
                    "fact_topics": {facts[0]: "Serving", facts[1]: "Ray"},
                },
            ),
            hit("c2", 0.6, section_path=("Guide", "Serve"), metadata={"facts": [facts[0]]}),
            hit("c3", 0.3, title="Other"),
        ]
    )
    assert [(g.topic, g.statements) for g in groups] == [
        ("Serving", ["Ray Serve runs on Ray"]),
        ("Ray", ["Ray is fast"]),
        # a fact without a topic sits under its passage's section; c2's copy of a fact with a
        # topic elsewhere is its own statement there
        ("Serve", ["Qdrant stores vectors", "Ray Serve runs on Ray"]),
        ("Other", ["text of c3"]),
    ]


def test_groups_are_capped() -> None:
    hits = [hit(f"c{i}", 1.0 - i / 100, section_path=("S",)) for i in range(5)]
    (group,) = group_statements(hits, max_per_topic=3)
    assert group.statements == ["text of c0", "text of c1", "text of c2"]
