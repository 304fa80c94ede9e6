"""Python's cyclic garbage collector held off for one bounded, allocation-heavy step.

The corpus pass (`graph/indexing.py`) builds millions of small objects that all live until it
ends: chunk records, tallies, edge rows. Every few hundred allocations past its thresholds the
collector runs, and each run of its oldest generation walks every live object, so its cost grows
with the corpus as well as with the work: at 10k documents it was a third of the pass's compute
(docs/experiments/2026-11-28-collector-pause.md). Nothing the pass builds needs the collector to be
freed (no reference cycles that must go before it ends); what cyclic garbage other code leaves
meanwhile is collected after it. The switch is process-wide, so it is kept to the pass.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """The collector off inside, as it was after (nested pauses keep it off to the outermost)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
