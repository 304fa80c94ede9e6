"""The embedded ArcadeDB graph server: a real JVM on free 127.0.0.1 ports under a temp home."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import neo4j
import pytest
from tests_support import free_ports

from rayweave.cluster.errors import ConfigError, ServiceError
from rayweave.cluster.services.graph_process import port_is_free
from rayweave.cluster.services.graph_server import GraphServer, resolve_graph_connection
from rayweave.cluster.settings import Settings

pytestmark = pytest.mark.integration


def make_server(home: Path, **kwargs: object) -> GraphServer:
    bolt, http = free_ports(2)
    params: dict[str, object] = {
        "home": home,
        "bolt_port": bolt,
        "http_port": http,
        "database": "kg",
        "heap_mb": 256,
        "start_timeout_s": 120.0,
        "stop_timeout_s": 20.0,
    }
    params.update(kwargs)
    return GraphServer(**params)  # type: ignore[arg-type]


def bolt_ping(server: GraphServer, password: str) -> int:
    with neo4j.GraphDatabase.driver(server.uri, auth=("root", password)) as driver:
        records, _, _ = driver.execute_query("RETURN 41 + 1 AS x", database_=server.database)
    return int(records[0]["x"])


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GraphServer]:
    server = make_server(tmp_path_factory.mktemp("graph-home"))
    server.start()
    yield server
    server.stop()


class TestGraphServer:
    def test_start_answers_bolt_and_records_pid(self, running: GraphServer) -> None:
        conn = running.start()
        assert conn.embedded
        assert conn.database == "kg"
        assert conn.uri == running.uri
        assert bolt_ping(running, conn.password) == 42
        status = running.status()
        assert status.running
        assert status.pid is not None
        assert running.pid_path.is_file()
        assert running.log_path.is_file()
        assert "password" not in repr(conn)

    def test_secret_file_is_private_and_not_on_the_command_line(self, running: GraphServer) -> None:
        mode = stat.S_IMODE(running.secret_path.stat().st_mode)
        assert mode == 0o600
        secret = running.secret_path.read_text()
        assert len(secret) >= 24
        pid = running.status().pid
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode()
        assert secret not in cmdline
        assert secret not in running.log_path.read_text()

    def test_second_instance_reuses_the_live_server(self, running: GraphServer) -> None:
        pid = running.status().pid
        twin = GraphServer(
            home=running.home,
            bolt_port=running.bolt_port,
            http_port=running.http_port,
            database="kg",
        )
        started = time.monotonic()
        conn = twin.start()
        assert time.monotonic() - started < 5.0
        assert twin.status().pid == pid
        assert bolt_ping(twin, conn.password) == 42

    def test_reuse_with_other_port_is_refused(self, running: GraphServer) -> None:
        (other,) = free_ports(1)
        twin = GraphServer(
            home=running.home, bolt_port=other, http_port=running.http_port, database="kg"
        )
        with pytest.raises(ServiceError, match=str(running.bolt_port)):
            twin.start()

    def test_server_runs_in_its_own_session(self, running: GraphServer) -> None:
        pid = running.status().pid
        assert pid is not None
        assert os.getsid(pid) == pid != os.getsid(0)


class TestLifecycle:
    def test_outlives_the_process_that_started_it_then_stops(self, tmp_path: Path) -> None:
        server = make_server(tmp_path / "g")
        code = (
            "from pathlib import Path; "
            "from rayweave.cluster.services.graph_server import GraphServer; "
            f"GraphServer(home=Path({str(server.home)!r}), bolt_port={server.bolt_port}, "
            f"http_port={server.http_port}, database='kg', heap_mb=256).start()"
        )
        subprocess.run([sys.executable, "-c", code], check=True, timeout=180)
        try:
            status = server.status()
            assert status.running, server.log_path.read_text()
            assert bolt_ping(server, server.secret_path.read_text()) == 42
        finally:
            assert server.stop() is True
        assert not server.status().running
        assert not server.pid_path.exists()
        assert port_is_free(server.bolt_port)
        assert server.stop() is False

    def test_stale_pid_file_is_replaced(self, tmp_path: Path) -> None:
        server = make_server(tmp_path / "g")
        server.home.mkdir(parents=True)
        dead = subprocess.Popen(["true"])
        dead.wait()
        # A dead pid, then a live pid that is not an ArcadeDB server (this test process).
        for stale_pid in (dead.pid, os.getpid()):
            server.pid_path.write_text(
                f'{{"pid": {stale_pid}, "bolt_port": {server.bolt_port}, '
                f'"http_port": {server.http_port}, "database": "kg", "started_at": 0}}'
            )
            assert not server.status().running
        server.pid_path.write_text("not json")
        try:
            server.start()
            pid = server.status().pid
            assert pid not in (None, dead.pid, os.getpid())
        finally:
            server.stop()

    def test_port_in_use_names_the_port(self, tmp_path: Path) -> None:
        server = make_server(tmp_path / "g")
        with socket.socket() as squatter:
            squatter.bind(("127.0.0.1", server.bolt_port))
            squatter.listen()
            with pytest.raises(ServiceError, match=rf"port {server.bolt_port}\b.*in use"):
                server.start()
        assert not server.pid_path.exists()

    def test_jvm_death_reports_the_log_tail(self, tmp_path: Path) -> None:
        server = make_server(tmp_path / "g", heap_mb=4)  # too small a heap: the JVM dies at once
        with pytest.raises(ServiceError, match=r"(?s)exited during start-up.*OutOfMemoryError"):
            server.start()
        assert not server.pid_path.exists()

    def test_a_child_not_yet_the_jvm_is_waited_for_not_declared_dead(self, tmp_path: Path) -> None:
        """Between fork and exec the child's command line is not the server's: the start waits
        (here until its timeout, nothing answering), and reports an exit only once there is one."""
        import subprocess

        server = make_server(tmp_path / "g", start_timeout_s=1.0)
        child = subprocess.Popen(["sleep", "30"])
        server._child = child
        try:
            with pytest.raises(ServiceError, match="did not answer on Bolt port"):
                server._wait_ready(child.pid, "unused-password")
            child.kill()
            child.wait()
            with pytest.raises(ServiceError, match="exited during start-up"):
                server._wait_ready(child.pid, "unused-password")
        finally:
            child.kill()
            child.wait()

    def test_wrong_password_for_existing_data_is_explained(self, tmp_path: Path) -> None:
        server = make_server(tmp_path / "g", password="first-password-1")
        server.start()
        server.stop()
        again = GraphServer(
            home=server.home,
            bolt_port=server.bolt_port,
            http_port=server.http_port,
            database="kg",
            heap_mb=256,
            password="second-password-2",
        )
        with pytest.raises(ServiceError, match="rejected the root password"):
            again.start()
        assert not again.status().running


class TestResolveConnection:
    def test_configured_server_is_returned_without_starting_anything(self, tmp_path: Path) -> None:
        settings = Settings(
            home=tmp_path,
            graph={"uri": "bolt://db.example:7687", "user": "neo4j", "password": "pw-123456"},
        )
        conn = resolve_graph_connection(settings)
        assert (conn.uri, conn.user, conn.password, conn.embedded) == (
            "bolt://db.example:7687",
            "neo4j",
            "pw-123456",
            False,
        )
        assert not (tmp_path / "graph").exists()

    def test_bad_uri_scheme_is_a_config_error(self, tmp_path: Path) -> None:
        settings = Settings(home=tmp_path, graph={"uri": "http://db:7474"})
        with pytest.raises(ConfigError, match=r"graph\.uri"):
            resolve_graph_connection(settings)

    def test_embedded_server_from_settings(self, tmp_path: Path) -> None:
        bolt, http = free_ports(2)
        settings = Settings(
            home=tmp_path,
            graph={"embedded_port": bolt, "embedded_http_port": http, "embedded_heap_mb": 256},
        )
        conn = resolve_graph_connection(settings)
        server = GraphServer.from_settings(settings)
        try:
            assert conn.embedded
            assert conn.uri == f"bolt://127.0.0.1:{bolt}"
            assert conn.database == "rayweave"
            assert server.secret_path == tmp_path.resolve() / "graph" / "secret"
            assert resolve_graph_connection(settings).password == conn.password
        finally:
            assert server.stop()

    def test_embedded_server_refuses_other_users(self, tmp_path: Path) -> None:
        settings = Settings(home=tmp_path, graph={"user": "neo4j"})
        with pytest.raises(ConfigError, match="root"):
            GraphServer.from_settings(settings)
