"""Tasks and the application object that registers them."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from typing import Any

from ferry.broker import Broker, TaskRecord, TaskState, broker_from_url
from ferry.errors import (
    DuplicateTaskError,
    ResultExpiredError,
    SerializationError,
    TaskFailedError,
)
from ferry.retry import RetryPolicy, parse_rate_limit


def new_task_id() -> str:
    """A time-ordered id (ULID-like: 48-bit milliseconds + randomness, hex)."""
    millis = int(time.time() * 1000)
    return f"{millis:012x}{uuid.uuid4().hex[:20]}"


def dumps(value: Any, what: str) -> str:
    try:
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise SerializationError(f"{what}: {exc}") from exc


class AsyncResult:
    """A handle on an enqueued task: its state now, its result later."""

    def __init__(self, app: Ferry, task_id: str) -> None:
        self.app = app
        self.id = task_id

    @property
    def state(self) -> TaskState:
        return self.app.broker.get(self.id).state

    def get(self, timeout: float = 30.0, poll: float = 0.05) -> Any:
        """Wait for the task and return its value; raises TaskFailedError if it died."""
        deadline = time.monotonic() + timeout
        while True:
            record = self.app.broker.get(self.id)
            if record.state == TaskState.SUCCEEDED:
                stored = self.app.broker.result(self.id)
                if stored is None:
                    raise ResultExpiredError(f"result of task {self.id} expired")
                return json.loads(stored)
            if record.state == TaskState.DEAD:
                error_type, _, message = (record.last_error or "Error: unknown").partition(": ")
                raise TaskFailedError(self.id, error_type, message)
            if time.monotonic() >= deadline:
                raise TimeoutError(f"task {self.id} still {record.state.value} after {timeout}s")
            time.sleep(poll)


class Task:
    """A registered function; calling it runs it now, `enqueue` runs it on a worker."""

    def __init__(
        self,
        app: Ferry,
        fn: Callable[..., Any],
        *,
        name: str,
        queue: str,
        priority: int,
        retry: RetryPolicy,
        lease_seconds: float | None,
        rate_limit: str | None,
    ) -> None:
        self.app = app
        self.fn = fn
        self.name = name
        self.queue = queue
        self.priority = priority
        self.retry = retry
        self.lease_seconds = lease_seconds
        self.rate_limit = parse_rate_limit(rate_limit) if rate_limit else None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def enqueue(
        self,
        *args: Any,
        priority: int | None = None,
        idempotency_key: str | None = None,
        **kwargs: Any,
    ) -> AsyncResult:
        """Store a call for a worker and return at once."""
        payload = dumps({"args": list(args), "kwargs": kwargs}, f"arguments of {self.name}")
        if idempotency_key is not None:
            existing = self.app.broker.find_by_key(idempotency_key)
            if existing is not None:
                if existing.args != payload or existing.name != self.name:
                    raise DuplicateTaskError(
                        f"idempotency key {idempotency_key!r} was used with other arguments"
                    )
                return AsyncResult(self.app, existing.id)
        record = TaskRecord(
            id=new_task_id(),
            name=self.name,
            queue=self.queue,
            args=payload,
            priority=self.priority if priority is None else priority,
            idempotency_key=idempotency_key,
        )
        if self.app.eager:
            return self.app.run_eagerly(self, record)
        self.app.broker.push(record)
        return AsyncResult(self.app, record.id)


class Ferry:
    """The application: a broker plus the registry of tasks."""

    def __init__(self, broker_url: str = "sqlite:///ferry.db", *, eager: bool = False,
                 default_queue: str = "default", lease_seconds: float = 30.0) -> None:
        self.broker: Broker = broker_from_url(broker_url)
        self.eager = eager
        self.default_queue = default_queue
        self.lease_seconds = lease_seconds
        self.tasks: dict[str, Task] = {}

    def task(
        self,
        fn: Callable[..., Any] | None = None,
        *,
        name: str | None = None,
        queue: str | None = None,
        priority: int = 5,
        max_attempts: int = 3,
        retry_on: tuple[type[BaseException], ...] = (Exception,),
        retry: RetryPolicy | None = None,
        lease_seconds: float | None = None,
        rate_limit: str | None = None,
    ) -> Any:
        """Register a function as a task (usable as `@app.task` or `@app.task(...)`)."""

        def register(f: Callable[..., Any]) -> Task:
            task = Task(
                self,
                f,
                name=name or f"{f.__module__}.{f.__qualname__}",
                queue=queue or self.default_queue,
                priority=priority,
                retry=retry or RetryPolicy(max_attempts=max_attempts, retry_on=retry_on),
                lease_seconds=lease_seconds,
                rate_limit=rate_limit,
            )
            self.tasks[task.name] = task
            return task

        return register(fn) if fn is not None else register

    def run_eagerly(self, task: Task, record: TaskRecord) -> AsyncResult:
        """Eager mode: run inside `enqueue`, results stored as a worker would."""
        call = json.loads(record.args)
        value = task.fn(*call["args"], **call["kwargs"])
        record.state = TaskState.SUCCEEDED
        self.broker.push(record)
        self.broker.store_result(record.id, dumps(value, f"result of {task.name}"), ttl=86400)
        return AsyncResult(self, record.id)
