"""Start, join and stop Ray for rayweave.

The embedded default is a local head that outlives the command that started it (so `rayweave
ingest`, `serve` and `query` share it), with the dashboard on 127.0.0.1 for `ray job submit`.
Two facts of Ray 2.60 shape this module:

- `ray stop` kills every Ray process on the machine by name. We stop only our own head: the
  processes whose command line names our temp dir, and their descendants.
- With token authentication on, every client (drivers, `ray job submit`) needs
  `RAY_AUTH_MODE=token`; the token file is `~/.ray/auth_token`. `job_submit_env()` says what a
  shell needs, and this module sets it for its own process before connecting.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from rayweave.cluster.errors import ServiceError
from rayweave.cluster.settings import Settings

AUTH_TOKEN_PATH = Path("~/.ray/auth_token").expanduser()
# A sliver of the head node's built-in resource: pins an actor to the head, where `rayweave
# start` keeps its home and the embedded stores' data.
HEAD_NODE = {"node:__internal_head__": 0.001}


@dataclass(frozen=True, slots=True, kw_only=True)
class HeadInfo:
    gcs_address: str
    dashboard_url: str
    temp_dir: Path
    auth: str
    started: bool


def ray_temp_dir(settings: Settings) -> Path:
    return Path(settings.home).expanduser() / "ray"


def ray_console_log(settings: Settings) -> Path:
    """Where the CLI sends what Ray prints to a command's terminal (`rayweave status` names it)."""
    return Path(settings.home).expanduser() / "logs" / "ray-console.log"


def _port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def ray_environment(settings: Settings) -> dict[str, str]:
    """The environment rayweave's Ray processes start with; the raylets pass it to every worker
    (Serve's controller, proxies and replicas included)."""
    # Explicit either way: once ~/.ray/auth_token exists, Ray turns token mode on by itself.
    mode = "token" if settings.ray.auth == "token" else "disabled"
    env = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": mode}
    hosts = {
        "RAY_GRAFANA_HOST": settings.ray.grafana_host,
        "RAY_GRAFANA_IFRAME_HOST": settings.ray.grafana_iframe_host,
        "RAY_PROMETHEUS_HOST": settings.ray.prometheus_host,
        # OpenTelemetry's own variable, read by the OTLP exporter in every proxy and replica.
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": settings.serve.tracing_endpoint,
    }
    env.update({k: v for k, v in hosts.items() if v})
    return env


def head_system_config(settings: Settings) -> dict[str, int]:
    """The GCS's node-death detection (`ray start --head --system-config`): a crashed raylet
    refuses the check and is dead in period x threshold; a slow one is given timeout x threshold."""
    ray_cfg = settings.ray
    return {
        "health_check_initial_delay_ms": ray_cfg.health_check_period_ms,
        "health_check_period_ms": ray_cfg.health_check_period_ms,
        "health_check_failure_threshold": ray_cfg.health_check_failure_threshold,
        "health_check_timeout_ms": ray_cfg.health_check_timeout_ms,
    }


def apply_ray_environment(settings: Settings) -> None:
    """Set Ray's process environment for these settings. Call at an edge (CLI, job, tests)
    before Ray is imported anywhere: Ray reads RAY_AUTH_MODE once, at import time."""
    os.environ.update(ray_environment(settings))


def job_submit_env(settings: Settings) -> dict[str, str]:
    """Environment a shell needs for `ray job submit` / `ray status` against this cluster."""
    return {
        "RAY_ADDRESS": f"http://{settings.ray.dashboard_host}:{settings.ray.dashboard_port}",
        "RAY_AUTH_MODE": ray_environment(settings)["RAY_AUTH_MODE"],
    }


def head_running(settings: Settings) -> bool:
    """Our embedded head answers on its GCS and dashboard ports."""
    return _port_open("127.0.0.1", settings.ray.port) and _port_open(
        settings.ray.dashboard_host, settings.ray.dashboard_port
    )


def _ensure_token() -> None:
    if not AUTH_TOKEN_PATH.exists():
        import secrets

        AUTH_TOKEN_PATH.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(AUTH_TOKEN_PATH, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_hex(32))
    os.chmod(AUTH_TOKEN_PATH, 0o600)


def _head_info(settings: Settings, *, started: bool) -> HeadInfo:
    ray_cfg = settings.ray
    return HeadInfo(
        gcs_address=f"127.0.0.1:{ray_cfg.port}",
        dashboard_url=f"http://{ray_cfg.dashboard_host}:{ray_cfg.dashboard_port}",
        temp_dir=ray_temp_dir(settings),
        auth=ray_cfg.auth,
        started=started,
    )


def start_head(settings: Settings) -> HeadInfo:
    """Start the embedded head, or reuse the one already running. Idempotent."""
    ray_cfg = settings.ray
    temp_dir = ray_temp_dir(settings)
    dashboard = f"http://{ray_cfg.dashboard_host}:{ray_cfg.dashboard_port}"
    if head_running(settings):
        return _head_info(settings, started=False)
    if _port_open("127.0.0.1", ray_cfg.port):
        raise ServiceError(
            f"port {ray_cfg.port} is taken but no Ray dashboard answers on {dashboard}; "
            "set RAYWEAVE_RAY__PORT / RAYWEAVE_RAY__DASHBOARD_PORT to free ports"
        )
    temp_dir.mkdir(parents=True, exist_ok=True)
    if ray_cfg.auth == "token":
        _ensure_token()
    cmd = [
        sys.executable,
        "-m",
        "ray.scripts.scripts",
        "start",
        "--head",
        f"--port={ray_cfg.port}",
        "--node-ip-address=127.0.0.1",
        "--include-dashboard=true",
        f"--dashboard-host={ray_cfg.dashboard_host}",
        f"--dashboard-port={ray_cfg.dashboard_port}",
        f"--temp-dir={temp_dir}",
        f"--object-store-memory={ray_cfg.object_store_memory_mb * 1024 * 1024}",
        "--disable-usage-stats",
        # Ray's two fixed default ports (agent HTTP 52365, client server 10001) would make a
        # second head on this machine lose its job agent ("No available agent to submit job").
        f"--dashboard-agent-listen-port={free_port()}",
        f"--ray-client-server-port={free_port()}",
        f"--system-config={json.dumps(head_system_config(settings))}",
    ]
    if ray_cfg.metrics_export_port is not None:
        cmd.append(f"--metrics-export-port={ray_cfg.metrics_export_port}")
    if ray_cfg.num_cpus is not None:
        cmd.append(f"--num-cpus={ray_cfg.num_cpus}")
    if ray_cfg.num_gpus is not None:
        cmd.append(f"--num-gpus={ray_cfg.num_gpus}")
    # Workers and job drivers inherit the head's environment: put this interpreter's bin first
    # so that `ray job submit -- python -m rayweave...` runs with rayweave installed.
    bin_dir = str(Path(sys.executable).parent)
    path = os.pathsep.join([bin_dir, os.environ.get("PATH", "")])
    _ray_start(settings, cmd, temp_dir / "start.log", what="ray start --head", path=path)
    deadline = time.monotonic() + ray_cfg.start_timeout_s
    while not head_running(settings):
        if time.monotonic() > deadline:
            raise ServiceError(
                f"Ray head did not answer on {dashboard} within {ray_cfg.start_timeout_s}s"
            )
        time.sleep(0.25)
    return _head_info(settings, started=True)


def connect(settings: Settings, *, start: bool = True) -> None:
    """Connect this process to the configured cluster (starting the embedded head if allowed)."""
    import ray

    if ray.is_initialized():
        return
    apply_ray_environment(settings)  # effective only if Ray was not imported yet; see its docstring
    if settings.ray.address is not None:
        address = settings.ray.address
    else:
        if not head_running(settings):
            if not start:
                raise ServiceError(
                    "the rayweave Ray head is not running; start it with `rayweave serve` or "
                    "`rayweave ingest`"
                )
            start_head(settings)
        address = f"127.0.0.1:{settings.ray.port}"
    try:
        ray.init(
            address=address,
            namespace=settings.ray.namespace,
            log_to_driver=False,
            logging_level=logging.WARNING,
            configure_logging=True,
        )
    except ConnectionError as exc:
        raise ServiceError(f"cannot connect to Ray at {address}: {exc}") from exc
    except ray.exceptions.AuthenticationError as exc:
        raise ServiceError(
            f"the Ray head at {address} wants a token this process does not have ({exc}). It is "
            f"another user's or another rayweave home's head: give this one free ports "
            f"(RAYWEAVE_RAY__PORT, RAYWEAVE_RAY__DASHBOARD_PORT), or use that head's token "
            f"(`rayweave status --env` where it was started)"
        ) from exc


def metrics_urls() -> list[str]:
    """Prometheus endpoints of the connected cluster's live nodes: each node's metrics agent
    exports Ray's, Serve's and rayweave's series (`cluster/services/telemetry.py`)."""
    import ray

    return [
        f"http://{node['NodeManagerAddress']}:{node['MetricsExportPort']}/metrics"
        for node in ray.nodes()  # type: ignore[no-untyped-call]
        if node.get("Alive") and node.get("MetricsExportPort")
    ]


def own_pids(temp_dir: Path) -> set[int]:
    """Pids of processes whose command line names `temp_dir`, plus all their descendants."""
    marker = str(temp_dir)
    roots: set[int] = set()
    parents: dict[int, int] = {}
    for pid, cmdline, ppid in _processes():
        parents[pid] = ppid
        if marker in cmdline and pid != os.getpid():
            roots.add(pid)
    found = set(roots)
    changed = True
    while changed:
        changed = False
        for pid, ppid in parents.items():
            if ppid in found and pid not in found and pid != os.getpid():
                found.add(pid)
                changed = True
    return found


def _processes() -> Iterator[tuple[int, str, int]]:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        yield int(entry.name), cmdline, ppid


def _ray_start(
    settings: Settings, cmd: list[str], log: Path, *, what: str, path: str | None = None
) -> None:
    """Run a `ray start` command line with Ray's environment, its output to `log`."""
    env = {**os.environ, **ray_environment(settings)}
    if path is not None:
        env["PATH"] = path
    with log.open("w") as out:
        proc = subprocess.run(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            timeout=settings.ray.start_timeout_s,
            check=False,
        )
    if proc.returncode != 0:
        tail = log.read_text(errors="replace")[-2000:]
        raise ServiceError(f"`{what}` failed (exit {proc.returncode}); see {log}:\n{tail}")


def join_node(
    settings: Settings,
    temp_dir: Path,
    *,
    num_cpus: int = 1,
    resources: Mapping[str, float] | None = None,
) -> None:
    """Start one more raylet on this machine, joined to the embedded head: a second node on one
    box, which is how multi-node behaviour is exercised without a second machine. Give it a
    `temp_dir` of its own under the head's (`stop_head` then stops it too; `stop_processes`
    stops it alone)."""
    temp_dir.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "ray.scripts.scripts",
        "start",
        f"--address=127.0.0.1:{settings.ray.port}",
        "--node-ip-address=127.0.0.1",
        f"--num-cpus={num_cpus}",
        f"--temp-dir={temp_dir}",
        f"--object-store-memory={settings.ray.object_store_memory_mb * 1024 * 1024}",
        "--disable-usage-stats",
    ]
    if resources:
        cmd.append(f"--resources={json.dumps(dict(resources))}")
    _ray_start(settings, cmd, temp_dir / "start.log", what="ray start --address")


def stop_head(settings: Settings, *, grace_s: float = 10.0) -> int:
    """Stop our embedded head and its workers only; returns how many processes were signalled."""
    import ray

    if ray.is_initialized():
        ray.shutdown()
    return stop_processes(
        ray_temp_dir(settings), grace_s=grace_s, also=client_servers(settings.ray.port)
    )


def client_servers(port: int) -> set[int]:
    """Pids of Ray client servers of the head whose GCS listens on `port`. The head's `ray start`
    launches one and exits, so it is nobody's descendant, and its command line names the GCS
    address, not the temp dir: without this it outlived every stop."""
    address = re.compile(rf"--address[= ]\S+:{port}(?!\d)")
    return {
        pid
        for pid, cmdline, _ in _processes()
        if "ray.util.client.server" in cmdline and address.search(cmdline)
    }


def stop_processes(
    temp_dir: Path, *, grace_s: float = 10.0, hard: bool = False, also: Iterable[int] = ()
) -> int:
    """SIGTERM, then SIGKILL, the processes whose command line names `temp_dir` (a head's or a
    joined node's) and their descendants, and the pids in `also`; never anything else (`ray
    stop` would end every Ray process on the machine). `hard` sends SIGKILL at once: a node that
    dies, as in a crash. Returns how many were signalled."""
    pids = own_pids(temp_dir) | set(also)
    steps = ((signal.SIGKILL, 5.0),) if hard else ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0))
    for sig, wait in steps:
        alive = {pid for pid in pids if _signal(pid, sig)}
        deadline = time.monotonic() + wait
        while alive and time.monotonic() < deadline:
            time.sleep(0.2)
            alive = {pid for pid in alive if process_exists(pid)}
        if not alive:
            break
    return len(pids)


def _signal(pid: int, sig: signal.Signals) -> bool:
    try:
        os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False


def process_exists(pid: int) -> bool:
    """Whether process `pid` runs (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie has exited but not been reaped; treat it as gone.
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def free_port() -> int:
    """A port nothing listens on now, on 127.0.0.1 (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
