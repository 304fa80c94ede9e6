"""Recording which corpus facts a document read, and finding which of them moved."""

from __future__ import annotations

import pytest

from rayweave.cluster.settings import GraphSettings
from rayweave.graph.document_edges import Facts
from rayweave.graph.entities import EntityResolver
from rayweave.graph.fact_reads import answer, moved, recording
from rayweave.graph.schema import NodeLabel, NodeRef


def facts(names: list[str], *, generic: frozenset[str] = frozenset(), frequent: int = 2) -> Facts:
    resolver = EntityResolver()
    for name in names:
        resolver.add(name)
    return Facts(
        resolver=resolver,
        match=lambda text: {},
        symbols=frozenset({"sym"}),
        generic=generic,
        targets={"guide.md": NodeRef(NodeLabel.DOCUMENT, "guide")},
        frequent=lambda keyword: len(keyword) >= frequent,
        has_sections=True,
        settings=GraphSettings(),
    )


def test_every_lookup_is_answered_as_before_and_written_down() -> None:
    base = facts(["Widget"], generic=frozenset({"e1"}))
    watched, reads = recording(base)
    assert watched.resolver.resolve("widget") == base.resolver.resolve("widget")
    assert "e1" in watched.generic
    assert "sym" not in watched.generic
    assert watched.targets.get("guide.md") == NodeRef(NodeLabel.DOCUMENT, "guide")
    assert watched.targets.get("missing.md") is None
    assert watched.frequent("ab")
    assert reads["resolve"] == {"widget": tuple(base.resolver.resolve("widget"))}
    assert reads["generic"] == {"e1": True, "sym": False}
    assert reads["target"] == {"guide.md": NodeRef(NodeLabel.DOCUMENT, "guide"), "missing.md": None}
    assert reads["frequent"] == {"ab": True}
    assert all(answer(base, kind, key) == v for kind, t in reads.items() for key, v in t.items())


def test_moved_names_exactly_the_answers_that_changed() -> None:
    watched, reads = recording(facts(["Widget"]))
    watched.resolver.resolve("widget")
    watched.resolver.resolve("widgets")
    watched.frequent("abc")
    assert "e1" not in watched.generic
    # "Widgets" now merges into "Widget"; "abc" is no longer frequent; e1 became generic.
    later = facts(["Widget", "Widgets"], generic=frozenset({"e1"}), frequent=4)
    assert moved(reads, later) == {
        "resolve": {"widgets"},
        "symbol": set(),
        "generic": {"e1"},
        "target": set(),
        "frequent": {"abc"},
    }
    assert moved(reads, facts(["Widget"])) == {kind: set() for kind in reads}
    # Told which names can have moved, it asks only those of a kind (and keys never read none).
    among = moved(reads, later, among={"resolve": {"widget", "gadget"}})
    assert among["resolve"] == set()
    assert among["generic"] == {"e1"}
    assert moved(reads, later, among={"resolve": {"widgets"}})["resolve"] == {"widgets"}


def test_a_recorded_set_or_mapping_cannot_be_read_whole() -> None:
    watched, _ = recording(facts([]))
    with pytest.raises(TypeError):
        list(watched.generic)
    with pytest.raises(TypeError):
        len(watched.targets)
