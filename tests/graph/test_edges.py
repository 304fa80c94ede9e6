"""Rule-made edges: which rule labels a merged edge, and which node a chunk is stored as."""

from __future__ import annotations

from rayweave.cluster.types import Chunk, Level
from rayweave.graph.edges import EdgeAccumulator, chunk_ref, stronger_source
from rayweave.graph.schema import EdgeRow, EdgeSource, NodeLabel, NodeRef, RelType


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

    def test_a_row_kept_as_it_is_equals_what_add_would_make(self) -> None:
        a, b = NodeRef(NodeLabel.ENTITY, "a"), NodeRef(NodeLabel.ENTITY, "b")
        rows = [
            EdgeRow(rel=RelType.RELATED_TO, src=a, dst=b, weight=0.25, confidence=0.25, count=3),
            # Values `add` rounds, a count it raises to 0, and a self-loop it drops.
            EdgeRow(rel=RelType.RELATED_TO, src=b, dst=a, weight=0.1234567, confidence=0.5),
            EdgeRow(rel=RelType.SYNONYM_OF, src=a, dst=b, weight=2.0, count=-1),
            EdgeRow(rel=RelType.RELATED_TO, src=a, dst=a),
            # Ids alike, labels not: no self-loop.
            EdgeRow(rel=RelType.MENTIONS, src=NodeRef(NodeLabel.DOCUMENT, "a"), dst=a),
            # The same key again, by another rule: merged by noisy-OR.
            EdgeRow(
                rel=RelType.RELATED_TO,
                src=a,
                dst=b,
                confidence=0.5,
                source=EdgeSource.EXTRACTOR,
                props={"k": 1},
            ),
        ]
        kept, made = EdgeAccumulator(), EdgeAccumulator()
        for row in rows:
            kept.add_row(row)
            made.add(
                row.rel,
                row.src,
                row.dst,
                confidence=row.confidence,
                source=row.source,
                weight=row.weight,
                count=row.count,
                props=row.props,
            )
        assert kept.rows == made.rows
        assert kept.rows[(RelType.RELATED_TO, a, b)].confidence == 0.625
