"""Per-chunk storage figures of one ingested collection, as docs/scaling.md reports them.

    RAY_AUTH_MODE=token .venv/bin/python bench/capacity.py COLLECTION

Reads the collection through the running stack (`rayweave ingest` or `rayweave eval` made it):
points, the vector folder's disk use (segments and write-ahead log), SPLADE non-zeros and payload
bytes per point (from up to 500 points read with vectors), and graph nodes and edges by type.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from rayweave.cluster.services.graph_server import resolve_graph_connection
from rayweave.cluster.services.runtime import connect
from rayweave.cluster.settings import Settings
from rayweave.cluster.types import SparseVector
from rayweave.cluster.vectors.service import vector_store_for
from rayweave.graph.store import GraphStore


def disk_bytes(path: Path) -> int:
    return int(subprocess.check_output(["du", "-s", "--block-size=1", str(path)]).split()[0])


def main(collection: str) -> None:
    settings = Settings()
    connect(settings)
    resolve_graph_connection(settings)
    store = vector_store_for(settings, collection)
    points, offset = [], None
    while True:
        page, offset = store.scroll(limit=2000, offset=offset)
        points += page
        if offset is None:
            break
    if not points:
        sys.exit(f"collection {collection!r} has no points")
    sample = store.retrieve([p.id for p in points[:500]], with_vectors=True)
    sparse = [p.vectors.get("sparse") for p in sample if p.vectors]
    nnz = [len(v.indices) for v in sparse if isinstance(v, SparseVector)]
    folder = settings.vector_path / collection
    graph = GraphStore.open(settings, namespace=collection)
    counts = graph.counts()
    n = len(points)
    print(
        json.dumps(
            {
                "collection": collection,
                "points": n,
                "disk_bytes": disk_bytes(folder),
                "segments_bytes_per_point": round(disk_bytes(folder / "segments") / n),
                "sparse_nnz_mean": round(sum(nnz) / max(1, len(nnz)), 1),
                "payload_bytes_mean": round(
                    sum(len(json.dumps(p.payload, default=str).encode()) for p in points) / n
                ),
                "graph_nodes": dict(counts.nodes),
                "graph_relationships": dict(counts.relationships),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: bench/capacity.py COLLECTION")
    main(sys.argv[1])
