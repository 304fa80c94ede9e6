"""The shared progress display: a live bar on a terminal, plain lines in logs."""

from __future__ import annotations

import io

from rich.console import Console

from rayweave.cluster.progress import progress_bar


class TestProgressBar:
    def test_plain_console_prints_periodic_and_final_lines(self) -> None:
        out = io.StringIO()
        console = Console(file=out, width=200)
        assert not console.is_terminal
        chunks = 0
        with progress_bar(
            console,
            "ingest c",
            4,
            unit="documents",
            detail=lambda: f"{chunks} chunks",
            plain_every_s=0.0,
        ) as advance:
            for _ in range(2):
                chunks += 3
                advance(2)
        lines = out.getvalue().splitlines()
        assert [line.rsplit(",", 1)[0] for line in lines] == [
            "ingest c: 2/4 documents, 3 chunks",
            "ingest c: 4/4 documents, 6 chunks",
            "ingest c: 4/4 documents, 6 chunks",  # the closing line
        ]

    def test_quiet_between_intervals_and_unknown_total(self) -> None:
        out = io.StringIO()
        with progress_bar(Console(file=out), "baseline", None) as advance:
            advance(1)
            advance(1)
        assert out.getvalue().startswith("baseline: 2, ")
        assert out.getvalue().count("\n") == 1

    def test_terminal_draws_a_bar_with_the_count(self) -> None:
        out = io.StringIO()
        console = Console(file=out, force_terminal=True, width=120)
        with progress_bar(console, "queries dense", 3, unit="queries") as advance:
            for _ in range(3):
                advance(1)
        screen = out.getvalue()
        assert "queries dense" in screen
        assert "3/3" in screen
