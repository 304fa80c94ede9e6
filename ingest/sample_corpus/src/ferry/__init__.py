"""Ferry: a small durable task queue for Python.

    from ferry import Ferry
    app = Ferry(broker_url="sqlite:///ferry.db")

    @app.task(max_attempts=5)
    def send_email(to: str) -> None: ...
"""

from ferry.broker import MemoryBroker, RedisBroker, SQLiteBroker, TaskState
from ferry.errors import (
    BrokerUnavailableError,
    ConfigError,
    DuplicateTaskError,
    FerryError,
    LeaseExpiredError,
    QueueFullError,
    Reject,
    ResultExpiredError,
    ScheduleError,
    SerializationError,
    TaskFailedError,
    TaskNotRegisteredError,
)
from ferry.retry import RetryPolicy
from ferry.task import AsyncResult, Ferry, Task
from ferry.worker import Worker

__version__ = "2.3.0"

__all__ = [
    "AsyncResult",
    "BrokerUnavailableError",
    "ConfigError",
    "DuplicateTaskError",
    "Ferry",
    "FerryError",
    "LeaseExpiredError",
    "MemoryBroker",
    "QueueFullError",
    "RedisBroker",
    "Reject",
    "ResultExpiredError",
    "RetryPolicy",
    "SQLiteBroker",
    "ScheduleError",
    "SerializationError",
    "Task",
    "TaskFailedError",
    "TaskNotRegisteredError",
    "TaskState",
    "Worker",
]
