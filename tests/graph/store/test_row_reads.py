"""Table reads: the query's shape and how its records turn back into rows."""

from __future__ import annotations

import pytest

from rayweave.graph.store.row_reads import table_query, table_rows


def test_rows_come_back_by_column_name_across_pages() -> None:
    records = [{"page": [["a", 1], ["b", 2]]}, {"page": [["c", None]]}]
    assert table_rows(records, ["id", "n"]) == [
        {"id": "a", "n": 1},
        {"id": "b", "n": 2},
        {"id": "c", "n": None},
    ]
    assert table_rows([], ["id"]) == []


def test_a_row_of_the_wrong_width_is_refused() -> None:
    with pytest.raises(ValueError, match="zip"):
        table_rows([{"page": [["a", 1, 2]]}], ["id", "n"])


def test_the_query_collects_the_columns_in_order_and_slices_by_page() -> None:
    text = table_query("MATCH (e:Entity {ns: $ns})", {"id": "e.id", "name": "e.name"}, page=3)
    assert text.startswith("MATCH (e:Entity {ns: $ns}) WITH collect([e.id, e.name]) AS rows ")
    assert "range(0, size(rows) - 1, 3)" in text
    assert "rows[i..i + 3]" in text
    with pytest.raises(ValueError, match="page"):
        table_query("MATCH (e)", {"id": "e.id"}, page=0)
