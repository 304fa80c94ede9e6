"""What the code chunker returns: symbol lists deduplicated and capped."""

from __future__ import annotations

from rayweave.ingest.code import CodeDefinition, CodeSymbols
from rayweave.ingest.code.units import MAX_LIST, dedupe


def test_dedupe_keeps_first_seen_order_and_drops_empties() -> None:
    assert dedupe(["b", "", "a", "b", "c", "a"]) == ("b", "a", "c")
    assert dedupe([]) == ()


def test_dedupe_caps_the_list() -> None:
    assert dedupe(["b", "b", "a", "c"], limit=2) == ("b", "a")
    assert len(dedupe([f"n{i}" for i in range(MAX_LIST * 2)])) == MAX_LIST


def test_defined_names_are_the_qualified_names_in_order() -> None:
    defs = tuple(
        CodeDefinition(name=n, qualified_name=q, kind="function", start_line=i, end_line=i)
        for i, (n, q) in enumerate([("A", "A"), ("run", "A.run")], start=1)
    )
    assert CodeSymbols(language="python", definitions=defs).defined_names == ("A", "A.run")
    assert CodeSymbols(language="python").defined_names == ()
