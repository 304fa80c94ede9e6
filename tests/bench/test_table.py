"""The one plain-text table printer: columns, alignment, cell formats."""

from __future__ import annotations

from rayweave.bench.table import Figure, format_cell, format_table


def test_cells_are_formatted_to_the_precision_a_figure_has() -> None:
    assert format_cell(None) == "-"
    assert format_cell(12345.678) == "12,346"
    assert format_cell(0.123456) == "0.123"
    assert format_cell(7) == "7"
    assert format_cell("dense") == "dense"


def test_text_columns_left_and_numbers_right() -> None:
    rows = [
        Figure(corpus="tiny", metric="search p50", value=1.5, unit="ms"),
        Figure(corpus="synthetic-2k", metric="walk", value=250.0, unit="ms"),
    ]
    lines = format_table(rows).splitlines()
    assert lines[0].split() == ["corpus", "metric", "value", "unit"]
    assert set(lines[1]) == {"-"}
    assert lines[2].startswith("tiny ")
    assert lines[2].index("1.5") + len("1.5") == lines[3].index("250") + len("250")
    assert format_table([]) == "(no results)"


def test_mappings_and_rows_print_alike() -> None:
    row = Figure(corpus="c", metric="m", value=2.0, unit="")
    assert format_table([row]) == format_table([dict(row.cells())])
