"""Documents and chunks written against a real Bolt server: structure edges from chunk fields."""

from __future__ import annotations

import pytest

from rayweave.graph.schema import RelType
from rayweave.graph.store import GraphStore

from .store_samples import D, P, S, doc, doc_chunks

pytestmark = pytest.mark.integration


class TestChunkWrites:
    def test_structure_edges_from_chunk_fields(self, graph_store: GraphStore) -> None:
        graph_store.write_documents([doc("a")])
        graph_store.write_chunks(doc_chunks("a", n_sections=3))
        c = graph_store.counts()
        assert (c.node(D), c.node(S), c.node(P)) == (1, 3, 1)
        assert (
            c.rel(RelType.CHUNK_OF) == 4
        )  # sections and the proposition; the summary is the Document
        assert c.rel(RelType.HAS_CHILD) == 4  # summary -> 3 sections, s0 -> p0
        assert c.rel(RelType.NEXT) == 2
        rows = graph_store.read(
            "MATCH (d:Document {key: $k}) "
            "RETURN d.chunk_id AS cid, d.text AS text, d.title AS title",
            {"k": graph_store.key("a")},
        )
        assert rows == [{"cid": "a-sum", "text": "a summary", "title": "a"}]
        rows = graph_store.read(
            "MATCH (s:Section {key: $k})-[:NEXT]->(n:Section) "
            "RETURN n.id AS id, s.section_path AS path",
            {"k": graph_store.key("a-s0")},
        )
        assert rows == [{"id": "a-s1", "path": ["Intro", "Part 0"]}]

    def test_chunk_order_does_not_matter(self, graph_store: GraphStore) -> None:
        chunks = doc_chunks("a", n_sections=3)
        for c in reversed(chunks):  # children and successors arrive before their parents
            graph_store.write_chunks([c])
        c = graph_store.counts()
        assert (c.rel(RelType.HAS_CHILD), c.rel(RelType.NEXT), c.rel(RelType.CHUNK_OF)) == (4, 2, 4)
