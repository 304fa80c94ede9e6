"""The plain-text table every bench prints its figures with, and the one figure row type.

Rich tables stay for the benches whose columns are ratios against a baseline; the rows that are
simply "this input, this figure, this value" (graph rates and latencies, chunking, vector stores)
go through `format_table`: columns from the rows' keys, text left-aligned, numbers right-aligned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

Cell = str | int | float | None
"""What a table cell holds; None prints as "-" (not measured)."""


class TableRow(Protocol):
    """A row that names its own columns (in order) and values."""

    def cells(self) -> Mapping[str, Cell]: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Figure:
    """One measured figure of one input (a corpus, a synthetic graph): `value` in `unit`."""

    corpus: str
    metric: str
    value: float
    unit: str

    def cells(self) -> Mapping[str, Cell]:
        return {
            "corpus": self.corpus,
            "metric": self.metric,
            "value": self.value,
            "unit": self.unit,
        }


def format_cell(value: Cell) -> str:
    """Large figures with thousands separators and no decimals, small ones to 3 significant
    digits: the precision a machine-load-dependent figure has."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
    return str(value)


def format_table(rows: Sequence[TableRow | Mapping[str, Cell]]) -> str:
    """Columns of the first row; a column of text only is left-aligned, any other right-aligned."""
    if not rows:
        return "(no results)"
    records = [row if isinstance(row, Mapping) else row.cells() for row in rows]
    columns = list(records[0])
    cells = [[format_cell(record.get(col)) for col in columns] for record in records]
    widths = [max(len(col), *(len(line[i]) for line in cells)) for i, col in enumerate(columns)]
    left = [all(isinstance(r.get(col), str) for r in records) for col in columns]

    def line(values: Sequence[str]) -> str:
        padded = (
            v.ljust(w) if is_left else v.rjust(w)
            for v, w, is_left in zip(values, widths, left, strict=True)
        )
        return "  ".join(padded).rstrip()

    head = line(columns)
    return "\n".join([head, "-" * len(head), *(line(values) for values in cells)])
