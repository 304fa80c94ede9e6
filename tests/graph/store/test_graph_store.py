"""The whole `GraphStore` against a real Bolt server: hostile strings stay data everywhere."""

from __future__ import annotations

import pytest

from rayweave.cluster.types import Chunk, Document, Level
from rayweave.graph.schema import GraphBatch, NodeRef, RelType
from rayweave.graph.store import GraphStore

from .store_samples import D, E, S, edge, entity, write_two_docs

pytestmark = pytest.mark.integration


INJECTIONS = [
    "x'}) DETACH DELETE n //",
    'x"}) MATCH (n) DETACH DELETE n RETURN 1 //',
    "$ns` :Entity {key: 'k'}) //",
    "名前 with ünïcödé and \\backslash\\ and {braces}",
]


class TestInjection:
    @pytest.mark.parametrize("text", INJECTIONS)
    def test_hostile_strings_are_stored_as_data(self, graph_store: GraphStore, text: str) -> None:
        write_two_docs(graph_store)
        before = graph_store.counts()
        graph_store.write_documents(
            [Document(id=text, source=text, title=text, content_type="text", text=text)]
        )
        graph_store.write_chunks(
            [Chunk(id=text + "#s", doc_id=text, level=Level.SECTION, text=text, title=text)]
        )
        graph_store.write_batch(
            GraphBatch(
                entities=(entity(text, text, kind=text),),
                edges=(
                    edge(
                        RelType.MENTIONS,
                        NodeRef(S, text + "#s"),
                        NodeRef(E, text),
                        props={"note": text},
                    ),
                ),
            )
        )
        graph_store.add_message(
            conversation_id=text, message_id=text, text=text, user_id=text, entity_names=[text]
        )
        after = graph_store.counts()
        assert after.node(D) == before.node(D) + 1
        assert after.node(E) == before.node(E) + 1
        assert after.node(S) == before.node(S) + 1
        rows = graph_store.read(
            "MATCH (s:Section {key: $k})-[m:MENTIONS]->(e:Entity) "
            "RETURN e.name AS name, e.kind AS kind, m.note AS note",
            {"k": graph_store.key(text + "#s")},
        )
        assert rows == [{"name": text, "kind": text, "note": text}]
        assert [m.id for m in graph_store.lookup_entities([text])] == [text]
        graph_store.delete_document(text)
        assert graph_store.counts().node(D) == before.node(D)
