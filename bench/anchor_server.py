"""The anchor of `rayweave bench serve --anchor`: what a user could run instead of rayweave.

One process, one uvicorn worker: sentence-transformers in fp32 on CPU encodes every chunk at
start-up, and each query is encoded and scored by a brute-force numpy dot product. No batching,
no hops, no store, no fusion: the honest baseline that the pipeline's latency and throughput are
compared with. Run as `python -m rayweave.bench.anchor_server CHUNKS_JSON MODEL_PATH PORT`, where
CHUNKS_JSON holds `{"ids": [...], "texts": [...]}`; arguments rather than settings, because the
bench starts it as a bare subprocess.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
from fastapi import FastAPI
from pydantic import BaseModel
from sentence_transformers import SentenceTransformer

from rayweave.cluster.errors import MissingExtraError

try:
    import uvicorn
except ImportError as exc:  # the `bench` extra (ray[serve] also brings it)
    raise MissingExtraError("uvicorn", extra="bench", purpose="the bench's anchor server") from exc


class AnchorQuery(BaseModel):
    """The ingress's request shape; extra keys (profile, include_context) are ignored."""

    query: str
    top_k: int = 10


def build_app(chunks_path: Path, model_path: str) -> FastAPI:
    """Load the model and encode the chunks now, so /healthz answers only once search can."""
    data = json.loads(chunks_path.read_text(encoding="utf-8"))
    ids = [str(i) for i in data["ids"]]
    model = SentenceTransformer(model_path, device="cpu")
    matrix = model.encode(list(data["texts"]), batch_size=64, normalize_embeddings=True)
    app = FastAPI(title="rayweave bench anchor")

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/v1/search")
    def search(body: AnchorQuery) -> dict[str, Any]:
        k = min(max(body.top_k, 0), len(ids))
        if k == 0:
            return {"results": [], "degraded": []}
        scores = matrix @ model.encode(body.query, normalize_embeddings=True)
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top])]
        return {
            "results": [{"id": ids[i], "score": float(scores[i])} for i in top],
            "degraded": [],
        }

    return app


if __name__ == "__main__":
    chunks, model, port = sys.argv[1:4]
    uvicorn.run(
        build_app(Path(chunks), model),
        host="127.0.0.1",
        port=int(port),
        workers=1,
        log_level="warning",
    )
