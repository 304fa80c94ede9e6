"""Pickled caches: written whole or not at all, a stopped write included."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from rayweave.graph.cache_file import CacheWriteStopped, read_cache, write_cache


def test_a_stopped_write_leaves_the_file_as_it_was_and_nothing_beside_it(tmp_path: Path) -> None:
    path = tmp_path / "cache.pickle"
    write_cache(path, 1, {"edges": list(range(10))})
    stop = threading.Event()
    write_cache(path, 1, {"edges": list(range(20))}, stop=stop)  # not set: written whole
    assert read_cache(path, 1, what="cache") == {"format": 1, "edges": list(range(20))}
    stop.set()
    with pytest.raises(CacheWriteStopped):
        write_cache(path, 1, {"edges": list(range(30))}, stop=stop)
    assert read_cache(path, 1, what="cache") == {"format": 1, "edges": list(range(20))}
    assert [p.name for p in tmp_path.iterdir()] == ["cache.pickle"]
    assert read_cache(path, 2, what="cache") is None  # another format is not used
