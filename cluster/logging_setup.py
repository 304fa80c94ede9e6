"""`log_level`: the level of rayweave's own loggers, applied where a process starts.

Every module logs through `logging.getLogger(__name__)`, under the `rayweave` logger. The edges
that build `Settings` (the CLI, the Serve app builder, the ingest job) call `configure_logging`
once with `settings.log_level`. Without a handler anywhere Python prints only warnings (its
last-resort handler), so when neither `rayweave` nor the root logger has one, a handler that
writes to the current `sys.stderr` is added; a process that configured logging itself keeps
its handlers and only the level is set.
"""

from __future__ import annotations

import logging
import sys

LOGGER_NAME = "rayweave"
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class _Stderr(logging.Handler):
    """Writes to whatever `sys.stderr` is at the time of the record (like logging's last-resort
    handler), so a swapped or redirected stderr (tests, `ray_output_to_log`) is followed."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:  # noqa: BLE001 - logging must not raise; handleError reports it
            self.handleError(record)


def configure_logging(level: str) -> logging.Logger:
    """Set the `rayweave` logger to `level` ('DEBUG', 'INFO', ...); idempotent."""
    logger = logging.getLogger(LOGGER_NAME)
    logger.setLevel(level)
    if not logger.handlers and not logging.getLogger().handlers:
        handler = _Stderr()
        handler.setFormatter(logging.Formatter(FORMAT))
        logger.addHandler(handler)
    return logger
