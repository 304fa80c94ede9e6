"""Files written whole or not at all: readers never see half of one, and a failed write leaves
the previous file in place."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any


def _process_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# Read once, at import: setting the umask to read it is process-wide and not thread-safe.
_NEW_FILE_MODE = 0o666 & ~_process_umask()


def write_atomically(
    path: Path, write: Callable[[IO[Any]], object], *, binary: bool = False, mode: int | None = None
) -> None:
    """Call `write` on a temporary file beside `path`, then rename it over `path`. The file gets
    `mode`; None: the mode of the one it replaces, or what `open` would give a new one (the
    temporary file is private, 0600, so a secret is never briefly readable, and an exported file
    must not stay so)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = _NEW_FILE_MODE
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        handle: IO[Any] = os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8")
        with handle:
            write(handle)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
