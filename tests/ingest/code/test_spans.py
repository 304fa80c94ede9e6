"""Spans of one level of a file: runs of plain code merged, items tiled, lines cut."""

from __future__ import annotations

from rayweave.ingest.code.spans import Item, line_pieces, line_spans, merge_others, tile


class TestMergeOthers:
    def test_runs_of_plain_code_become_one_item(self) -> None:
        items = [
            Item(0, 5, "other", nodes=["a"]),
            Item(6, 9, "other", nodes=["b"]),
            Item(10, 20, "function", name="f"),
            Item(21, 25, "other"),
            Item(26, 30, "definition", name="T"),
        ]
        merged = merge_others(items)
        assert [(it.start, it.end, it.kind) for it in merged] == [
            (0, 9, "other"),
            (10, 20, "function"),
            (21, 25, "other"),
            (26, 30, "definition"),
        ]
        assert merged[0].nodes == ["a", "b"]

    def test_definitions_are_never_merged(self) -> None:
        items = [Item(0, 4, "function", name="f"), Item(5, 9, "function", name="g")]
        assert [it.name for it in merge_others(items)] == ["f", "g"]
        assert merge_others([]) == []


class TestTile:
    def test_gaps_join_the_item_before_and_whitespace_is_trimmed(self) -> None:
        text = "x = 1\n\ndef f(): pass\n# note\ndef g(): pass\n"
        f = text.index("def f")
        g = text.index("def g")
        items = [Item(f, f + 13, "function", name="f"), Item(g, g + 13, "function", name="g")]
        out = tile(items, text, 0, len(text))
        # the code before the first item has words: it is not dropped
        assert [text[it.start : it.end] for it in out] == [
            "x = 1\n\ndef f(): pass\n# note",
            "def g(): pass",
        ]

    def test_bare_braces_around_the_items_are_left_out(self) -> None:
        text = "{\n  a();\n  b();\n}"
        a, b = text.index("a()"), text.index("b()")
        out = tile([Item(a, a + 4, "other"), Item(b, b + 4, "other")], text, 0, len(text))
        assert [text[it.start : it.end] for it in out] == ["a();", "b();"]

    def test_no_items_give_one_plain_span_or_nothing(self) -> None:
        text = "  {\n  z = 2;\n}  "
        out = tile([], text, 0, len(text))
        assert [(text[it.start : it.end], it.kind) for it in out] == [("{\n  z = 2;\n}", "other")]
        assert tile([], "  { } ;\n", 0, 8) == []
        assert tile([], "    ", 0, 4) == []


class TestLines:
    def test_line_spans_are_the_trimmed_non_blank_lines(self) -> None:
        text = "  a = 1\n\n   \n  b = 2  \nc"
        assert [text[a:b] for a, b in line_spans(text, 0, len(text))] == ["a = 1", "b = 2", "c"]
        start = text.index("b")
        assert [text[a:b] for a, b in line_spans(text, start, len(text))] == ["b = 2", "c"]

    def test_a_line_too_long_to_fit_is_cut_by_characters(self) -> None:
        text = "x" * 100 + "\nshort\n"
        pieces = line_pieces(text, 0, len(text), 4)  # over 4 * 8 chars: cut every 4 * 3
        assert all(b - a <= 12 for a, b in pieces[:-1])
        assert "".join(text[a:b] for a, b in pieces[:-1]) == "x" * 100
        assert text[slice(*pieces[-1])] == "short"

    def test_lines_that_fit_are_kept_whole(self) -> None:
        text = "alpha beta\ngamma\n"
        assert line_pieces(text, 0, len(text), 4) == line_spans(text, 0, len(text))
