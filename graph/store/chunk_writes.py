"""Documents and chunks: the text layer the entity layer is built over and rebuilt from."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from rayweave.cluster.types import Chunk, Document, Entity
from rayweave.graph.schema import CHUNK_LABELS, EdgeSource, NodeLabel, RelType, label_for_level
from rayweave.graph.store.chunk_props import (
    chunk_row,
    encode_mentions,
    structure_links,
    unique_rows,
)
from rayweave.graph.store.connection import StoreConnection
from rayweave.graph.store.cypher import link_chunks_query

__all__ = ["ChunkWrites"]

_WRITE_DOCUMENTS = """
    UNWIND $rows AS r
    MERGE (d:Document {key: r.key})
    SET d.ns = $ns, d.id = r.id, d.title = r.title, d.source = r.source,
        d.content_type = r.content_type, d.language = r.language,
        d.content_hash = r.content_hash
    RETURN count(d) AS n
"""
_WRITE_SUMMARIES = """
    UNWIND $rows AS r
    MERGE (d:Document {key: r.dkey})
    SET d.ns = $ns, d.id = r.doc_id, d.chunk_id = r.props.id, d.ckey = r.key,
        d.text = r.props.text, d.level = 'document', d.section_path = r.props.section_path,
        d.keywords = r.props.keywords, d.token_count = r.props.token_count,
        d.mentions = r.props.mentions,
        d.title = coalesce(r.title, d.title),
        d.source = coalesce(d.source, r.props.source),
        d.content_type = coalesce(d.content_type, r.props.content_type)
    RETURN count(d) AS n
"""


def _write_chunks_query(label: NodeLabel) -> str:
    return f"""
        UNWIND $rows AS r
        MERGE (c:{label.value} {{key: r.key}})
        SET c += r.props, c.title = r.title
        WITH c, r
        MERGE (d:Document {{key: r.dkey}})
        ON CREATE SET d.ns = $ns, d.id = r.doc_id
        MERGE (c)-[e:CHUNK_OF]->(d)
        ON CREATE SET e.weight = 1.0, e.confidence = 1.0, e.source = $source, e.count = 1
        RETURN count(c) AS n
    """


class ChunkWrites(StoreConnection):
    """Document and chunk nodes, their structure edges, and the extractor entities chunks keep."""

    def write_documents(self, docs: Sequence[Document]) -> int:
        rows = [
            {
                "key": self.key(d.id),
                "id": d.id,
                "title": d.title,
                "source": d.source,
                "content_type": d.content_type.value,
                "language": d.language,
                "content_hash": d.content_hash,
            }
            for d in docs
        ]
        self.mark(self.key(d.id) for d in docs)
        return self._write_rows(_WRITE_DOCUMENTS, rows, op="write_documents")

    def write_chunks(
        self,
        chunks: Sequence[Chunk],
        mentions: Mapping[str, Sequence[Entity]] | None = None,
        extractions: Mapping[str, str] | None = None,
    ) -> int:
        """Chunk nodes plus CHUNK_OF, HAS_CHILD (both directions' fields) and NEXT edges.

        A `Level.DOCUMENT` chunk is stored on its Document node. Structure edges are written
        whenever both ends exist, from whichever end arrives second, so batch order is free.
        `mentions` (an extractor's entities per chunk id) are kept on the chunk, so that the
        corpus pass can rebuild the entity layer from stored chunks alone; so are `extractions`
        (an extractor's JSON per section chunk id).
        """
        mentions = mentions or {}
        extractions = extractions or {}
        by_label: dict[NodeLabel, list[dict[str, Any]]] = defaultdict(list)
        child_rows: list[dict[str, str]] = []
        next_rows: list[dict[str, str]] = []
        for c in chunks:
            row = chunk_row(
                c,
                ns=self.ns,
                key=self.key,
                mentions=mentions.get(c.id, ()),
                extraction=extractions.get(c.id),
            )
            by_label[label_for_level(c.level)].append(row)
            children, successors = structure_links(c, self.key)
            child_rows.extend(children)
            next_rows.extend(successors)

        keys = [r["key"] for rows in by_label.values() for r in rows]
        keys += [r[end] for r in (*child_rows, *next_rows) for end in ("a", "b")]
        # Logged before the rows as well as after: the rows take several transactions, and a
        # crash between them and the closing entry would leave rows no entry names (a replica
        # would keep its old projection of them). A reader of the first entry re-reads the
        # keys early; the closing one makes it read them again once the rows are in.
        self.mark(keys)
        self.touch()
        written = 0
        if by_label[NodeLabel.DOCUMENT]:
            written += self._write_rows(
                _WRITE_SUMMARIES, by_label[NodeLabel.DOCUMENT], op="write_chunks"
            )
        for label in (NodeLabel.SECTION, NodeLabel.PROPOSITION):
            if not by_label[label]:
                continue
            written += self._write_rows(
                _write_chunks_query(label),
                by_label[label],
                op="write_chunks",
                source=EdgeSource.STRUCTURE.value,
            )
        self.mark(keys)
        for rel, rows in ((RelType.HAS_CHILD, child_rows), (RelType.NEXT, next_rows)):
            if rows:
                self._write_rows(link_chunks_query(rel), unique_rows(rows), op="write_chunks")
        self.touch()
        return written

    def backfill_mentions(self) -> int:
        """Keep on each chunk written before chunks kept their extractor entities (no `mentions`
        property) the entities its stored extractor edges name, so that the first corpus pass
        after an upgrade rebuilds them instead of dropping them; returns how many chunks."""
        done = 0
        for label in CHUNK_LABELS:
            where = "c.chunk_id IS NOT NULL AND " if label is NodeLabel.DOCUMENT else ""
            found = self.read(
                f"""
                MATCH (c:{label.value} {{ns: $ns}}) WHERE {where}c.mentions IS NULL
                OPTIONAL MATCH (c)-[m:MENTIONS]->(e:Entity) WHERE m.source = $source
                RETURN c.key AS key, collect(e.name) AS names, collect(e.kind) AS kinds
                """,
                {"source": EdgeSource.EXTRACTOR.value},
                op="backfill_mentions",
            )
            rows = [
                {
                    "key": r["key"],
                    "m": encode_mentions(
                        [
                            Entity(id="", name=str(n), kind=str(k))
                            for n, k in zip(r["names"], r["kinds"], strict=False)
                        ]
                    ),
                }
                for r in found
            ]
            done += self._write_rows(
                f"""
                UNWIND $rows AS r
                MATCH (c:{label.value} {{key: r.key}})
                SET c.mentions = r.m
                RETURN count(c) AS n
                """,
                rows,
                op="backfill_mentions",
            )
        return done
