"""The sample corpus served by the composed Serve app over real HTTP, shared by the serve tests
(an ingest plus a deploy cost minutes on two cores, so they happen once per session)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests_support import SAMPLE_CORPUS

from rayweave.cluster.settings import Settings


@pytest.fixture(scope="session")
def sample_settings(ray_stack: Settings, graph_connection: object) -> Settings:
    return Settings(
        **{
            **ray_stack.model_dump(),
            "qdrant": {**ray_stack.qdrant.model_dump(), "collection": "sample"},
        }
    )


@pytest.fixture(scope="session")
def app_url(sample_settings: Settings) -> Iterator[str]:
    from rayweave.ingest.pipeline import run_ingest
    from rayweave.serve.app import deploy, shutdown

    run_ingest(sample_settings, [SAMPLE_CORPUS], collection="sample")
    url = deploy(sample_settings)
    yield url
    shutdown(sample_settings)
