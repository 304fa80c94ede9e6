"""What the `rayweave` commands print, without a running stack: corpus text reaches the terminal
as it is stored."""

from __future__ import annotations

from typing import Any

import pytest
from rich.console import Console

from rayweave.cluster.cli import answer_text, results_table

BRACKETED = [
    "When a [task](tasks.md) raises an exception, Ferry retries it.",
    "def first(xs: list[int]) -> int: return xs[0]",
    "Configure the linter under [tool.ruff] in pyproject.toml.",
    "Colours: [bold]not bold[/bold] and [red]not red[/] stay literal.",
]


def _response(texts: list[str], **hit: Any) -> dict[str, Any]:
    return {
        "query_type": "how-to",
        "profile": "hybrid+graph",
        "results": [
            {
                "text": text,
                "score": 0.5,
                "source": hit.get("source", "/docs/[draft]/retries.md"),
                "section_path": hit.get("section_path", ["Retries [advanced]"]),
                "duplicates": [],
            }
            for text in texts
        ],
    }


def _printed(response: dict[str, Any]) -> str:
    console = Console(width=400, record=True, color_system=None)
    console.print(results_table(response))
    return console.export_text()


@pytest.mark.parametrize("text", BRACKETED)
def test_query_table_prints_bracketed_text_as_stored(text: str) -> None:
    assert text in _printed(_response([text]))


def test_query_table_prints_bracketed_sources_and_sections() -> None:
    printed = _printed(_response(["plain"]))
    assert "/docs/[draft]/retries.md" in printed
    assert "Retries [advanced]" in printed


def test_an_answer_is_printed_as_stored() -> None:
    console = Console(width=400, record=True, color_system=None)
    console.print(answer_text({"answer": "Use [retry](retries.md) with max_attempts=5."}))
    assert "answer: Use [retry](retries.md) with max_attempts=5." in console.export_text()


def test_a_missing_answer_says_why() -> None:
    console = Console(width=400, record=True, color_system=None)
    console.print(answer_text({"answer": None, "answer_note": "no LLM is configured [models.llm]"}))
    assert "no answer: no LLM is configured [models.llm]" in console.export_text()
