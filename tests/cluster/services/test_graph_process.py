"""Pid records, /proc probes and log tails of the embedded graph server's process."""

from __future__ import annotations

import os
from pathlib import Path

from rayweave.cluster.services.graph_process import PidRecord, cmdline, log_tail, process_state


def test_pid_record_round_trips() -> None:
    record = PidRecord(pid=42, bolt_port=7687, http_port=2480, database="db", started_at=1.5)
    assert PidRecord.load(record.dump()) == record


def test_this_process_is_seen_and_a_missing_one_is_not() -> None:
    assert process_state(os.getpid()) in {"R", "S"}
    assert cmdline(os.getpid())
    missing = 2**22 + 1  # above the kernel's pid_max default
    assert process_state(missing) is None
    assert cmdline(missing) == []


def test_log_tail_keeps_the_last_lines(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    assert log_tail(log) == "(no log written)"
    log.write_text("", encoding="utf-8")
    assert log_tail(log) == "(log is empty)"
    log.write_text("\n".join(f"line {i}" for i in range(100)), encoding="utf-8")
    assert log_tail(log, 2) == "line 98\nline 99"
