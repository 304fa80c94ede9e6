"""Files written whole or not at all."""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, Any

import pytest

from rayweave.cluster.atomic_file import write_atomically


def test_a_write_replaces_the_file_and_a_failed_one_leaves_it(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "file.txt"
    write_atomically(target, lambda f: f.write("first"))
    assert target.read_text() == "first"

    def broken(f: IO[Any]) -> None:
        f.write("half")
        raise RuntimeError("disk gone")

    with pytest.raises(RuntimeError, match="disk gone"):
        write_atomically(target, broken)
    assert target.read_text() == "first"
    assert sorted(p.name for p in target.parent.iterdir()) == ["file.txt"]  # no temporary left
    write_atomically(target, lambda f: f.write(b"\x00bytes"), binary=True)
    assert target.read_bytes() == b"\x00bytes"


def test_a_new_file_gets_the_umask_mode_and_a_replaced_one_keeps_its_own(tmp_path: Path) -> None:
    mask = os.umask(0o022)
    os.umask(mask)
    new = tmp_path / "export.json"
    write_atomically(new, lambda f: f.write("{}"))
    assert new.stat().st_mode & 0o777 == 0o666 & ~mask  # not the temporary file's 0600
    new.chmod(0o640)
    write_atomically(new, lambda f: f.write("[]"))
    assert new.stat().st_mode & 0o777 == 0o640
