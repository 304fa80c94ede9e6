"""`trimmed`: a span without the whitespace at either end."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rayweave.ingest.text_spans import trimmed


def test_whitespace_is_cut_from_both_ends_only() -> None:
    text = " \t\n a b \n "
    a, b = trimmed(text, 0, len(text))
    assert text[a:b] == "a b"


def test_the_span_stays_inside_its_bounds() -> None:
    text = "xx   yy   zz"
    assert trimmed(text, 2, 10) == (5, 7)
    assert trimmed(text, 0, 2) == (0, 2)


def test_a_blank_span_collapses_to_empty() -> None:
    text = "ab \n\t cd"
    a, b = trimmed(text, 2, 6)
    assert a == b
    assert trimmed(text, 3, 3) == (3, 3)


@given(st.text(alphabet=" \n\tab", max_size=30), st.data())
def test_property_trimmed_is_the_stripped_slice(text: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    a, b = trimmed(text, start, end)
    assert start <= a <= b <= end
    assert text[a:b] == text[start:end].strip()
