"""Helpers shared by test modules (importable: pytest's `pythonpath` includes tests/)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from rayweave.cluster.settings import Settings
from rayweave.cluster.types import Chunk, Level
from rayweave.graph.schema import EdgeRow, EdgeSource, EntityRow, NodeRef, RelType
from rayweave.graph.store import GraphStore

REPO = Path(__file__).resolve().parents[1]
SAMPLE_CORPUS = REPO / "ingest" / "sample_corpus"
FIXTURES = REPO / "tests" / "fixtures"
BEIR_FIXTURES = FIXTURES / "beir"
"""Small BEIR sets committed with the tests (tests/fixtures/README.md): `hotpotqa-dev` (300
passages of the hotpotqa dev pool) and `code-dev` (240 of rayweave's own functions)."""


def free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def stack_env(home: Path) -> dict[str, str]:
    """RAYWEAVE_* variables for an isolated embedded stack (own home, free ports)."""
    ray_port, dash, bolt, http, serve_port = free_ports(5)
    return {
        "RAYWEAVE_HOME": str(home),
        "RAYWEAVE_RAY__PORT": str(ray_port),
        "RAYWEAVE_RAY__DASHBOARD_PORT": str(dash),
        "RAYWEAVE_RAY__NUM_CPUS": "2",
        "RAYWEAVE_RAY__OBJECT_STORE_MEMORY_MB": "384",
        "RAYWEAVE_GRAPH__EMBEDDED_PORT": str(bolt),
        "RAYWEAVE_GRAPH__EMBEDDED_HTTP_PORT": str(http),
        "RAYWEAVE_GRAPH__EMBEDDED_HEAP_MB": "512",
        "RAYWEAVE_SERVE__PORT": str(serve_port),
    }


def with_collection(settings: Settings, collection: str) -> Settings:
    """`settings` with another Qdrant collection (re-validated, as settings are frozen)."""
    return Settings(
        **{
            **settings.model_dump(),
            "qdrant": {**settings.qdrant.model_dump(), "collection": collection},
        }
    )


# Three Python functions for query-likelihood tests: SmolLM2-135M ranks "read a file" and "sort a
# dict by value" queries to the right one (it confuses "reverse a list" with reading a file).
CODE_SNIPPETS = [
    'def read_text(path):\n    """Return the contents of a text file."""\n'
    "    with open(path) as f:\n"
    "        return f.read()",
    'def reverse(items):\n    """Reverse a list."""\n    return items[::-1]',
    'def sort_by_value(d):\n    """Sort a dict by its values."""\n'
    "    return sorted(d.items(), key=lambda kv: kv[1])",
]


def alive_actors() -> list[Any]:
    """ALIVE actors of the cluster this process joined. The address is explicit: the state API's
    default ('auto') refuses to choose when another Ray runs on the machine."""
    import ray
    from ray.util.state import list_actors

    address = ray.get_runtime_context().gcs_address if ray.is_initialized() else None
    return list(list_actors(address=address, filters=[("state", "=", "ALIVE")], limit=1000))


def alive_nodes() -> list[dict[str, Any]]:
    import ray

    return [n for n in ray.nodes() if n.get("Alive")]


def wait_nodes(count: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while len(alive_nodes()) != count:
        assert time.monotonic() < deadline, f"{len(alive_nodes())} alive nodes, waited for {count}"
        time.sleep(0.5)


@contextmanager
def joined_nodes(settings: Settings, names: Sequence[str]) -> Iterator[dict[str, Path]]:
    """Raylets of 1 CPU each joined to the session's head, each with a custom resource named
    after it; yields name -> its temp dir (what `stop_processes` kills). Afterwards every one is
    stopped by process id and the head sees its old node count again, so later tests run on one
    node."""
    from rayweave.cluster.services.runtime import join_node, ray_temp_dir, stop_processes

    before = len(alive_nodes())
    dirs = {name: ray_temp_dir(settings) / "nodes" / name for name in names}
    try:
        for name, d in dirs.items():
            join_node(settings, d, num_cpus=1, resources={name: 1.0})
        wait_nodes(before + len(dirs), timeout_s=60)
        yield dirs
    finally:
        for d in dirs.values():
            stop_processes(d)
        wait_nodes(before, timeout_s=120)


def node_of(name: str) -> str:
    """The node id of the joined node `name` (by its custom resource)."""
    (node,) = [n["NodeID"] for n in alive_nodes() if name in n["Resources"]]
    return str(node)


def graph_snapshot(store: GraphStore) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """A namespace's entities and relationships as sorted plain rows (weights rounded), for
    comparing two graphs built from the same documents in different ways."""
    entities = sorted(
        (r["id"], r["name"], r["kind"], tuple(sorted(r["aliases"] or ())), r["df"])
        for r in store.read(
            "MATCH (e:Entity {ns: $ns}) "
            "RETURN e.id AS id, e.name AS name, e.kind AS kind, e.aliases AS aliases, e.df AS df"
        )
    )
    edges = sorted(
        (
            tuple(sorted(r["a"])),
            r["s"],
            r["t"],
            tuple(sorted(r["b"])),
            r["d"],
            r["source"],
            round(float(r["w"] or 0), 4),
            round(float(r["c"] or 0), 4),
        )
        for r in store.read(
            "MATCH (a)-[r]->(b) WHERE a.ns = $ns "
            "RETURN labels(a) AS a, a.id AS s, type(r) AS t, labels(b) AS b, b.id AS d, "
            "r.source AS source, r.weight AS w, r.confidence AS c"
        )
    )
    return entities, edges


def namespace_snapshot(
    settings: Settings, collection: str
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """`graph_snapshot` of namespace `collection`, through a connection of its own."""
    from rayweave.graph.store import open_graph_store

    store = open_graph_store(settings, namespace=collection)
    try:
        return graph_snapshot(store)
    finally:
        store.close()


def linked_chunks(
    doc_id: str,
    level: Level,
    texts: Mapping[str, str],
    *,
    parent_id: str | None = None,
    **fields: Any,
) -> list[Chunk]:
    """Sibling chunks (`id -> text`, in reading order) under `parent_id`, with the positions and
    prev/next links ingestion gives them: the structure hand-built graphs are walked over."""
    ids = list(texts)
    return [
        Chunk(
            id=cid,
            doc_id=doc_id,
            level=level,
            text=texts[cid],
            position=i,
            parent_id=parent_id,
            prev_id=ids[i - 1] if i else None,
            next_id=ids[i + 1] if i + 1 < len(ids) else None,
            **fields,
        )
        for i, cid in enumerate(ids)
    ]


def summary_chunk(cid: str, text: str, sections: Sequence[Chunk], **fields: Any) -> Chunk:
    """The document-level chunk over `sections`: their document, their ids as its children."""
    return Chunk(
        id=cid,
        doc_id=sections[0].doc_id,
        level=Level.DOCUMENT,
        text=text,
        children_ids=tuple(c.id for c in sections),
        **fields,
    )


def entity_row(eid: str, name: str, kind: str = "concept", **fields: Any) -> EntityRow:
    return EntityRow(id=eid, name=name, kind=kind, **fields)


def edge_row(
    rel: RelType,
    src: NodeRef,
    dst: NodeRef,
    *,
    conf: float = 0.9,
    weight: float = 0.9,
    source: EdgeSource = EdgeSource.EXTRACTOR,
) -> EdgeRow:
    """A hand-built edge; by default a confident one from the extractor."""
    return EdgeRow(rel=rel, src=src, dst=dst, confidence=conf, weight=weight, source=source)


def reply_json(handler: BaseHTTPRequestHandler, body: bytes, status: int = 200) -> None:
    """A fake HTTP endpoint's whole JSON answer."""
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


@contextmanager
def http_server(handler: type[BaseHTTPRequestHandler]) -> Iterator[ThreadingHTTPServer]:
    """`handler` served on a free 127.0.0.1 port from a daemon thread while the block runs."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def scrape(family: str) -> dict[tuple[tuple[str, str], ...], float]:
    """Every series of one rayweave metric, as Ray's metrics agents on all live nodes export it."""
    from prometheus_client.parser import text_string_to_metric_families

    from rayweave.cluster.services.runtime import metrics_urls

    series: dict[tuple[tuple[str, str], ...], float] = {}
    for url in metrics_urls():
        for fam in text_string_to_metric_families(httpx.get(url, timeout=30).text):
            for sample in fam.samples:
                if sample.name.removesuffix("_total") == f"ray_{family}":
                    key = (("node", url), *sorted(sample.labels.items()))
                    series[key] = series.get(key, 0.0) + sample.value
    return series
