"""How rayweave writes its logs: JSON lines for the ingest job, Serve's own lines (request id
included) in a replica."""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rayweave.cluster.logging_setup import (
    LOGGER_NAME,
    configure_logging,
    join_serve_logs,
)
from rayweave.cluster.settings import Settings


@pytest.fixture
def rayweave_logger() -> Iterator[logging.Logger]:
    logger = logging.getLogger(LOGGER_NAME)
    state = (logger.level, list(logger.handlers), logger.propagate)
    yield logger
    logger.level, logger.propagate = state[0], state[2]
    logger.handlers[:] = state[1]


def test_json_lines_carry_level_logger_message_and_the_failure(
    rayweave_logger: logging.Logger,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    rayweave_logger.handlers.clear()
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    configure_logging("INFO", encoding="JSON")
    try:
        raise ValueError("bad chunk")
    except ValueError:
        logging.getLogger("rayweave.ingest.x").exception("batch %d failed", 3)
    line = json.loads(capsys.readouterr().err.strip())
    assert line["levelname"] == "ERROR"
    assert line["name"] == "rayweave.ingest.x"
    assert line["message"] == "batch 3 failed"
    assert "ValueError: bad chunk" in line["exc_text"]
    ray = sys.modules.get("ray")
    assert ("job_id" in line) == bool(ray is not None and ray.is_initialized())
    # Switching back to text reuses the one handler.
    configure_logging("INFO", encoding="TEXT")
    assert len(rayweave_logger.handlers) == 1
    logging.getLogger("rayweave.ingest.x").info("plain")
    assert "INFO rayweave.ingest.x: plain" in capsys.readouterr().err


class LogProbe:
    """A deployment that logs through a rayweave logger inside a request, as ours do."""

    def __init__(self, level: str) -> None:
        join_serve_logs(level)

    def __call__(self, text: str) -> str:
        from ray.serve.context import _get_serve_request_context

        logging.getLogger("rayweave.serve.probe").info("probe %s", text)
        return str(_get_serve_request_context().request_id)


@pytest.mark.integration
def test_replica_lines_are_json_with_the_request_id(ray_stack: Settings) -> None:
    import ray
    from ray import cloudpickle, serve
    from ray.serve.schema import ServeDeploySchema

    from rayweave.serve.app import _checked, serve_config, start_serve

    # Serve with the session's HTTP options, as `deploy` starts it.
    start_serve(ServeDeploySchema.model_validate(serve_config(ray_stack)))
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    settings = ray_stack.model_copy(update={"log_level": "INFO", "log_encoding": "JSON"})
    probe = _checked(serve.deployment(LogProbe, ray_actor_options={"num_cpus": 0}), settings)
    handle = serve.run(probe.bind("INFO"), name="logprobe", route_prefix=None)
    try:
        request_ids = {handle.remote(f"n{i}").result(): f"probe n{i}" for i in range(3)}
        logs = Path(ray._private.worker._global_node.get_session_dir_path()) / "logs" / "serve"
        lines: list[dict[str, object]] = []
        deadline = time.monotonic() + 30
        while len(lines) < 3 and time.monotonic() < deadline:
            lines = [
                record
                for path in logs.glob("replica_logprobe_*.log")
                for raw in path.read_text().splitlines()
                if raw.startswith("{")
                for record in [json.loads(raw)]
                if str(record.get("message", "")).startswith("probe ")
            ]
            time.sleep(0.5)
        assert {str(r["request_id"]): r["message"] for r in lines} == request_ids
        for record in lines:
            assert record["levelname"] == "INFO", record
            assert record["deployment"] == "logprobe_LogProbe", record  # app_deployment
    finally:
        serve.delete("logprobe")
