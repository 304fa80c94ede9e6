"""The `rayweave` command line end to end, as a user runs it: ingest -> serve -> query -> status ->
`ray job submit` -> stop, with an isolated home and free ports (the session stack is untouched)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests_support import REPO, SAMPLE_CORPUS, free_ports, stack_env

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent


def rayweave(
    env: dict[str, str], *args: str, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "rayweave"), *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def port_open(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def cli_env() -> Iterator[dict[str, str]]:
    home = Path(tempfile.mkdtemp(prefix="rwc-", dir="/tmp"))
    env = {**os.environ, **stack_env(home), "NO_COLOR": "1", "COLUMNS": "200"}
    env["RAYWEAVE_RAY__METRICS_EXPORT_PORT"] = str(free_ports(1)[0])
    env.pop("RAY_ADDRESS", None)
    # As in a user's shell: the CLI must set Ray's auth mode itself (this session's conftest
    # set it).
    env.pop("RAY_AUTH_MODE", None)
    yield env
    rayweave(env, "stop", timeout=120)
    shutil.rmtree(home, ignore_errors=True)


def test_help_explains_every_command(cli_env: dict[str, str]) -> None:
    top = rayweave(cli_env, "--help")
    assert top.returncode == 0
    for command in ("ingest", "serve", "query", "status", "stop", "delete", "bench", "eval"):
        assert command in top.stdout
        sub = rayweave(cli_env, command, "--help")
        assert sub.returncode == 0, sub.stderr
        assert len(sub.stdout.splitlines()) > 3
    assert "--fresh" in rayweave(cli_env, "eval", "--help").stdout


def test_bad_input_exits_2_with_the_problem(cli_env: dict[str, str], tmp_path: Path) -> None:
    missing = rayweave(cli_env, "ingest", str(tmp_path / "missing"))
    assert missing.returncode == 2
    assert "does not exist" in missing.stderr
    (tmp_path / "empty").mkdir()
    empty = rayweave(cli_env, "ingest", str(tmp_path / "empty"))
    assert empty.returncode == 2
    assert "empty corpus" in empty.stderr


def test_bench_code_set_writes_a_beir_folder_or_names_the_missing_package(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    made = rayweave(
        cli_env, "bench", "code-set", str(tmp_path / "set"), "--package", "httpx",
        "--queries", "5", "--max-documents", "20",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert "20 functions" in made.stdout
    assert "5 queries" in made.stdout
    assert len((tmp_path / "set" / "qrels" / "test.tsv").read_text().splitlines()) == 6
    missing = rayweave(cli_env, "bench", "code-set", str(tmp_path / "x"), "--package", "nope_pkg")
    assert missing.returncode == 2
    assert "'nope_pkg' is not installed" in missing.stderr


@pytest.mark.parametrize("command", ["models", "ingest", "graph"])
def test_dev_set_benchmarks_need_a_data_folder_and_name_the_flag(
    cli_env: dict[str, str], tmp_path: Path, command: str
) -> None:
    """No default data folder: the development sets are not part of a clone."""
    env = {k: v for k, v in cli_env.items() if k != "RAYWEAVE_DATA"}
    unset = rayweave(env, "bench", command)
    assert unset.returncode == 2
    assert "pass --data DIR (or set RAYWEAVE_DATA=DIR)" in unset.stderr
    absent = rayweave({**env, "RAYWEAVE_DATA": str(tmp_path / "nope")}, "bench", command)
    assert absent.returncode == 2
    assert f"--data {tmp_path / 'nope'}: no such folder" in absent.stderr


def test_ingest_prints_its_progress_and_summary_only(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    from PIL import Image

    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "guide.md").write_text("# Guide\n\nWhen a [task](tasks.md) raises, it is retried.\n")
    (folder / "mkdocs.yaml").write_text("site_name: Ferry\n")
    Image.new("RGB", (4, 4)).save(folder / "logo.png")
    Image.new("RGB", (4, 4)).save(folder / "spinner.gif")
    (folder / "broken.md").write_bytes(b"\x00\x01\x02")
    run = rayweave(cli_env, "ingest", str(folder), "--collection", "mixed")
    assert run.returncode == 0, run.stderr[-3000:]
    # Ray's own lines (C++ core worker, Ray Data, raylet notices) stay in the log file.
    for noise in ("core_worker", "Progress bars disabled", "worker processes", "(raylet)", "INFO"):
        assert noise not in run.stdout + run.stderr, noise
    assert "ingest mixed" in run.stderr  # the progress line (no terminal: plain)
    assert "5 seen: 2 inserted, 0 updated, 0 unchanged, 1 failed" in run.stdout
    assert "2 not ingested by type (1 .gif, 1 .png)" in run.stdout
    assert "models.clip" in run.stdout
    assert "broken.md: binary content" in run.stdout
    log = Path(cli_env["RAYWEAVE_HOME"]) / "logs" / "ray-console.log"
    assert log.is_file()


def test_ingest_serve_query_status_job_stop(cli_env: dict[str, str], tmp_path: Path) -> None:
    ingest = rayweave(cli_env, "ingest", str(SAMPLE_CORPUS))
    assert ingest.returncode == 0, ingest.stderr[-3000:]
    assert "inserted" in ingest.stdout
    assert re.search(
        r"entity layer: [1-9]\d* entities written, edges [1-9]\d* written", ingest.stdout
    )

    again = rayweave(cli_env, "ingest", str(SAMPLE_CORPUS))
    assert again.returncode == 0
    assert " 0 inserted" in again.stdout
    assert "unchanged" in again.stdout

    rebuilt = rayweave(cli_env, "graph", "rebuild")
    assert rebuilt.returncode == 0, rebuilt.stderr[-3000:]
    assert re.search(
        r"graph rayweave: [1-9]\d* entities written, edges [1-9]\d* written", rebuilt.stdout
    )
    stats = rayweave(cli_env, "graph", "stats")
    assert stats.returncode == 0, stats.stderr[-3000:]
    assert re.search(r"graph rayweave: [1-9]\d* nodes, [1-9]\d* relationships", stats.stdout)
    assert re.search(r"nodes: .*Document [1-9]", stats.stdout)
    assert re.search(r"relationships: .*MENTIONS [1-9]", stats.stdout)

    # Another user (no ~/.ray/auth_token) on the same ports: told whose head it is, no traceback.
    stranger = {**cli_env, "HOME": str(tmp_path / "stranger")}
    refused = rayweave(stranger, "ingest", str(SAMPLE_CORPUS))
    assert refused.returncode == 1, refused.stderr[-3000:]
    assert "wants a token" in refused.stderr
    assert "Traceback" not in refused.stderr

    served = rayweave(cli_env, "serve")
    assert served.returncode == 0, served.stderr[-3000:]
    port = cli_env["RAYWEAVE_SERVE__PORT"]
    assert f"http://127.0.0.1:{port}" in served.stdout

    answer = rayweave(cli_env, "query", "How do I retry a failed task?", "--json")
    assert answer.returncode == 0, answer.stderr
    assert '"results"' in answer.stdout
    assert "retries.md" in answer.stdout or "retry.py" in answer.stdout

    empty = rayweave(cli_env, "query", "")
    assert empty.returncode == 2
    assert "query is empty" in empty.stderr
    huge = rayweave(cli_env, "query", "x" * 100_000)
    assert huge.returncode == 2

    status = rayweave(cli_env, "status")
    assert status.returncode == 0
    assert "running" in status.stdout
    # The collection just served holds its engine; `qdrant.idle_close_s` would release it.
    assert re.search(
        r"stores\s+\d+ of \d+ holding an engine: .*\brayweave \(open, idle \d+s\)", status.stdout
    ), status.stdout
    # The node's address is what Ray detected (often not loopback); the port is the one we set.
    port = cli_env["RAYWEAVE_RAY__METRICS_EXPORT_PORT"]
    found = re.search(rf"http://[\w.:-]+:{port}/metrics", status.stdout)
    assert found, status.stdout
    metrics_url = found.group(0)
    assert "ray_" in httpx.get(metrics_url, timeout=30).text
    exports = rayweave(cli_env, "status", "--env")
    job_env = dict(cli_env)
    for line in exports.stdout.splitlines():
        key, _, value = line.removeprefix("export ").partition("=")
        job_env[key] = value
    assert job_env["RAY_AUTH_MODE"] == "token"

    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "note.md").write_text(
        "# Ferry note\n\nThe tide scheduler flushes leases every 30 seconds.\n"
    )
    for _attempt in range(6):
        job = submit_job(extra, job_env)
        # The head's job agent registers a little after the dashboard answers ("try again later").
        if "No available agent" not in job.stderr:
            break
        time.sleep(10)
    assert job.returncode == 0, (job.stdout + job.stderr)[-3000:]
    assert "1 inserted" in job.stdout, job.stdout[-3000:]

    stopped = rayweave(cli_env, "stop", timeout=180)
    assert stopped.returncode == 0, stopped.stderr
    for key in ("RAYWEAVE_RAY__PORT", "RAYWEAVE_GRAPH__EMBEDDED_PORT", "RAYWEAVE_SERVE__PORT"):
        assert not port_open(int(cli_env[key])), key


def submit_job(folder: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        # As the README has it: the repo as working dir, plain `python` (the head's interpreter).
        [
            str(BIN / "ray"),
            "job",
            "submit",
            "--working-dir",
            ".",
            "--",
            "python",
            "-m",
            "rayweave.ingest.job",
            str(folder),
        ],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
