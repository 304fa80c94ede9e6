"""The factory inside real Ray actors with fractional CPUs (on the session's embedded Ray head),
as the ingest pipeline runs it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rayweave.cluster.settings import ModelSettings

pytestmark = pytest.mark.integration


def test_encoders_in_fractional_cpu_actors(ray_stack: object, onnx_cache: Path) -> None:
    import ray

    from rayweave.models.factory import build_dense_encoder, build_sparse_encoder

    @ray.remote(num_cpus=0.5)
    class Embedder:
        def __init__(self, settings: ModelSettings) -> None:
            import torch

            self.threads = torch.get_num_threads()
            self.dense = build_dense_encoder(settings)
            self.sparse = build_sparse_encoder(settings)

        def run(self, texts: list[str]) -> tuple[int, np.ndarray, list]:
            return self.threads, self.dense.encode(texts), self.sparse.encode(texts)

    settings = ModelSettings(cache_dir=onnx_cache)
    texts = ["Ray Serve deploys models.", "Qdrant stores vectors."]
    actor = Embedder.remote(settings)  # type: ignore[attr-defined]
    threads, dense, sparse = ray.get(actor.run.remote(texts), timeout=600)
    assert threads == 1  # Ray's OMP_NUM_THREADS for a fractional actor; ONNX Runtime follows it
    local = build_dense_encoder(settings).encode(texts)
    assert (dense * local).sum(axis=1).min() > 0.99
    assert len(sparse) == 2
    assert len(sparse[0].indices) > 0
    ray.kill(actor)
