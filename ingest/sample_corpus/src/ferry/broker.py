"""Brokers store queues, leases and results: SQLite (default), Redis and in-memory."""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Protocol

from ferry.errors import (
    BrokerUnavailableError,
    ConfigError,
    LeaseExpiredError,
    QueueFullError,
)


class TaskState(str, Enum):
    PENDING = "PENDING"
    LEASED = "LEASED"
    SUCCEEDED = "SUCCEEDED"
    RETRYING = "RETRYING"
    DEAD = "DEAD"


@dataclass
class TaskRecord:
    """A task as the broker stores it."""

    id: str
    name: str
    queue: str
    args: str  # JSON
    priority: int = 5
    attempts: int = 0
    state: TaskState = TaskState.PENDING
    not_before: float = 0.0
    idempotency_key: str | None = None
    last_error: str | None = None
    history: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Lease:
    """A worker's claim on a task until `expires_at` (monotonic seconds)."""

    task_id: str
    worker: str
    expires_at: float


class Broker(Protocol):
    def push(self, record: TaskRecord) -> None: ...

    def lease(self, queues: list[str], worker: str, seconds: float) -> tuple[TaskRecord, Lease] | None: ...

    def renew(self, lease: Lease, seconds: float) -> Lease: ...

    def complete(self, lease: Lease, record: TaskRecord) -> None: ...

    def expired(self) -> list[TaskRecord]: ...

    def get(self, task_id: str) -> TaskRecord: ...

    def find_by_key(self, key: str) -> TaskRecord | None: ...

    def store_result(self, task_id: str, value: str, ttl: float) -> None: ...

    def result(self, task_id: str) -> str | None: ...


class MemoryBroker:
    """Everything in this process; for tests and notebooks (nothing survives a restart)."""

    def __init__(self, max_length: dict[str, int] | None = None) -> None:
        self.records: dict[str, TaskRecord] = {}
        self.leases: dict[str, Lease] = {}
        self.results: dict[str, tuple[str, float]] = {}
        self.max_length = max_length or {}
        self.lock = threading.Lock()

    def push(self, record: TaskRecord) -> None:
        with self.lock:
            limit = self.max_length.get(record.queue)
            pending = sum(1 for r in self.records.values() if r.queue == record.queue and r.state == TaskState.PENDING)
            if limit is not None and pending >= limit:
                raise QueueFullError(f"queue {record.queue!r} holds {pending} tasks (max_length={limit})")
            self.records[record.id] = record

    def lease(self, queues: list[str], worker: str, seconds: float) -> tuple[TaskRecord, Lease] | None:
        now = time.monotonic()
        with self.lock:
            for queue in queues:
                ready = [
                    r
                    for r in self.records.values()
                    if r.queue == queue and r.state in (TaskState.PENDING, TaskState.RETRYING) and r.not_before <= now
                ]
                if not ready:
                    continue
                record = min(ready, key=lambda r: (-r.priority, r.id))
                record.state = TaskState.LEASED
                lease = Lease(record.id, worker, now + seconds)
                self.leases[record.id] = lease
                return record, lease
        return None

    def renew(self, lease: Lease, seconds: float) -> Lease:
        with self.lock:
            current = self.leases.get(lease.task_id)
            if current is None or current.worker != lease.worker:
                raise LeaseExpiredError(f"lease of task {lease.task_id} held by {lease.worker} expired")
            renewed = replace(current, expires_at=time.monotonic() + seconds)
            self.leases[lease.task_id] = renewed
            return renewed

    def complete(self, lease: Lease, record: TaskRecord) -> None:
        with self.lock:
            current = self.leases.get(lease.task_id)
            if current is None or current.worker != lease.worker:
                raise LeaseExpiredError(f"lease of task {lease.task_id} held by {lease.worker} expired")
            del self.leases[lease.task_id]
            self.records[record.id] = record

    def expired(self) -> list[TaskRecord]:
        now = time.monotonic()
        with self.lock:
            gone = [tid for tid, lease in self.leases.items() if lease.expires_at < now]
            for tid in gone:
                del self.leases[tid]
            return [self.records[tid] for tid in gone]

    def get(self, task_id: str) -> TaskRecord:
        return self.records[task_id]

    def find_by_key(self, key: str) -> TaskRecord | None:
        return next((r for r in self.records.values() if r.idempotency_key == key), None)

    def store_result(self, task_id: str, value: str, ttl: float) -> None:
        self.results[task_id] = (value, time.time() + ttl)

    def result(self, task_id: str) -> str | None:
        value, expires = self.results.get(task_id, (None, 0.0))
        return value if value is not None and expires > time.time() else None


class SQLiteBroker(MemoryBroker):
    """A single-file broker for one host (WAL mode); not for network file systems."""

    def __init__(self, path: str, connect_retries: int = 3) -> None:
        super().__init__()
        self.path = path
        last: Exception | None = None
        for attempt in range(connect_retries):
            try:
                self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute(
                    "CREATE TABLE IF NOT EXISTS tasks (id TEXT PRIMARY KEY, queue TEXT, priority INT, body TEXT)"
                )
                return
            except sqlite3.OperationalError as exc:
                last = exc
                time.sleep(min(1.0, 0.1 * (attempt + 1)))
        raise BrokerUnavailableError(f"cannot open sqlite:///{path}: {last}")


class RedisBroker(MemoryBroker):
    """Redis-backed broker for several hosts; keys of a queue share a {hash tag}."""

    def __init__(self, url: str, connect_retries: int = 3) -> None:
        super().__init__()
        try:
            import redis
        except ImportError as exc:
            raise ConfigError("the Redis broker needs: pip install 'ferry-queue[redis]'") from exc
        self.client = redis.Redis.from_url(url)
        for _ in range(connect_retries):
            try:
                self.client.ping()
                return
            except redis.ConnectionError:
                time.sleep(1.0)
        raise BrokerUnavailableError(f"cannot connect to {url}")

    @staticmethod
    def key(queue: str, part: str) -> str:
        return f"ferry:{{{queue}}}:{part}"


def broker_from_url(url: str) -> Broker:
    """Pick the broker class from the URL scheme (see docs/concepts/brokers.md)."""
    if url.startswith("sqlite:///"):
        return SQLiteBroker(url.removeprefix("sqlite:///"))
    if url.startswith(("redis://", "rediss://")):
        return RedisBroker(url)
    if url == "memory://":
        return MemoryBroker()
    raise ConfigError(f"broker_url {url!r} is not sqlite:///, redis:// or memory://")
