"""The search page's graph view against a real Bolt server."""

from __future__ import annotations

import pytest

from rayweave.cluster.errors import InputError
from rayweave.graph.store import GraphStore

from .store_samples import write_two_docs

pytestmark = pytest.mark.integration


class TestNeighbourhood:
    def test_one_hop_around_a_document_and_an_entity(self, graph_store: GraphStore) -> None:
        write_two_docs(graph_store)
        view = graph_store.neighbourhood(["a"])
        by_id = {n["id"]: n for n in view["nodes"]}
        assert by_id["a"]["start"]
        assert by_id["a"]["label"] == "Document"
        assert by_id["a"]["name"] == "Alpha Doc"
        assert {"a-s0", "a-s1", "lonely", "t1"} <= set(by_id)
        assert "b" not in by_id  # two hops away, through `shared`
        edges = {(e["source"], e["type"], e["target"]) for e in view["edges"]}
        assert ("a-s0", "CHUNK_OF", "a") in edges
        assert ("a", "EXPLAINS", "lonely") in edges

        two = graph_store.neighbourhood(["shared"], depth=2)
        assert {"a", "b"} <= {n["id"] for n in two["nodes"]}
        assert not any(n["label"] == "Alias" for n in two["nodes"])

    def test_summary_chunk_ids_resolve_cap_and_depth_limits(self, graph_store: GraphStore) -> None:
        write_two_docs(graph_store)
        view = graph_store.neighbourhood(["a-sum", "missing"], limit=3)
        assert len(view["nodes"]) == 3
        assert view["nodes"][0]["id"] == "a"
        ids = {n["id"] for n in view["nodes"]}
        assert all(e["source"] in ids and e["target"] in ids for e in view["edges"])
        assert graph_store.neighbourhood(["missing"]) == {"nodes": [], "edges": []}
        with pytest.raises(InputError, match="depth"):
            graph_store.neighbourhood(["a"], depth=4)
