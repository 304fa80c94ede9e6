"""`Settings`: environment nesting, TOML loading and precedence, validation messages, schema."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr, ValidationError

from rayweave.cluster.errors import ConfigError
from rayweave.cluster.settings import (
    DEFAULT_HOME,
    GraphSettings,
    QdrantSettings,
    Settings,
    load_settings,
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No RAYWEAVE_* variables and a working folder without a rayweave.toml."""
    for key in [k for k in os.environ if k.startswith("RAYWEAVE_")]:
        monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    return tmp_path


class TestEnvironment:
    def test_nested_delimiter_reaches_the_group_field(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("RAYWEAVE_GRAPH__URI", "bolt://neo4j:7687")
        monkeypatch.setenv("RAYWEAVE_QDRANT__HNSW_M", "32")
        monkeypatch.setenv("RAYWEAVE_LOG_LEVEL", "DEBUG")
        s = Settings()
        assert s.graph.uri == "bolt://neo4j:7687"
        assert s.qdrant.hnsw_m == 32
        assert s.log_level == "DEBUG"
        # Neighbouring fields keep their defaults.
        assert s.graph.user == "root"
        assert s.qdrant.hnsw_ef_construct == 128

    def test_two_levels_of_nesting(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("RAYWEAVE_SERVE__RETRIEVAL__RRF_K", "7")
        monkeypatch.setenv("RAYWEAVE_SERVE__RETRIEVAL__REFINER", "likelihood")
        s = Settings()
        assert s.serve.retrieval.rrf_k == 7
        assert s.serve.retrieval.refiner == "likelihood"
        assert s.qdrant.rrf_k == 60  # the same name in another group is untouched

    def test_sequences_and_secrets_from_json(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("RAYWEAVE_SERVE__API_KEYS", '["key-a", "key-b"]')
        monkeypatch.setenv("RAYWEAVE_INGEST__EXCLUDE", '["build/**"]')
        monkeypatch.setenv("RAYWEAVE_GRAPH__PASSWORD", "hunter2")
        s = Settings()
        assert [k.get_secret_value() for k in s.serve.api_keys] == ["key-a", "key-b"]
        assert s.ingest.exclude == ("build/**",)
        assert isinstance(s.graph.password, SecretStr)
        assert s.graph.password.get_secret_value() == "hunter2"
        assert "hunter2" not in repr(s)

    def test_home_from_the_environment_moves_the_derived_paths(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        monkeypatch.setenv("RAYWEAVE_HOME", str(tmp_path / "h"))
        s = Settings()
        assert s.vector_path == tmp_path / "h" / "vectors"
        assert s.graph_home == tmp_path / "h" / "graph"

    def test_unknown_nested_variable_is_rejected_by_name(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("RAYWEAVE_GRAPH__NOPE", "1")
        with pytest.raises(ValidationError, match=r"graph\.nope"):
            Settings()

    def test_bad_value_names_the_field(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("RAYWEAVE_RAY__PORT", "abc")
        with pytest.raises(ConfigError, match=r"(?s)invalid configuration: .*ray\.port") as err:
            load_settings()
        assert "abc" in str(err.value)

    def test_environment_beats_defaults_keywords_beat_environment(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("RAYWEAVE_GRAPH__USER", "env")
        assert load_settings().graph.user == "env"
        assert load_settings(graph={"user": "kw"}).graph.user == "kw"


class TestToml:
    def test_cwd_rayweave_toml_is_read(self, clean_env: Path) -> None:
        (clean_env / "rayweave.toml").write_text('[graph]\nuser = "from-cwd"\n')
        assert Settings().graph.user == "from-cwd"
        assert load_settings().graph.user == "from-cwd"

    def test_named_file_and_precedence(
        self, clean_env: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        conf = clean_env / "conf.toml"
        conf.write_text('log_level = "WARNING"\n[graph]\nuser = "file"\n[qdrant]\nhnsw_m = 8\n')
        s = load_settings(conf)
        assert (s.log_level, s.graph.user, s.qdrant.hnsw_m) == ("WARNING", "file", 8)
        assert s.config_file == conf
        monkeypatch.setenv("RAYWEAVE_GRAPH__USER", "env")
        assert load_settings(conf).graph.user == "env"
        assert load_settings(conf, graph={"user": "kw"}).graph.user == "kw"
        assert load_settings(conf).qdrant.hnsw_m == 8  # other file values stay

    def test_named_file_replaces_the_cwd_file(self, clean_env: Path) -> None:
        (clean_env / "rayweave.toml").write_text('[graph]\nuser = "from-cwd"\n')
        conf = clean_env / "conf.toml"
        conf.write_text("[qdrant]\nhnsw_m = 8\n")
        assert load_settings(conf).graph.user == "root"

    def test_named_file_ignores_a_broken_cwd_file(self, clean_env: Path) -> None:
        (clean_env / "rayweave.toml").write_text("[graph]\nbogus = 1\n")
        conf = clean_env / "conf.toml"
        conf.write_text('[graph]\nuser = "neo4j"\n')
        assert load_settings(conf).graph.user == "neo4j"

    def test_result_of_a_named_file_pickles(self, clean_env: Path) -> None:
        conf = clean_env / "conf.toml"
        conf.write_text('[graph]\npassword = "s3cret"\n')
        s = load_settings(conf)
        again = pickle.loads(pickle.dumps(s))
        assert type(again) is Settings
        assert again == s
        assert again.graph.password is not None
        assert again.graph.password.get_secret_value() == "s3cret"

    def test_missing_file_is_an_error_naming_it(self, clean_env: Path) -> None:
        with pytest.raises(ConfigError, match=r"missing\.toml does not exist"):
            load_settings(clean_env / "missing.toml")

    def test_bad_value_in_file_names_file_and_field(self, clean_env: Path) -> None:
        conf = clean_env / "conf.toml"
        conf.write_text("[qdrant]\nhnsw_m = 1\n")
        with pytest.raises(ConfigError, match=r"(?s)conf\.toml: .*qdrant\.hnsw_m"):
            load_settings(conf)

    def test_unknown_group_in_file_is_rejected(self, clean_env: Path) -> None:
        conf = clean_env / "conf.toml"
        conf.write_text("[qdrnt]\nurl = 'x'\n")
        with pytest.raises(ConfigError, match="qdrnt"):
            load_settings(conf)


class TestValidation:
    @pytest.mark.parametrize(
        ("overrides", "field"),
        [
            ({"qdrant": {"collection": "has space"}}, "qdrant.collection"),
            ({"qdrant": {"collection": "x" * 65}}, "qdrant.collection"),
            ({"graph": {"database": "bad-name"}}, "graph.database"),
            ({"graph": {"walk_damping": 1.0}}, "graph.walk_damping"),
            ({"graph": {"prune_min_confidence": 1.5}}, "graph.prune_min_confidence"),
            ({"ray": {"metrics_export_port": 70000}}, "ray.metrics_export_port"),
            ({"ray": {"auth": "password"}}, "ray.auth"),
            ({"models": {"precision": "fp8"}}, "models.precision"),
            ({"serve": {"retrieval": {"refiner": "magic"}}}, "serve.retrieval.refiner"),
            ({"serve": {"max_body_bytes": 10}}, "serve.max_body_bytes"),
            ({"ingest": {"max_file_mb": 0}}, "ingest.max_file_mb"),
        ],
    )
    def test_out_of_range_values_name_their_field(
        self, overrides: dict[str, Any], field: str
    ) -> None:
        with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
            load_settings(**overrides)

    def test_section_bounds_must_be_ordered(self) -> None:
        with pytest.raises(ConfigError, match="section_min_tokens must not exceed"):
            load_settings(ingest={"section_min_tokens": 500, "section_max_tokens": 400})
        equal = load_settings(ingest={"section_min_tokens": 300, "section_max_tokens": 300})
        assert equal.ingest.section_min_tokens == 300

    def test_proposition_bounds_must_be_ordered(self) -> None:
        with pytest.raises(ConfigError, match="proposition_min_tokens must not exceed"):
            load_settings(ingest={"proposition_min_tokens": 200, "proposition_max_tokens": 100})

    def test_groups_are_frozen_and_closed(self) -> None:
        g = GraphSettings()
        with pytest.raises(ValidationError):
            g.user = "x"
        with pytest.raises(ValidationError, match="typo"):
            GraphSettings(typo=1)  # type: ignore[call-arg]
        with pytest.raises(ValidationError):
            Settings().home = Path("/")


class TestDerivedPaths:
    def test_vector_path_defaults_under_home(self, tmp_path: Path) -> None:
        assert Settings(home=tmp_path).vector_path == tmp_path / "vectors"

    def test_vector_path_prefers_qdrant_path_and_expands_user(self, tmp_path: Path) -> None:
        s = Settings(home=tmp_path, qdrant=QdrantSettings(path=Path("~/vec")))
        assert s.vector_path == Path("~/vec").expanduser()
        assert s.vector_path.is_absolute()

    def test_graph_home_expands_user(self) -> None:
        s = Settings(home=Path("~/rw"))
        assert s.graph_home == Path("~/rw").expanduser() / "graph"
        assert s.graph_home.is_absolute()

    def test_default_home(self) -> None:
        assert Settings().home == DEFAULT_HOME
        assert DEFAULT_HOME.is_absolute()


class TestSchema:
    # The defaults the docs show are generated from this schema and checked by tests/test_docs.py.

    def test_every_group_field_is_described_with_a_default(self) -> None:
        schema = Settings.model_json_schema()
        missing = [
            f"{group}.{name}"
            for group, sub in schema["$defs"].items()
            for name, prop in sub["properties"].items()
            if "$ref" not in prop and (not prop.get("description") or "default" not in prop)
        ]
        assert missing == []

    def test_all_group_defaults_round_trip_through_the_schema(self) -> None:
        schema = Settings.model_json_schema(mode="serialization")
        dumped = Settings().model_dump(mode="json")
        for group, ref in (
            ("ray", "RaySettings"),
            ("qdrant", "QdrantSettings"),
            ("graph", "GraphSettings"),
            ("models", "ModelSettings"),
            ("ingest", "IngestSettings"),
            ("serve", "ServeSettings"),
            ("serve.retrieval", "RetrievalSettings"),
        ):
            values: Any = dumped
            for part in group.split("."):
                values = values[part]
            for name, prop in schema["$defs"][ref]["properties"].items():
                if "default" in prop:
                    assert prop["default"] == values[name], f"{group}.{name}"

    def test_embedded_services_bind_to_loopback(self) -> None:
        s = Settings()
        assert s.ray.dashboard_host == "127.0.0.1"
        assert s.serve.host == "127.0.0.1"
        assert s.ray.address is None
        assert s.graph.uri is None
