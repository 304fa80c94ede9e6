"""One progress display for long work: ingest, `rayweave eval`'s queries, every `rayweave bench`.

On a terminal it is a rich bar (description, bar, done/total, elapsed; a pulsing bar when the
total is unknown). Without one (logs, `ray job submit`, a captured console) rich draws nothing
live, so a plain line is printed every `PLAIN_PROGRESS_S` seconds and once at the end: long runs
still show that they are moving, and a log says how far each phase got and how long it took.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

__all__ = ["PLAIN_PROGRESS_S", "Advance", "progress_bar"]

PLAIN_PROGRESS_S = 15.0

Advance = Callable[[int], None]
"""Adds `n` finished items to the bar."""


@contextmanager
def progress_bar(
    console: Console,
    label: str,
    total: int | None,
    *,
    unit: str = "",
    detail: Callable[[], str] | None = None,
    plain_every_s: float = PLAIN_PROGRESS_S,
) -> Iterator[Advance]:
    """A bar for `total` items (None: unknown) named `label`; yields `advance(n)`.

    `detail` adds a running figure to the plain lines (ingest: chunks so far).
    """
    started = time.monotonic()
    done = 0
    last_line = started
    plain = not console.is_terminal

    def line() -> str:
        count = f"{done}/{total}" if total is not None else str(done)
        extra = f", {detail()}" if detail is not None else ""
        unit_text = f" {unit}" if unit else ""
        return f"{label}: {count}{unit_text}{extra}, {time.monotonic() - started:.0f}s"

    if plain:

        def advance_plain(n: int = 1) -> None:
            nonlocal done, last_line
            done += n
            if time.monotonic() - last_line >= plain_every_s:
                last_line = time.monotonic()
                console.print(line(), markup=False, highlight=False)

        try:
            yield advance_plain
        finally:
            console.print(line(), markup=False, highlight=False)
        return

    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(unit),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )
    with progress:
        task = progress.add_task(label, total=total)

        def advance_bar(n: int = 1) -> None:
            nonlocal done
            done += n
            progress.update(task, advance=n)

        yield advance_bar
