"""Ferry's exceptions; each carries the error code documented in docs/troubleshooting.md."""

from __future__ import annotations


class FerryError(Exception):
    """Base class: `code` is the stable error code (E1001...) printed in logs."""

    code = "E1000"

    def __init__(self, message: str) -> None:
        super().__init__(f"{self.code} {type(self).__name__}: {message}")
        self.detail = message


class BrokerUnavailableError(FerryError):
    """The broker cannot be reached after `broker_connect_retries` attempts."""

    code = "E1001"


class SerializationError(FerryError):
    """Task arguments or a result are not JSON-serializable."""

    code = "E1002"


class LeaseExpiredError(FerryError):
    """A task's lease ran out before the worker finished it; the run counts as failed."""

    code = "E1003"


class TaskNotRegisteredError(FerryError):
    """A worker received a task name it has no function for."""

    code = "E1004"


class DuplicateTaskError(FerryError):
    """An idempotency key was reused with different arguments within the dedupe window."""

    code = "E1005"


class QueueFullError(FerryError):
    """The queue reached its `max_length`: backpressure for the producer."""

    code = "E1006"


class ResultExpiredError(FerryError):
    """The result was requested after `result_ttl`."""

    code = "E1007"


class ScheduleError(FerryError):
    """An invalid cron expression, or another beat process holds the scheduler lock."""

    code = "E1008"


class ConfigError(FerryError):
    """A setting has an invalid value; the message names the setting."""

    code = "E1009"


class TaskFailedError(Exception):
    """Raised by `AsyncResult.get` when the task ended in the dead-letter queue."""

    def __init__(self, task_id: str, error_type: str, message: str) -> None:
        super().__init__(f"task {task_id} failed: {error_type}: {message}")
        self.task_id = task_id
        self.error_type = error_type


class Reject(Exception):
    """Raise inside a task to give up at once: no retry, straight to the dead-letter queue."""
