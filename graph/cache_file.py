"""Pickled caches beside the graph store: written whole, read only when whole and current.

A cache here only saves work (`graph/layer_snapshot.py`, `graph/match_memo.py`): one that is
missing, torn, foreign or of another format is ignored with a warning, and the caller computes
from the store instead.
"""

from __future__ import annotations

import logging
import pickle
from pathlib import Path
from typing import Any

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


def write_cache(path: Path, fmt: int, data: dict[str, Any]) -> None:
    """Write `data` to `path` atomically (a reader never sees half a file)."""
    blob = {"format": fmt, **data}
    write_atomically(
        path, lambda f: pickle.dump(blob, f, protocol=pickle.HIGHEST_PROTOCOL), binary=True
    )
