"""The embedded graph server's process as this host sees it: its pid record, /proc probes,
ports, log and termination.

Plain functions over pids and paths, kept apart from `GraphServer` (which decides when to start,
reuse or stop) so that they read and test on their own.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

LOG_TAIL_LINES = 40
POLL_S = 0.2


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """True when nothing listens on host:port (a bind succeeds)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last lines of a server's log, for an error that says why it did not start."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log written)"
    return "\n".join(text.splitlines()[-lines:]) or "(log is empty)"


def process_state(pid: int) -> str | None:
    """The /proc state letter of `pid`, or None when it does not exist."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name is parenthesised and may contain spaces; the state follows it.
    return stat.rsplit(")", 1)[1].split()[0]


def cmdline(pid: int) -> list[str]:
    """The argv of `pid` (empty when it is gone or unreadable)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]


def reap(pid: int) -> None:
    """Collect a zombie child so that it leaves the process table (no-op for others' pids)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def terminate(pid: int, grace_s: float, alive: Callable[[int], bool]) -> None:
    """SIGTERM, then SIGKILL after `grace_s`; returns once `alive(pid)` is False (or 5 s more)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if not alive(pid):
            return
        time.sleep(POLL_S)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and alive(pid):
        time.sleep(POLL_S)


@dataclass(frozen=True, slots=True, kw_only=True)
class PidRecord:
    """What the pid file says about a started server: its pid, ports and database."""

    pid: int
    bolt_port: int
    http_port: int
    database: str
    started_at: float

    def dump(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def load(cls, text: str) -> PidRecord:
        raw = json.loads(text)
        return cls(
            pid=int(raw["pid"]),
            bolt_port=int(raw["bolt_port"]),
            http_port=int(raw["http_port"]),
            database=str(raw["database"]),
            started_at=float(raw["started_at"]),
        )
