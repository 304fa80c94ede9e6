"""The sample corpus served by the composed Serve app over real HTTP, shared by the serve tests
(an ingest plus a deploy cost minutes on two cores, so they happen once per session)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests_support import SAMPLE_CORPUS, with_collection

from rayweave.cluster.settings import Settings


@pytest.fixture(scope="session")
def sample_settings(ray_stack: Settings, graph_connection: object) -> Settings:
    return with_collection(ray_stack, "sample")


@pytest.fixture(scope="session")
def sample_ingested(sample_settings: Settings) -> Iterator[Settings]:
    from rayweave.ingest.pipeline import run_ingest
    from rayweave.serve.app import shutdown

    run_ingest(sample_settings, [SAMPLE_CORPUS], collection="sample")
    yield sample_settings
    shutdown(sample_settings)


@pytest.fixture
def app_url(sample_ingested: Settings) -> str:
    """Deployed for each test that asks: the serve bench test removes the app when it is done,
    and redeploying a running app with the same config changes nothing."""
    from rayweave.serve.app import deploy

    return deploy(sample_ingested)
