"""Pickled caches beside the graph store: written whole, read only when whole and current.

A cache here only saves work (`graph/layer_snapshot.py`, `graph/match_memo.py`): one that is
missing, torn, foreign or of another format is ignored with a warning, and the caller computes
from the store instead.
"""

from __future__ import annotations

import logging
import pickle
import threading
from pathlib import Path
from typing import IO, Any

from rayweave.cluster.atomic_file import write_atomically

log = logging.getLogger(__name__)


def read_cache(path: Path, fmt: int, *, what: str) -> dict[str, Any] | None:
    """The mapping saved at `path` in format `fmt`; None when there is none or it is unusable."""
    try:
        with path.open("rb") as handle:
            data = pickle.load(handle)
    except FileNotFoundError:
        return None
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError) as exc:
        log.warning("%s %s is unreadable (%s); ignoring it", what, path, exc)
        return None
    if not isinstance(data, dict) or data.get("format") != fmt:
        log.warning("%s %s has another format; ignoring it", what, path)
        return None
    return data


class CacheWriteStopped(Exception):
    """A cache write stopped half way by its `stop` event: the file is as it was before."""


def write_cache(
    path: Path, fmt: int, data: dict[str, Any], *, stop: threading.Event | None = None
) -> None:
    """Write `data` to `path` atomically (a reader never sees half a file); `stop`, once set,
    ends a write in progress at its next frame with `CacheWriteStopped` (a 66 MB snapshot takes
    seconds to pickle, and a newer one may make it pointless)."""
    blob = {"format": fmt, **data}

    def dump(handle: IO[Any]) -> None:
        out = handle if stop is None else _Stoppable(handle, stop)
        pickle.dump(blob, out, protocol=pickle.HIGHEST_PROTOCOL)

    write_atomically(path, dump, binary=True)


class _Stoppable:
    """A file that refuses to take more once `stop` is set."""

    __slots__ = ("_handle", "_stop")

    def __init__(self, handle: IO[Any], stop: threading.Event) -> None:
        self._handle, self._stop = handle, stop

    def write(self, data: Any) -> int:
        if self._stop.is_set():
            raise CacheWriteStopped("the cache write was stopped")
        return int(self._handle.write(data))
