"""The store's connection against a real Bolt server: schema, keys and namespaces."""

from __future__ import annotations

import pytest

from rayweave.cluster.errors import ConfigError, GraphStoreError
from rayweave.graph.schema import NodeRef, RelType, schema_statements
from rayweave.graph.store import GraphStore

from .store_samples import D, E, S, edge, write_two_docs

pytestmark = pytest.mark.integration


class TestSchema:
    def test_schema_is_idempotent_and_keys_are_unique(self, graph_store: GraphStore) -> None:
        for statement in schema_statements():  # a second and third run change nothing
            graph_store.write(statement)
        graph_store.write(statement)
        graph_store.write(
            "CREATE (e:Entity {key: $k, ns: $ns, id: 'x'})", {"k": graph_store.key("x")}
        )
        with pytest.raises(GraphStoreError):
            graph_store.write(
                "CREATE (e:Entity {key: $k, ns: $ns, id: 'x'})", {"k": graph_store.key("x")}
            )
        assert graph_store.counts().node(E) == 1

    def test_bad_namespace_is_refused(self, graph_store: GraphStore) -> None:
        with pytest.raises(ConfigError, match="namespace"):
            graph_store.for_namespace("a:b")
        with pytest.raises(ConfigError, match="namespace"):
            graph_store.for_namespace("x'}) DETACH DELETE n //")

    def test_edge_endpoints_are_checked(self) -> None:
        with pytest.raises(ValueError, match="EXPLAINS cannot link Entity -> Document"):
            edge(RelType.EXPLAINS, NodeRef(E, "x"), NodeRef(D, "d"))
        with pytest.raises(ValueError, match="confidence"):
            edge(RelType.MENTIONS, NodeRef(S, "x"), NodeRef(E, "e"), confidence=1.5)


class TestNamespaces:
    def test_namespaces_are_isolated(self, graph_store: GraphStore) -> None:
        other = graph_store.for_namespace(graph_store.ns + "-other")
        try:
            write_two_docs(graph_store)
            write_two_docs(other)
            other.delete_document("a")
            assert graph_store.counts().node(D) == 2
            assert other.counts().node(D) == 1
            assert {m.id for m in graph_store.lookup_entities(["lonely thing"])} == {"lonely"}
            assert other.lookup_entities(["lonely thing"]) == []
            other.drop_namespace()
            assert sum(other.counts().nodes.values()) == 0
            assert graph_store.counts().node(S) == 4
        finally:
            other.drop_namespace()
            other.close()


class TestReadTable:
    def test_every_row_arrives_once_whatever_the_page(self, graph_store: GraphStore) -> None:
        other = graph_store.for_namespace(graph_store.ns + "-other")
        try:
            rows = [{"key": graph_store.key(f"e{i}"), "id": f"e{i}", "n": i} for i in range(5)]
            graph_store.write(
                "UNWIND $rows AS r CREATE (:Entity {key: r.key, ns: $ns, id: r.id, n: r.n})",
                {"rows": rows},
            )
            other.write("CREATE (:Entity {key: $k, ns: $ns, id: 'x', n: 9})", {"k": other.key("x")})
            streamed = graph_store.read("MATCH (e:Entity {ns: $ns}) RETURN e.id AS id, e.n AS n")
            for page in (1, 2, 5, 4096):
                got = graph_store.read_table(
                    "MATCH (e:Entity {ns: $ns})", {"id": "e.id", "n": "e.n"}, page=page
                )
                assert sorted(got, key=lambda r: r["id"]) == sorted(streamed, key=lambda r: r["id"])
                assert len(got) == 5
            assert graph_store.read_table("MATCH (e:Topic {ns: $ns})", {"id": "e.id"}) == []
        finally:
            other.drop_namespace()
            other.close()

    def test_keyed_reads_cover_every_batch(self, graph_store: GraphStore) -> None:
        rows = [{"key": graph_store.key(f"e{i}"), "id": f"e{i}"} for i in range(5)]
        graph_store.write(
            "UNWIND $rows AS r CREATE (:Entity {key: r.key, ns: $ns, id: r.id})", {"rows": rows}
        )
        keys = [graph_store.key(f"e{i}") for i in (4, 0, 2, 9, 1, 3)]  # e9 does not exist
        for batch in (1, 2, 4, 100):
            got = graph_store.read_table_by_keys(
                "MATCH (e:Entity {key: k})", {"id": "e.id"}, keys, batch=batch
            )
            assert sorted(r["id"] for r in got) == ["e0", "e1", "e2", "e3", "e4"]
        assert graph_store.read_table_by_keys("MATCH (e:Entity {key: k})", {"id": "e.id"}, []) == []
