"""The worker: lease tasks, run them with heartbeats, record outcomes, shut down gracefully."""

from __future__ import annotations

import json
import logging
import signal
import socket
import threading
import time
import traceback
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ferry.broker import Lease, TaskRecord, TaskState
from ferry.errors import LeaseExpiredError, Reject, TaskNotRegisteredError
from ferry.task import Ferry, Task, dumps

log = logging.getLogger("ferry.worker")


class Worker:
    """Runs tasks from `queues` in a pool of `concurrency` threads.

    Each running task holds a lease renewed every `lease_seconds / 3` by the heartbeat thread. On
    SIGTERM the worker stops leasing, waits `shutdown_timeout` seconds for running tasks, then
    releases the rest so that other workers retry them.
    """

    def __init__(
        self,
        app: Ferry,
        queues: list[str],
        *,
        concurrency: int = 4,
        shutdown_timeout: float = 25.0,
        poll_interval: float = 0.5,
    ) -> None:
        self.app = app
        self.queues = queues
        self.concurrency = concurrency
        self.shutdown_timeout = shutdown_timeout
        self.poll_interval = poll_interval
        self.name = f"{socket.gethostname()}:{threading.get_native_id()}"
        self.pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="ferry-task")
        self.running: dict[str, tuple[Lease, Future[Any]]] = {}
        self.stopping = threading.Event()
        self.lock = threading.Lock()

    # -- main loop ------------------------------------------------------------------------------

    def run(self) -> None:
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        heartbeat = threading.Thread(target=self._heartbeat_loop, name="ferry-heartbeat", daemon=True)
        heartbeat.start()
        log.info("worker %s waiting for tasks on %s", self.name, ",".join(self.queues))
        while not self.stopping.is_set():
            self._requeue_expired()
            if len(self.running) >= self.concurrency:
                time.sleep(self.poll_interval)
                continue
            leased = self.app.broker.lease(self.queues, self.name, self.app.lease_seconds)
            if leased is None:
                time.sleep(self.poll_interval)
                continue
            record, lease = leased
            future = self.pool.submit(self._execute, record, lease)
            with self.lock:
                self.running[record.id] = (lease, future)
        self._shutdown()

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self.stopping.is_set():
            raise SystemExit(1)  # second signal: stop now
        log.info("worker %s stopping (signal %d)", self.name, signum)
        self.stopping.set()

    # -- running one task -----------------------------------------------------------------------

    def _execute(self, record: TaskRecord, lease: Lease) -> None:
        task = self.app.tasks.get(record.name)
        started = time.monotonic()
        record.attempts += 1
        try:
            if task is None:
                raise TaskNotRegisteredError(f"no task named {record.name!r} in this worker")
            call = json.loads(record.args)
            value = task.fn(*call["args"], **call["kwargs"])
        except Exception as error:
            self._failed(task, record, lease, error)
        else:
            record.state = TaskState.SUCCEEDED
            self.app.broker.store_result(record.id, dumps(value, f"result of {record.name}"), ttl=86400)
            self._complete(lease, record)
            log.info("task %s %s succeeded in %.3fs", record.id, record.name, time.monotonic() - started)
        finally:
            with self.lock:
                self.running.pop(record.id, None)

    def _failed(self, task: Task | None, record: TaskRecord, lease: Lease, error: Exception) -> None:
        record.last_error = f"{type(error).__name__}: {error}"
        record.history.append("".join(traceback.format_exception_only(type(error), error)).strip())
        if task is not None and not isinstance(error, Reject) and task.retry.should_retry(error, record.attempts):
            delay = task.retry.delay(record.attempts + 1)
            record.state = TaskState.RETRYING
            record.not_before = time.monotonic() + delay
            log.warning("task %s failed (%s); retry %d in %.1fs", record.id, record.last_error, record.attempts + 1, delay)
        else:
            record.state = TaskState.DEAD
            record.queue = f"{record.queue}.dead"
            log.error("task %s is dead after %d attempts: %s", record.id, record.attempts, record.last_error)
        self._complete(lease, record)

    def _complete(self, lease: Lease, record: TaskRecord) -> None:
        try:
            self.app.broker.complete(lease, record)
        except LeaseExpiredError:
            log.warning("task %s finished after its lease expired; result discarded", record.id)

    # -- leases ---------------------------------------------------------------------------------

    def _heartbeat_loop(self) -> None:
        interval = self.app.lease_seconds / 3
        while not self.stopping.wait(interval):
            with self.lock:
                leases = [(tid, lease) for tid, (lease, _f) in self.running.items()]
            for tid, lease in leases:
                try:
                    renewed = self.app.broker.renew(lease, self.app.lease_seconds)
                except LeaseExpiredError as error:
                    log.error("%s", error)
                    continue
                with self.lock:
                    if tid in self.running:
                        self.running[tid] = (renewed, self.running[tid][1])

    def _requeue_expired(self) -> None:
        """Tasks whose lease ran out count one failed attempt (docs/concepts/leases.md)."""
        for record in self.app.broker.expired():
            record.attempts += 1
            task = self.app.tasks.get(record.name)
            error = LeaseExpiredError(f"lease of task {record.id} expired")
            if task is not None and task.retry.should_retry(error, record.attempts):
                record.state = TaskState.RETRYING
                record.not_before = time.monotonic() + task.retry.delay(record.attempts + 1)
            else:
                record.state = TaskState.DEAD
                record.queue = f"{record.queue}.dead"
            record.last_error = str(error)
            self.app.broker.push(record)

    def _shutdown(self) -> None:
        deadline = time.monotonic() + self.shutdown_timeout
        while self.running and time.monotonic() < deadline:
            time.sleep(0.1)
        with self.lock:
            left = list(self.running.values())
        for lease, _future in left:
            log.warning("releasing lease of task %s after shutdown_timeout", lease.task_id)
        self.pool.shutdown(wait=False, cancel_futures=True)


def run_until_idle(app: Ferry, *, max_tasks: int = 100, queues: list[str] | None = None) -> list[TaskRecord]:
    """Run tasks in this thread until no task is ready (tests and notebooks; backoff skipped)."""
    worker = Worker(app, queues or [app.default_queue], concurrency=1)
    done: list[TaskRecord] = []
    for _ in range(max_tasks):
        leased = app.broker.lease(worker.queues, worker.name, app.lease_seconds)
        if leased is None:
            break
        record, lease = leased
        worker._execute(record, lease)
        record.not_before = 0.0  # skip the backoff delay
        done.append(record)
    return done
