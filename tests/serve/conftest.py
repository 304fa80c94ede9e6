"""The sample corpus served by the Serve app over real HTTP, shared by the serve tests (an ingest
plus a deploy cost minutes on two cores, so they happen once per session). Tests that take
`app_url` run against both layouts (one deployment running the pipeline in-process, and the
composed deployment graph): both must answer alike."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests_support import SAMPLE_CORPUS, with_collection

from rayweave.cluster.settings import Settings

TEST_DEADLINE_MS = 60_000
"""The app's retrieval deadline in these tests. They assert what the pipeline answers, not how
fast: under the default 2 s a loaded 2-core runner drops a late retriever's list or the
refiner's order (`degraded`), and the answers then depend on the machine. Latency is measured by
`rayweave bench serve`, and what a deadline drops by tests/reliability/test_serve_faults.py."""


@pytest.fixture(scope="session")
def sample_settings(ray_stack: Settings, graph_connection: object) -> Settings:
    settings = with_collection(ray_stack, "sample")
    serve = settings.serve.model_copy(update={"deadline_ms": TEST_DEADLINE_MS})
    return settings.model_copy(update={"serve": serve})


@pytest.fixture(scope="session")
def sample_ingested(sample_settings: Settings) -> Iterator[Settings]:
    from rayweave.ingest.pipeline import run_ingest
    from rayweave.serve.app import shutdown

    run_ingest(sample_settings, [SAMPLE_CORPUS], collection="sample")
    yield sample_settings
    shutdown(sample_settings)


@pytest.fixture(scope="session", params=["fused", "composed"])
def layout(request: pytest.FixtureRequest) -> str:
    """Session-scoped, so pytest runs every test of one layout before switching (one redeploy)."""
    return str(request.param)


@pytest.fixture
def app_url(sample_ingested: Settings, layout: str) -> str:
    """Deployed for each test that asks: the serve bench test removes the app when it is done,
    and redeploying a running app with the same config changes nothing."""
    from rayweave.serve.app import deploy

    serve = sample_ingested.serve.model_copy(update={"layout": layout})
    return deploy(sample_ingested.model_copy(update={"serve": serve}))
