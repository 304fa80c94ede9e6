"""When a read is sent a second time: after a fixed floor, or after the read's recent 95th
percentile latency when that is later.

Dean and Barroso ("The Tail at Scale", CACM 2013) hedge a request once it has been outstanding
longer than the 95th-percentile latency of its class, which bounds the extra load at about 5%
whatever the load is. A fixed delay alone does not: when a loaded service answers every read in
more than the delay, every read is sent twice, which doubles the work exactly when there is least
to spare. The floor (`serve.hedge_after_ms`) keeps a healthy service, whose 95th percentile is a
few tens of milliseconds, from hedging its ordinary slow calls.

A sample is the time that the copy which answered took from its own send: a read that was hedged
because its replica's node died is answered promptly by the second copy, so the hang does not
raise the delay of the reads after it (it would, if the hedged call's whole wait were counted).
"""

from __future__ import annotations

from collections import deque

import numpy as np

QUANTILE = 0.95
WINDOW = 256
"""Answered reads per method that the quantile is taken over (the last ones)."""
MIN_SAMPLES = 20
"""Fewer answered reads than this: the floor alone (a 95th percentile needs ~20 samples)."""


class HedgeDelay:
    """Per method of one deployment: how long a read waits before its hedge is sent."""

    def __init__(self, floor_s: float, *, quantile: float = QUANTILE, window: int = WINDOW) -> None:
        if floor_s <= 0:
            raise ValueError(f"hedge floor must be > 0 s, got {floor_s}")
        if not 0 < quantile < 1:
            raise ValueError(f"hedge quantile must be in (0, 1), got {quantile}")
        self.floor_s = floor_s
        self.quantile = quantile
        self.window = window
        self._samples: dict[str, deque[float]] = {}

    def observe(self, method: str, seconds: float) -> None:
        """An answered read of `method` and how long its answering copy took."""
        samples = self._samples.get(method)
        if samples is None:
            samples = self._samples[method] = deque(maxlen=self.window)
        samples.append(seconds)

    def delay(self, method: str) -> float:
        samples = self._samples.get(method)
        if samples is None or len(samples) < MIN_SAMPLES:
            return self.floor_s
        return max(self.floor_s, float(np.quantile(np.fromiter(samples, float), self.quantile)))
