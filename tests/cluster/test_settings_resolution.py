"""Settings that cannot lie: a Qdrant `url` selects the client backend or is refused with the
fix, `config_file` from the environment is read, and `log_level` reaches the loggers."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from rayweave.cluster.errors import ConfigError
from rayweave.cluster.logging_setup import LOGGER_NAME, configure_logging
from rayweave.cluster.settings import QdrantSettings, Settings, load_settings

SERVER = "http://qdrant:6333"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No RAYWEAVE_* variables and a working folder without a rayweave.toml."""
    for key in [k for k in os.environ if k.startswith("RAYWEAVE_")]:
        monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    return tmp_path


class TestQdrantUrlSelectsTheClient:
    def test_from_the_environment(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("RAYWEAVE_QDRANT__URL", SERVER)
        s = load_settings()
        assert (s.qdrant.backend, s.qdrant.url) == ("client", SERVER)

    def test_from_a_named_toml(self, clean_env: Path) -> None:
        conf = clean_env / "conf.toml"
        conf.write_text(f'[qdrant]\nurl = "{SERVER}"\n')
        s = load_settings(conf)
        assert (s.qdrant.backend, s.qdrant.url) == ("client", SERVER)

    def test_from_the_cwd_toml(self, clean_env: Path) -> None:
        (clean_env / "rayweave.toml").write_text(f'[qdrant]\nurl = "{SERVER}"\n')
        assert load_settings().qdrant.backend == "client"

    def test_memory_url_and_keywords(self) -> None:
        assert QdrantSettings(url=":memory:").backend == "client"
        assert load_settings(qdrant={"url": SERVER}).qdrant.backend == "client"

    def test_toml_url_with_environment_key(
        self, clean_env: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        (clean_env / "rayweave.toml").write_text(f'[qdrant]\nurl = "{SERVER}"\n')
        monkeypatch.setenv("RAYWEAVE_QDRANT__API_KEY", "secret")
        q = load_settings().qdrant
        assert q.backend == "client"
        assert q.api_key is not None
        assert q.api_key.get_secret_value() == "secret"

    def test_no_url_keeps_the_embedded_default(self) -> None:
        s = load_settings()
        assert (s.qdrant.backend, s.qdrant.url) == ("edge", None)
        assert load_settings(qdrant={"backend": "client"}).qdrant.url is None  # local mode

    def test_explicit_client_with_url_is_unchanged(self) -> None:
        q = QdrantSettings(backend="client", url=SERVER)
        assert (q.backend, q.url) == ("client", SERVER)

    def test_validated_again_it_stays_client(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # The CLI's --collection re-validates a dump, which now names the backend explicitly.
        monkeypatch.setenv("RAYWEAVE_QDRANT__URL", SERVER)
        again = Settings(**load_settings().model_dump())
        assert again.qdrant.backend == "client"


class TestContradictionsAreRefusedWithTheFix:
    def test_edge_and_url_from_the_environment(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("RAYWEAVE_QDRANT__BACKEND", "edge")
        monkeypatch.setenv("RAYWEAVE_QDRANT__URL", SERVER)
        with pytest.raises(ConfigError) as err:
            load_settings()
        message = str(err.value)
        assert "qdrant.url" in message
        assert "'edge'" in message
        assert "RAYWEAVE_QDRANT__BACKEND=client" in message  # the fix, both ways
        assert "remove qdrant.url" in message

    def test_edge_and_url_in_a_toml_names_the_file(self, clean_env: Path) -> None:
        conf = clean_env / "conf.toml"
        conf.write_text(f'[qdrant]\nbackend = "edge"\nurl = "{SERVER}"\n')
        with pytest.raises(ConfigError, match=r"conf\.toml.*qdrant\.backend = 'client'"):
            load_settings(conf)

    def test_edge_in_the_file_and_url_in_the_environment(
        self, clean_env: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        (clean_env / "rayweave.toml").write_text('[qdrant]\nbackend = "edge"\n')
        monkeypatch.setenv("RAYWEAVE_QDRANT__URL", SERVER)
        with pytest.raises(ConfigError, match=r"qdrant\.url is set but qdrant\.backend is 'edge'"):
            load_settings()

    def test_edge_and_api_key(self) -> None:
        with pytest.raises(ConfigError, match=r"qdrant\.api_key .*RAYWEAVE_QDRANT__API_KEY"):
            QdrantSettings(backend="edge", api_key=SecretStr("k"))

    def test_api_key_without_url(self) -> None:
        with pytest.raises(ConfigError, match=r"RAYWEAVE_QDRANT__URL=http://host:6333"):
            QdrantSettings(backend="client", api_key=SecretStr("k"))


class TestConfigFileSetting:
    def test_config_file_from_the_environment_is_read(
        self, clean_env: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        conf = clean_env / "elsewhere.toml"
        conf.write_text('[graph]\nuser = "from-env-file"\n')
        monkeypatch.setenv("RAYWEAVE_CONFIG_FILE", str(conf))
        s = load_settings()
        assert (s.config_file, s.graph.user) == (conf, "from-env-file")

    def test_config_file_from_the_environment_must_exist(
        self, clean_env: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("RAYWEAVE_CONFIG_FILE", str(clean_env / "missing.toml"))
        with pytest.raises(ConfigError, match=r"missing\.toml does not exist"):
            load_settings()


class TestLogLevel:
    @pytest.fixture(autouse=True)
    def restore(self) -> Iterator[logging.Logger]:
        logger = logging.getLogger(LOGGER_NAME)
        level, handlers = logger.level, list(logger.handlers)
        yield logger
        logger.setLevel(level)
        logger.handlers[:] = handlers

    def test_the_level_reaches_rayweave_loggers(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("RAYWEAVE_LOG_LEVEL", "DEBUG")
        configure_logging(load_settings().log_level)
        assert logging.getLogger("rayweave.models.dense").isEnabledFor(logging.DEBUG)
        configure_logging("ERROR")
        assert not logging.getLogger("rayweave.serve").isEnabledFor(logging.WARNING)

    def test_a_handler_is_added_once_and_follows_stderr(
        self,
        restore: logging.Logger,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        restore.handlers.clear()
        monkeypatch.setattr(logging.getLogger(), "handlers", [])  # no handler elsewhere
        configure_logging("INFO")
        configure_logging("INFO")
        assert len(restore.handlers) == 1
        logging.getLogger("rayweave.cluster.x").info("hello %s", "there")
        assert "INFO rayweave.cluster.x: hello there" in capsys.readouterr().err

    def test_a_configured_process_keeps_its_handlers(self, restore: logging.Logger) -> None:
        restore.handlers.clear()
        if not logging.getLogger().handlers:  # pytest's capture installs one on the root
            pytest.skip("no root handler in this run")
        configure_logging("INFO")
        assert restore.handlers == []

    def test_the_edges_call_it(self) -> None:
        root = Path(__file__).resolve().parents[2]
        for edge in ("cluster/cli.py", "serve/app.py", "ingest/job.py"):
            assert "configure_logging(settings.log_level" in (root / edge).read_text(), edge


def test_graph_seeds_bound_the_seeds_of_graph_expansion() -> None:
    from rayweave.cluster.types import Hit
    from rayweave.serve.planning import make_plan
    from rayweave.serve.schemas import ContentScope, Profile, QueryType
    from rayweave.serve.search import Classification, _seeds

    retrieval = load_settings(serve={"retrieval": {"graph_seeds": 3}}).serve.retrieval
    plan = make_plan(
        Classification(query_type=QueryType.GENERAL, scope=ContentScope.DOCS),
        profile=Profile.GRAPH,
        top_k=10,
        hierarchical=None,
        settings=retrieval,
    )
    assert plan.graph_seeds == 3
    lists = {
        name: [Hit(id=f"{name}{i}", doc_id="d", text="", score=1.0) for i in range(5)]
        for name in ("dense", "sparse")
    }
    assert [h.id for h in _seeds(lists, plan)] == ["dense0", "dense1", "dense2"]
