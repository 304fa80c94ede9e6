"""The Ray Serve app over real HTTP on 127.0.0.1, serving the ingested sample corpus, in both
layouts; and how the layout is chosen and the Serve config cut to it."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest
import yaml
from tests_support import scrape

from rayweave.cluster.settings import Settings

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
QUERIES = json.loads((REPO / "bench" / "sample_queries.json").read_text())["queries"]


def search(url: str, **body: object) -> httpx.Response:
    return httpx.post(f"{url}/v1/search", json=body, timeout=60)


def _with_layout(layout: str) -> Settings:
    return Settings(serve={"layout": layout})  # type: ignore[arg-type]


def test_auto_layout_is_fused_on_one_cpu_node_and_composed_with_gpus_or_nodes() -> None:
    from rayweave.serve.app import DEFAULT_SERVE_CONFIG, resolve_layout

    auto = _with_layout("auto")
    config = yaml.safe_load(DEFAULT_SERVE_CONFIG.read_text())
    assert resolve_layout(auto, config=config, nodes=1) == "fused"
    assert resolve_layout(auto, config=config, nodes=3) == "composed"
    gpu = yaml.safe_load((REPO / "k8s" / "overlays" / "gpu-prod" / "serve-config.yaml").read_text())
    assert resolve_layout(auto, config=gpu, nodes=1) == "composed"
    assert resolve_layout(_with_layout("composed"), config=config, nodes=1) == "composed"
    assert resolve_layout(_with_layout("fused"), config=gpu, nodes=4) == "fused"


def test_serve_config_carries_the_http_settings() -> None:
    from rayweave.serve.app import serve_config

    settings = Settings(serve={"port": 8123, "request_timeout_s": 7.5})
    assert serve_config(settings)["http_options"] == {
        "host": "127.0.0.1",
        "port": 8123,
        "request_timeout_s": 7.5,
    }


def test_serve_config_keeps_the_deployments_of_the_chosen_layout_and_tells_the_builder() -> None:
    from rayweave.serve.app import DEFAULT_SERVE_CONFIG, AppArgs, serve_config

    raw = yaml.safe_load(DEFAULT_SERVE_CONFIG.read_text())["applications"][0]
    assert raw["args"] == {"serve": {"layout": "composed"}}  # `serve deploy` / KubeRay as is
    for layout, names in (
        ("fused", ["Ingress"]),
        ("composed", [d["name"] for d in raw["deployments"]]),
    ):
        app = serve_config(_with_layout(layout))["applications"][0]
        assert [d["name"] for d in app["deployments"]] == names
        assert AppArgs.model_validate(app["args"]).settings().serve.layout == layout


def test_a_code_change_changes_the_deployed_args(tmp_path: Path) -> None:
    """Serve replaces replicas only when an app's config changes: the code fingerprint in the
    args is what makes `rayweave serve` after an upgrade deploy the new code."""
    import os

    from rayweave.serve.app import AppArgs, code_version, serve_config

    (tmp_path / "serve").mkdir()
    module = tmp_path / "serve" / "search.py"
    module.write_text("x = 1\n")
    (tmp_path / "cluster").mkdir()
    (tmp_path / "cluster" / "settings.py").write_text("y = 2\n")
    before = code_version(tmp_path)
    assert code_version(tmp_path) == before  # stable between deploys of the same code
    module.write_text("x = 10\n")
    assert code_version(tmp_path) != before
    edited = code_version(tmp_path)
    stat = module.stat()
    os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert code_version(tmp_path) != edited  # same size, newer file
    args = serve_config(_with_layout("fused"))["applications"][0]["args"]
    assert args["code_version"] == code_version()
    # The builder accepts it and keeps it out of the settings.
    assert AppArgs.model_validate(args).settings().serve.layout == "fused"


def test_fused_ingress_is_sized_to_the_cluster_unless_the_config_sizes_it(tmp_path: Path) -> None:
    from rayweave.serve.app import DEFAULT_SERVE_CONFIG, fused_replicas, serve_config

    auto = Settings(serve={"layout": "fused"})  # type: ignore[arg-type]
    assert [fused_replicas(auto, cpus=c) for c in (0.5, 1, 2, 3.9, 16)] == [1, 1, 2, 3, 4]
    pinned = Settings(serve={"layout": "fused", "fused_replicas": 6})  # type: ignore[arg-type]
    assert fused_replicas(pinned, cpus=2) == 6
    (ingress,) = serve_config(pinned)["applications"][0]["deployments"]
    assert ingress["num_replicas"] == 6
    # A config that sizes the entry itself keeps its own numbers.
    config = yaml.safe_load(DEFAULT_SERVE_CONFIG.read_text())
    config["applications"][0]["deployments"][0]["autoscaling_config"] = {"max_replicas": 3}
    (tmp_path / "serve.yaml").write_text(yaml.safe_dump(config))
    own = Settings(
        serve={"layout": "fused", "fused_replicas": 6, "serve_config": tmp_path / "serve.yaml"}  # type: ignore[arg-type]
    )
    (ingress,) = serve_config(own)["applications"][0]["deployments"]
    assert "num_replicas" not in ingress
    assert ingress["autoscaling_config"] == {"max_replicas": 3}
    # The composed ingress only routes: Serve's one replica.
    composed = serve_config(_with_layout("composed"))["applications"][0]["deployments"]
    assert "num_replicas" not in composed[0]


def test_proxy_drift_names_each_proxy_setting_a_running_serve_would_ignore() -> None:
    from ray.serve.config import ProxyLocation
    from ray.serve.schema import ServeDeploySchema

    from rayweave.serve.app import proxy_drift, serve_config

    config = serve_config(Settings(serve={"port": 8123}))  # type: ignore[arg-type]
    config["proxy_location"] = "HeadOnly"
    wanted = ServeDeploySchema.model_validate(config)
    same = {"proxy_location": "HeadOnly", "http_options": {"host": "127.0.0.1", "port": 8123}}
    assert proxy_drift(same, wanted) == []
    other = {
        "proxy_location": ProxyLocation.EveryNode,
        "http_options": {"host": "127.0.0.1", "port": 8000},
    }
    assert proxy_drift(other, wanted) == [
        "proxy_location EveryNode where the config asks HeadOnly",
        "port 8000 where the config asks 8123",
    ]
    assert proxy_drift({}, wanted) == []  # nothing reported: nothing to compare


def test_deploying_other_proxy_settings_over_a_running_serve_is_refused(
    app_url: str, sample_ingested: Settings
) -> None:
    """Ray keeps a running Serve's port and only logs it: deploying would report a URL that
    nothing answers. Refused, and the running app is untouched."""
    from rayweave.cluster.errors import ServiceError
    from rayweave.serve.app import deploy

    moved = sample_ingested.serve.model_copy(update={"port": sample_ingested.serve.port + 1})
    with pytest.raises(ServiceError, match=r"port \d+ where the config asks \d+.*serve shutdown"):
        deploy(sample_ingested.model_copy(update={"serve": moved}))
    assert httpx.get(f"{app_url}/healthz", timeout=60).status_code == 200


def test_health_and_openapi(app_url: str) -> None:
    assert httpx.get(f"{app_url}/healthz", timeout=30).json()["status"] == "ok"
    paths = httpx.get(f"{app_url}/openapi.json", timeout=30).json()["paths"]
    assert "/v1/search" in paths
    assert "/metrics" not in paths  # metrics leave through Ray's metrics agents


def test_exported_request_counter_sums_over_ingress_replicas(
    sample_ingested: Settings, tmp_path: Path
) -> None:
    """N requests through the proxy to two Ingress replicas: Ray's export counts exactly N."""
    from concurrent.futures import ThreadPoolExecutor

    from ray import serve
    from ray.serve.schema import ReplicaState

    from rayweave.serve.app import DEFAULT_SERVE_CONFIG, deploy

    config = yaml.safe_load(DEFAULT_SERVE_CONFIG.read_text())
    for deployment in config["applications"][0]["deployments"]:
        if deployment["name"] == "Ingress":
            deployment["num_replicas"] = 2
    (tmp_path / "serve.yaml").write_text(yaml.safe_dump(config))
    two = Settings(
        **{
            **sample_ingested.model_dump(),
            "serve": {
                **sample_ingested.serve.model_dump(),
                "serve_config": tmp_path / "serve.yaml",
            },
        }
    )
    try:
        url = deploy(two)
        deadline = time.monotonic() + 300
        while True:
            app = serve.status().applications[two.serve.app_name]
            if app.deployments["Ingress"].replica_states.get(ReplicaState.RUNNING, 0) == 2:
                break
            assert time.monotonic() < deadline, app.deployments["Ingress"]
            time.sleep(1)

        def healthz_series() -> dict[tuple[tuple[str, str], ...], float]:
            return {
                k: v
                for k, v in scrape("rayweave_requests").items()
                if ("route", "/healthz") in k and ("status", "200") in k
            }

        before = healthz_series()
        n = 60
        with ThreadPoolExecutor(8) as pool:
            codes = list(
                pool.map(lambda _: httpx.get(f"{url}/healthz", timeout=60).status_code, range(n))
            )
        assert codes == [200] * n
        # Ray's agents export on an interval (several seconds): poll, bounded.
        deadline = time.monotonic() + 120
        while True:
            after = healthz_series()
            grew = {k: v - before.get(k, 0.0) for k, v in after.items() if v != before.get(k, 0.0)}
            if sum(grew.values()) >= n or time.monotonic() > deadline:
                break
            time.sleep(2)
        assert sum(grew.values()) == n, grew
        replicas = {dict(k).get("replica") for k in grew}
        assert len(replicas) == 2, grew  # both replicas served, and both are counted
        assert all(dict(k).get("deployment") == "Ingress" for k in grew)
    finally:
        deploy(sample_ingested)


def test_search_and_ingest_metrics_are_exported(app_url: str) -> None:
    assert search(app_url, query="How do retries back off?").status_code == 200
    deadline = time.monotonic() + 120
    while True:
        stages = scrape("rayweave_stage_seconds_count")
        chunks = scrape("rayweave_ingest_chunks")
        documents = scrape("rayweave_ingest_documents")
        if (stages and chunks and documents) or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert {dict(k)["stage"] for k in stages} >= {"classify", "vector"}, stages
    assert sum(v for k, v in chunks.items() if ("collection", "sample") in k) > 0
    assert sum(v for k, v in documents.items() if ("status", "inserted") in k) > 0


def test_search_returns_ranked_hits_with_text_source_section_and_score(app_url: str) -> None:
    resp = search(app_url, query="What is a lease in Ferry?", top_k=5)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["query_type"] == "what-is"
    results = body["results"]
    assert 0 < len(results) <= 5
    scores = [r["score"] for r in results]
    assert scores == sorted(scores, reverse=True)
    top = results[0]
    assert "lease" in top["text"].lower()
    # leases.md's passages and architecture.html's lease-lifecycle steps sit within 0.01 cosine
    # of each other under int8 MiniLM, whose per-batch activation scales move with how ingest
    # batches the corpus: the concept page must be on the first two, not necessarily first.
    assert any(r["source"].endswith("leases.md") for r in results[:2]), [
        r["source"] for r in results
    ]
    assert top["retrievers"]
    assert body["context"]["documents"]
    assert body["degraded"] == []


# The default (hybrid + graph, tf-idf refiner) puts every answer file in the top 5 for 20 of the
# 24 questions with nothing degraded (2026-11-27, both layouts). The int8 encoders' numbers differ
# by CPU (VNNI or not, ONNX Runtime's kernels), which can move a near tie in or out of the top 5,
# so the bar leaves two questions of room: 17 or fewer is a regression, not noise.
SAMPLE_QUERIES_BAR = 18


def test_sample_queries_find_their_sources(app_url: str) -> None:
    """Every answer file in the top 5 for most of the sample questions (a regression bar).

    Ranking only: the test stack's deadline (`TEST_DEADLINE_MS`) is generous enough that no
    retriever or refiner is dropped for being late, so the count does not depend on the machine's
    speed. The misses are printed; a degraded answer fails the test (a component failed)."""
    found, misses, degraded = 0, [], []
    for q in QUERIES:
        body = search(app_url, query=q["query"], top_k=5).json()
        sources = [r["source"] for r in body["results"]]
        if body["degraded"]:
            degraded.append(f"{q['query']!r}: degraded {body['degraded']}")
        if all(any(s.endswith(expected) for s in sources) for expected in q["expected"]):
            found += 1
        else:
            top = [s.split("sample_corpus/")[-1] for s in sources]
            misses.append(f"{q['query']!r}: wanted {q['expected']}, top 5 {top}")
    report = "\n".join([f"found {found}/{len(QUERIES)}", *misses, *degraded])
    print(report)
    assert degraded == [], report
    assert found >= SAMPLE_QUERIES_BAR, report


def test_answer_without_an_llm_says_which_setting_enables_it(app_url: str) -> None:
    resp = httpx.post(
        f"{app_url}/v1/answer", json={"query": "How do I retry a failed task?"}, timeout=60
    )
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["answer"] is None
    assert "no LLM is configured" in body["answer_note"]
    assert "models.llm" in body["answer_note"]
    assert "RAYWEAVE_MODELS__LLM" in body["answer_note"]
    assert body["results"]


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"query": ""}, 400, "query is empty"),
        ({"query": "   "}, 400, "query is empty"),
        ({"query": "x" * 5000}, 400, "limit is 4096"),
        ({"query": "x" * 100_000}, 413, "exceeds"),
        ({"query": "lease", "top_k": 0}, 400, "top_k"),
        ({"query": "lease", "top_k": 1000}, 400, "top_k"),
        ({"query": "lease", "profile": "magic"}, 422, "profile"),
        ({"text": "lease"}, 422, "query"),
    ],
)
def test_bad_requests_name_the_problem(
    app_url: str, body: dict[str, object], status: int, message: str
) -> None:
    resp = search(app_url, **body)
    assert resp.status_code == status, resp.text
    assert message in resp.json()["detail"]


def test_documents_endpoint(app_url: str) -> None:
    hit = search(app_url, query="dead-letter queue", top_k=1).json()["results"][0]
    chunks = httpx.get(f"{app_url}/v1/documents/{hit['doc_id']}", timeout=30).json()["chunks"]
    assert chunks[0]["level"] == "document"
    assert any(c["id"] == hit["id"] for c in chunks)
    assert httpx.get(f"{app_url}/v1/documents/nope", timeout=30).status_code == 404


def test_conversation_messages_are_stored(app_url: str) -> None:
    resp = httpx.post(
        f"{app_url}/v1/conversations/c1/messages",
        json={
            "role": "user",
            "content": "I keep hitting the dead-letter queue with my retries",
            "user_id": "u1",
        },
        timeout=30,
    )
    assert resp.status_code == 200, resp.text
    assert resp.json()["conversation_id"] == "c1"
    after = search(app_url, query="what should I check next?", conversation_id="c1", top_k=5)
    assert after.status_code == 200


def test_graph_neighbourhood_of_a_result(app_url: str) -> None:
    top = search(app_url, query="What is a lease in Ferry?", top_k=3).json()["results"][0]
    view = httpx.get(f"{app_url}/v1/graph/neighbourhood", params={"ids": top["doc_id"]}, timeout=60)
    assert view.status_code == 200, view.text
    body = view.json()
    ids = {n["id"] for n in body["nodes"]}
    start = [n for n in body["nodes"] if n["start"]]
    assert [n["id"] for n in start] == [top["doc_id"]]
    assert start[0]["label"] == "Document"
    assert {"CHUNK_OF"} <= {e["type"] for e in body["edges"]}
    assert all(e["source"] in ids and e["target"] in ids for e in body["edges"])
    entity = next(n["id"] for n in body["nodes"] if n["label"] == "Entity")
    hop = httpx.get(f"{app_url}/v1/graph/neighbourhood", params={"ids": entity}, timeout=60).json()
    assert len(hop["nodes"]) > 1

    bad = httpx.get(
        f"{app_url}/v1/graph/neighbourhood", params={"ids": entity, "depth": 9}, timeout=60
    )
    assert bad.status_code == 400
    assert "depth" in bad.json()["detail"]
    assert httpx.get(f"{app_url}/v1/graph/neighbourhood", timeout=60).status_code == 422


def test_filters_hold_for_graph_hits_too(app_url: str) -> None:
    body = search(
        app_url,
        query="What is a lease in Ferry?",
        profile="hybrid+graph",
        top_k=10,
        filters={"content_type": ["code"]},
    ).json()
    assert body["results"]
    assert all(r["source"].endswith(".py") for r in body["results"]), [
        r["source"] for r in body["results"]
    ]
