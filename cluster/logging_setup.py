"""`log_level` and `log_encoding`: how rayweave's own loggers write, applied where a process starts.

Every module logs through `logging.getLogger(__name__)`, under the `rayweave` logger. The edges
that build `Settings` (the CLI, the Serve app builder, the ingest job) call `configure_logging`
once with `settings.log_level`. Without a handler anywhere Python prints only warnings (its
last-resort handler), so when neither `rayweave` nor the root logger has one, a handler that
writes to the current `sys.stderr` is added; a process that configured logging itself keeps
its handlers and only the level is set.

Two places write for machines rather than people, one JSON object per line when `log_encoding`
is JSON: the ingest job (`JsonFormatter`: time, level, logger, message, and the Ray job id once
the process joined a cluster) and the Serve replicas, whose `logging_config` the app builder sets
and whose rayweave records `join_serve_logs` hands to Serve's own handlers, so that every line
carries Serve's request id, deployment and replica.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Literal

LOGGER_NAME = "rayweave"
SERVE_LOGGER_NAME = "ray.serve"
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

LogEncoding = Literal["JSON", "TEXT"]


class _Stderr(logging.Handler):
    """Writes to whatever `sys.stderr` is at the time of the record (like logging's last-resort
    handler), so a swapped or redirected stderr (tests, `ray_output_to_log`) is followed."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:  # noqa: BLE001 - logging must not raise; handleError reports it
            self.handleError(record)


class JsonFormatter(logging.Formatter):
    """One JSON object per record, with the Ray job id when the process joined a cluster."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "asctime": self.formatTime(record),
            "levelname": record.levelname,
            "name": record.name,
            "message": record.getMessage(),
        }
        job = _ray_job_id()
        if job:
            line["job_id"] = job
        if record.exc_info:
            line["exc_text"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def _ray_job_id() -> str | None:
    ray = sys.modules.get("ray")  # never imports Ray for a log line
    if ray is None or not ray.is_initialized():
        return None
    try:
        return str(ray.get_runtime_context().get_job_id())
    except Exception:  # noqa: BLE001 - a log line never fails on its context
        return None


def configure_logging(level: str, *, encoding: LogEncoding = "TEXT") -> logging.Logger:
    """Set the `rayweave` logger to `level` ('DEBUG', 'INFO', ...) and `encoding`; idempotent."""
    logger = logging.getLogger(LOGGER_NAME)
    logger.setLevel(level)
    formatter = JsonFormatter() if encoding == "JSON" else logging.Formatter(FORMAT)
    own = [h for h in logger.handlers if isinstance(h, _Stderr)]
    if own:
        for handler in own:
            handler.setFormatter(formatter)
    elif not logger.handlers and not logging.getLogger().handlers:
        handler = _Stderr()
        handler.setFormatter(formatter)
        logger.addHandler(handler)
    return logger


def _in_serve_replica() -> bool:
    try:
        from ray import serve

        serve.get_replica_context()
    except Exception:  # noqa: BLE001 - RayServeException outside a replica, ImportError without Ray
        return False
    return True


def join_serve_logs(level: str) -> logging.Logger:
    """In a Serve replica: rayweave's records go through Serve's own handlers (the replica's log
    file, in the deployment's `logging_config` encoding, with the request id on each line of a
    request). Call it in a deployment's constructor, where Serve has configured its logger;
    outside a replica (a test building a deployment class in process) it changes nothing."""
    logger = logging.getLogger(LOGGER_NAME)
    if not _in_serve_replica():
        return logger
    logger.setLevel(level)
    logger.handlers = list(logging.getLogger(SERVE_LOGGER_NAME).handlers)
    logger.propagate = False
    return logger
