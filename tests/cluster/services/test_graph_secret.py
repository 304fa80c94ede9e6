"""The embedded graph server's root password file."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from rayweave.cluster.errors import ConfigError
from rayweave.cluster.services.graph_secret import root_password


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_generated_once_then_reused_and_private(tmp_path: Path) -> None:
    path = tmp_path / "secret"
    first = root_password(path, None)
    assert len(first) >= 24
    assert mode(path) == 0o600
    assert root_password(path, None) == first


def test_configured_password_replaces_the_stored_one(tmp_path: Path) -> None:
    path = tmp_path / "secret"
    root_password(path, None)
    assert root_password(path, "configured-pw") == "configured-pw"
    assert path.read_text(encoding="utf-8") == "configured-pw"
    assert mode(path) == 0o600


def test_loose_permissions_are_tightened(tmp_path: Path) -> None:
    path = tmp_path / "secret"
    path.write_text("stored-password", encoding="utf-8")
    path.chmod(0o644)
    assert root_password(path, None) == "stored-password"
    assert mode(path) == 0o600


def test_short_configured_password_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="at least 8"):
        root_password(tmp_path / "secret", "short")
