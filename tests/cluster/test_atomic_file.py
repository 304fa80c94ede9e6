"""Files written whole or not at all."""

from __future__ import annotations

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
