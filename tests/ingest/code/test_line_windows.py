"""Line windows: code without usable syntax boundaries, cut between lines within the limit."""

from __future__ import annotations

import re

from rayweave.ingest.code.line_windows import item_lines, line_units
from rayweave.ingest.code.spans import Item

from ..code_samples import COUNT, check_tiling
from .conftest import MakeCtx


def _paragraphs(n: int, lines: int) -> str:
    """`n` blank-line-separated paragraphs of `lines` lines, 8 estimated tokens each."""
    return (
        "\n\n".join("\n".join(f"key_{k}_{i}: value {i}" for i in range(lines)) for k in range(n))
        + "\n"
    )


class TestLineUnits:
    def test_windows_end_at_blank_lines_when_they_can(self, make_ctx: MakeCtx) -> None:
        code = _paragraphs(4, 3)  # 24 tokens each: two never fit 40, five lines would
        units = line_units(0, len(code), make_ctx(code, max_tokens=40), (), "block", "", "")
        check_tiling(code, units)
        assert [u.text for u in units] == [p.strip() for p in code.split("\n\n")]
        assert all(u.kind == "block" and u.tokens == 24 for u in units)

    def test_every_window_fits_the_limit(self, make_ctx: MakeCtx) -> None:
        code = "\n".join(f"key_{i}: value {i}" for i in range(30))
        units = line_units(0, len(code), make_ctx(code, max_tokens=40), (), "block", "", "")
        check_tiling(code, units)
        assert len(units) >= 6
        for u in units:
            assert u.tokens == COUNT([u.text])[0]
            assert u.tokens <= 40

    def test_a_minified_line_is_cut_by_characters(self, make_ctx: MakeCtx) -> None:
        code = "var a=1;" * 200
        ctx = make_ctx(code, "javascript", max_tokens=20)
        units = line_units(0, len(code), ctx, (), "block", "", "")
        assert len(units) > 10
        for u in units:
            assert u.text == code[u.start : u.end]
        joined = "".join(u.text for u in units)
        assert re.sub(r"\s", "", joined) == re.sub(r"\s", "", code)

    def test_parts_of_a_named_definition_repeat_its_signature(self, make_ctx: MakeCtx) -> None:
        code = _paragraphs(4, 4)
        ctx = make_ctx(code, max_tokens=40)
        units = line_units(0, len(code), ctx, ("A",), "part", "f", "def f():")
        assert len(units) == 4
        assert all(u.kind == "part" and u.name == "f" and u.path == ("A", "f") for u in units)
        assert all(u.context == u.signature == "def f():" for u in units)
        # only the first part defines the name
        assert [u.defined for u in units] == [("A.f",), (), (), ()]

    def test_the_context_comes_out_of_the_budget(self, make_ctx: MakeCtx) -> None:
        code = "\n".join(f"key_{i}: value {i}" for i in range(30))  # 8 tokens a line
        context = "def f(alpha, beta, gamma):"  # 10 tokens: windows of 5 lines no longer fit
        ctx = make_ctx(code, max_tokens=40)
        units = line_units(0, len(code), ctx, (), "part", "f", context)
        check_tiling(code, units)
        assert all(u.tokens + COUNT([context])[0] <= 40 for u in units)
        plain = line_units(0, len(code), ctx, (), "block", "", "")
        assert max(u.tokens for u in plain) > 40 - COUNT([context])[0]  # without: bigger windows

    def test_blank_span_gives_no_units(self, make_ctx: MakeCtx) -> None:
        code = "  \n\n \t\n"
        assert line_units(0, len(code), make_ctx(code), (), "block", "", "") == []


class TestItemLines:
    def test_named_items_give_parts_and_plain_code_blocks(self, make_ctx: MakeCtx) -> None:
        code = _paragraphs(3, 4)
        ctx = make_ctx(code, max_tokens=40)
        named = item_lines(Item(0, len(code), "function", name="run"), ctx, ("Job",), "")
        assert {(u.kind, u.name, u.path) for u in named} == {("part", "run", ("Job", "run"))}
        plain = item_lines(Item(0, len(code), "other"), ctx, ("Job",), "")
        assert {(u.kind, u.name, u.path) for u in plain} == {("block", "", ("Job",))}
        assert [(u.start, u.end) for u in named] == [(u.start, u.end) for u in plain]
