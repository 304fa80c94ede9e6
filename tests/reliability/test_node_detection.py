"""Node-death detection of the embedded head (`ray.health_check_*`): a crashed raylet is declared
dead fast enough that Serve stops routing to its replicas within a request's deadline, and a
raylet that is only slow (here: paused) is never declared dead for it.

Two raylets join the session's head. One is SIGKILLed, which its health checks meet with a
refused connection at once; the other is SIGSTOPped for 15 s, so its checks go unanswered but do
not time out (20 s each by default)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from tests_support import alive_nodes, joined_nodes, node_of

from rayweave.cluster.services.runtime import _processes, own_pids
from rayweave.cluster.settings import Settings

from .figures import record

pytestmark = [pytest.mark.reliability, pytest.mark.integration, pytest.mark.slow]

KILLED_DEAD_WITHIN_S = 2.0
PAUSE_S = 15.0


def raylet_pid(node_dir: Path) -> int:
    """The raylet of the node started under `node_dir`."""
    mine = own_pids(node_dir)
    (pid,) = [p for p, cmdline, _ in _processes() if p in mine and "/raylet " in f"{cmdline} "]
    return pid


def alive(node_id: str) -> bool:
    return any(n["NodeID"] == node_id for n in alive_nodes())


def test_a_killed_raylet_is_dead_within_two_seconds_and_a_paused_one_is_not(
    ray_stack: Settings,
) -> None:
    with joined_nodes(ray_stack, ["crashes", "pauses"]) as dirs:
        crashes, pauses = node_of("crashes"), node_of("pauses")
        paused = raylet_pid(dirs["pauses"])
        os.kill(paused, signal.SIGSTOP)
        paused_at = time.monotonic()
        try:
            os.kill(raylet_pid(dirs["crashes"]), signal.SIGKILL)
            killed_at = time.monotonic()
            while alive(crashes):
                assert time.monotonic() - killed_at < 30, (
                    "the killed raylet was never declared dead"
                )
                time.sleep(0.05)
            detected_s = time.monotonic() - killed_at
            while time.monotonic() - paused_at < PAUSE_S:
                assert alive(pauses), (
                    f"a raylet paused for {time.monotonic() - paused_at:.1f}s was declared dead"
                )
                time.sleep(0.5)
        finally:
            os.kill(paused, signal.SIGCONT)
        time.sleep(3.0)  # its late answers arrive; it must still be a member
        assert alive(pauses)
        record(
            test="node death detection",
            killed_dead_s=round(detected_s, 2),
            bound_s=KILLED_DEAD_WITHIN_S,
            paused_s=PAUSE_S,
            paused_stayed_alive=True,
        )
        assert detected_s <= KILLED_DEAD_WITHIN_S
