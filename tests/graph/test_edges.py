"""Rule-made edges: which rule labels a merged edge, and which node a chunk is stored as."""

from __future__ import annotations

from rayweave.cluster.types import Chunk, Level
from rayweave.graph.edges import chunk_ref, stronger_source
from rayweave.graph.schema import EdgeSource, NodeLabel, NodeRef


def sec(cid: str, doc: str, text: str, **kw: object) -> Chunk:
    return Chunk(id=cid, doc_id=doc, level=Level.SECTION, text=text, **kw)  # type: ignore[arg-type]


class TestEdges:
    def test_stronger_source_label_rule(self) -> None:
        gaz, ext, title = EdgeSource.GAZETTEER, EdgeSource.EXTRACTOR, EdgeSource.TITLE
        assert stronger_source(gaz, 0.9, ext, 0.1) is ext
        assert stronger_source(ext, 0.1, gaz, 0.9) is ext
        assert stronger_source(title, 0.9, ext, 0.5) is title
        assert stronger_source(title, 0.4, ext, 0.5) is ext
        assert stronger_source(gaz, 0.9, gaz, 0.5) is gaz

    def test_document_level_chunks_map_to_document_nodes(self) -> None:
        c = Chunk(id="summary-1", doc_id="doc-1", level=Level.DOCUMENT, text="x")
        assert chunk_ref(c) == NodeRef(NodeLabel.DOCUMENT, "doc-1")
        assert chunk_ref(sec("s", "doc-1", "x")) == NodeRef(NodeLabel.SECTION, "s")
