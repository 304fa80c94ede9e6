from __future__ import annotations

import json

import pytest

from rayweave.cluster.errors import SourceError
from rayweave.ingest.structure import (
    html_to_markdown,
    notebook_to_markdown,
    parse_markdown,
    parse_rst,
)


def kinds(st) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    return [(b.kind, st.text[b.start : b.end]) for b in st.blocks]


class TestMarkdown:
    def test_blocks_front_matter_and_thematic_breaks(self) -> None:
        st = parse_markdown(
            "---\ntitle: T\n---\n# Head\n\nPara one\ncontinued.\n\n---\n\n"
            "```py\nx = 1\n```\n\n| a |\n|---|\n| 1 |\n"
        )
        assert st.metadata["front_matter"] == "title: T\n"
        assert kinds(st) == [
            ("heading", "# Head"),
            ("paragraph", "Para one\ncontinued."),
            ("code", "```py\nx = 1\n```"),
            ("table", "| a |\n|---|\n| 1 |"),
        ]
        assert st.blocks[0].heading == "Head"
        assert st.blocks[2].lang == "py"

    def test_list_items_and_setext(self) -> None:
        st = parse_markdown("Title\n=====\n\n- one\n- two\n  more\n")
        assert kinds(st) == [
            ("heading", "Title\n====="),
            ("paragraph", "- one"),
            ("paragraph", "- two\n  more"),
        ]
        assert st.blocks[0].level == 1


class TestRst:
    def test_headings_levels_literals_and_tables(self) -> None:
        text = (
            "=====\nTitle\n=====\n\nIntro::\n\n    literal code\n    more\n\nSection\n-------\n\n"
            ".. code-block:: python\n\n   x = 1\n\n- item one\n- item two\n\n"
            "=====  =====\nA      B\n=====  =====\n1      2\n=====  =====\n"
        )
        st = parse_rst(text)
        got = kinds(st)
        assert got[0] == ("heading", "=====\nTitle\n=====")
        assert ("code", "literal code\n    more") in got
        assert ("heading", "Section\n-------") in got
        assert ("code", ".. code-block:: python\n\n   x = 1") in got
        assert ("paragraph", "- item one") in got
        assert got[-1][0] == "table"
        levels = [b.level for b in st.blocks if b.kind == "heading"]
        assert levels == [1, 2]
        code = next(b for b in st.blocks if b.kind == "code" and b.lang)
        assert code.lang == "python"


class TestHtml:
    def test_rendering(self) -> None:
        md = html_to_markdown(
            "<html><head><title>x</title><script>bad()</script></head><body><nav>menu</nav>"
            "<h2>Sub <code>t</code></h2><p>Text with <a href='u.html'>link</a> and "
            "<img src='i.png' alt='pic'>.</p>"
            "<pre class='highlight-python'>a = 1\n```\nb = 2</pre>"
            "<ol><li>first</li><li>second</li></ol>"
            "<table><tr><th>k</th><th>v</th></tr><tr><td>a|b</td><td>2</td></tr></table>"
            "<footer>f</footer></body></html>"
        )
        assert "bad()" not in md
        assert "menu" not in md
        assert "\nf\n" not in md
        assert "## Sub `t`" in md
        assert "Text with [link](u.html) and ![pic](i.png)." in md
        assert "````python\na = 1\n```\nb = 2\n````" in md
        assert "1. first\n" in md
        assert "| k | v |\n|---|---|\n| a\\|b | 2 |" in md


class TestNotebook:
    def test_cells_and_outputs(self) -> None:
        nb = {
            "metadata": {"language_info": {"name": "julia"}},
            "cells": [
                {"cell_type": "markdown", "source": "# T"},
                {
                    "cell_type": "code",
                    "source": ["x = 1\n", "x"],
                    "outputs": [{"output_type": "execute_result", "data": {"text/plain": ["1"]}}],
                },
                {"cell_type": "raw", "source": "raw text"},
                "not a cell",
            ],
        }
        text, lang = notebook_to_markdown(json.dumps(nb))
        assert lang == "julia"
        assert text == "# T\n\n```julia\nx = 1\nx\n```\n\n```output\n1\n```\n\nraw text\n"

    def test_bad_json(self) -> None:
        with pytest.raises(SourceError, match="invalid notebook JSON"):
            notebook_to_markdown("{")
        with pytest.raises(SourceError, match="no 'cells' list"):
            notebook_to_markdown("[]")
