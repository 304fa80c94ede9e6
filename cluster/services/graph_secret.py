"""The embedded graph server's root password, kept in a 0600 file and never on a command line
(other local users can read those); the JVM reads it through `rootPasswordPath`."""

from __future__ import annotations

import secrets
from pathlib import Path

from rayweave.cluster.atomic_file import write_atomically
from rayweave.cluster.errors import ConfigError

# ArcadeDB refuses shorter root passwords.
MIN_PASSWORD_CHARS = 8


def root_password(path: Path, configured: str | None) -> str:
    """The configured password, else the stored one, else a new one; always on disk, 0600."""
    if configured is not None:
        if len(configured) < MIN_PASSWORD_CHARS:
            raise ConfigError(
                f"graph.password must have at least {MIN_PASSWORD_CHARS} characters "
                "(ArcadeDB's rule)"
            )
        if not path.is_file() or path.read_text(encoding="utf-8").strip() != configured:
            write_secret(path, configured)
        return configured
    if path.is_file():
        if path.stat().st_mode & 0o077:
            path.chmod(0o600)
        stored = path.read_text(encoding="utf-8").strip()
        if stored:
            return stored
    generated = secrets.token_urlsafe(24)
    write_secret(path, generated)
    return generated


def write_secret(path: Path, value: str) -> None:
    """Replace `path` atomically with a file created 0600 (never briefly readable by others)."""
    write_atomically(path, lambda handle: handle.write(value), mode=0o600)
