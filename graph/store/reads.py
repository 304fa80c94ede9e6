"""Reads for retrieval and corpus rebuilds: counts, entity lookup by alias, stored chunks."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rayweave.cluster.types import Chunk, Entity, Level
from rayweave.graph.extraction import Extraction, decode_extraction
from rayweave.graph.names import name_ngrams, normalize_name, unique, variants
from rayweave.graph.schema import NodeLabel
from rayweave.graph.store.chunk_props import chunk_from_props, decode_mentions
from rayweave.graph.store.connection import StoreConnection
from rayweave.graph.store.records import EntityMatch, GraphCounts

__all__ = ["MAX_NGRAM", "GraphReads"]

MAX_NGRAM = 6
_PROPERTIES = {"p": "properties(c)"}
_TEXT_BATCH = 5_000  # chunks per read of their texts: what the server collects at once
_LOOKUP = """
    UNWIND $keys AS k
    MATCH (a:Alias {key: k})-[:ALIAS_OF]->(e:Entity)
    RETURN a.norm AS via, e.id AS id, e.name AS name, e.kind AS kind, e.df AS df
"""


class GraphReads(StoreConnection):
    """What retrieval and the corpus pass read back."""

    def counts(self) -> GraphCounts:
        """Nodes per label and relationships per type in this namespace."""
        nodes: dict[str, int] = {}
        rels: dict[str, int] = defaultdict(int)
        for label in NodeLabel:
            record = self.read(
                f"MATCH (n:{label.value} {{ns: $ns}}) RETURN count(n) AS n", op="counts"
            )
            nodes[label.value] = int(record[0]["n"]) if record else 0
            if nodes[label.value] == 0:
                continue
            for row in self.read(
                f"MATCH (n:{label.value} {{ns: $ns}})-[r]->() RETURN type(r) AS t, count(r) AS n",
                op="counts",
            ):
                rels[row["t"]] += int(row["n"])
        return GraphCounts(nodes=nodes, relationships=dict(rels))

    def lookup_entities(
        self, names: Iterable[str], *, normalized: bool = False
    ) -> list[EntityMatch]:
        """Entities whose alias equals a name (or its singular); one index seek per form."""
        forms: list[str] = []
        for name in names:
            norm = name if normalized else normalize_name(name)
            forms.extend(variants(norm))
        forms = list(unique(forms))
        if not forms:
            return []
        rows = self.read(_LOOKUP, {"keys": [self.key(f) for f in forms]}, op="lookup_entities")
        return [
            EntityMatch(
                id=r["id"],
                name=r["name"],
                kind=r["kind"] or "concept",
                df=int(r["df"] or 0),
                via=r["via"],
            )
            for r in rows
        ]

    def entities_in_text(self, text: str, *, max_ngram: int = MAX_NGRAM) -> list[EntityMatch]:
        """Known entities named anywhere in `text` (its n-grams looked up as aliases)."""
        return self.lookup_entities(
            (n for _, _, n in name_ngrams(text, max_ngram)), normalized=True
        )

    def chunks(self, doc_ids: Sequence[str] | None = None) -> list[Chunk]:
        """Stored chunks of every level (of the given documents, else all), for corpus-wide
        rebuilds. Fields the graph does not keep (sibling and child ids, offsets) are empty."""
        return [c for c, _ in self._stored_chunks(doc_ids)]

    def chunks_and_mentions(self) -> tuple[list[Chunk], dict[str, list[Entity]]]:
        """Every stored chunk and, in the same read, the extractor entities `write_chunks` kept
        per chunk id (a chunk written before they were kept has no entry)."""
        pairs = self._stored_chunks(None)
        return [c for c, _ in pairs], _mentions(pairs)

    def document_ids(self, offset: int, limit: int) -> list[str]:
        """One page of this namespace's document ids, in id order (a rebuild's shares)."""
        rows = self.read(
            "MATCH (d:Document {ns: $ns}) RETURN d.id AS id ORDER BY d.id SKIP $skip LIMIT $limit",
            {"skip": offset, "limit": limit},
            op="document_ids",
        )
        return [str(r["id"]) for r in rows]

    def document_count(self) -> int:
        rows = self.read("MATCH (d:Document {ns: $ns}) RETURN count(d) AS n", op="document_count")
        return int(rows[0]["n"]) if rows else 0

    def documents_content(
        self, doc_ids: Sequence[str] | None = None
    ) -> tuple[list[Chunk], dict[str, list[Entity]], dict[str, Extraction]]:
        """The given documents' chunks (else every chunk) with what extractors kept on them: the
        corpus pass's input, for the corpus or a share of it."""
        pairs = self._stored_chunks(doc_ids)
        extractions = {
            c.id: decode_extraction(p["extraction"]) for c, p in pairs if p.get("extraction")
        }
        return [c for c, _ in pairs], _mentions(pairs), extractions

    def _stored_chunks(self, doc_ids: Sequence[str] | None) -> list[tuple[Chunk, dict[str, Any]]]:
        """(chunk, its stored properties), as table reads (`graph/store/row_reads.py`): by
        batches of keys for the whole corpus, one read per label for a share of documents."""
        dkeys = None if doc_ids is None else [self.key(d) for d in doc_ids]
        found: list[tuple[Chunk, dict[str, Any]]] = []
        for label in (NodeLabel.SECTION, NodeLabel.PROPOSITION):
            level = Level(label.value.lower())
            rows = self._chunk_rows(label, "", dkeys)
            found.extend((chunk_from_props(r["p"], level=level), r["p"]) for r in rows)
        for r in self._chunk_rows(NodeLabel.DOCUMENT, "c.chunk_id IS NOT NULL", dkeys):
            p = dict(r["p"])
            p["doc_id"], p["id"] = p["id"], p["chunk_id"]
            found.append((chunk_from_props(p, level=Level.DOCUMENT), p))
        # By id, not storage order: ties in the corpus pass must not depend on which actor
        # wrote first, nor on the order updates left the rows in.
        found.sort(key=lambda pair: pair[0].id)
        return found

    def _chunk_rows(
        self, label: NodeLabel, where: str, dkeys: Sequence[str] | None
    ) -> list[dict[str, Any]]:
        """Every `label` node's properties (`where`: on `c`), or those of the documents keyed
        `dkeys` (a Document's own key is its `key`, a chunk's its `dkey`)."""
        if dkeys is not None:
            own = "key" if label is NodeLabel.DOCUMENT else "dkey"
            cond = " AND ".join(x for x in (where, f"c.{own} IN $dkeys") if x)
            match = f"MATCH (c:{label.value} {{ns: $ns}}) WHERE {cond}"
            return self.read_table(match, _PROPERTIES, {"dkeys": dkeys}, op="chunks")
        match = f"MATCH (c:{label.value} {{ns: $ns}})" + (f" WHERE {where}" if where else "")
        keys = [str(r["k"]) for r in self.read_table(match, {"k": "c.key"}, op="chunks")]
        return self.read_table_by_keys(
            f"MATCH (c:{label.value} {{key: k}})", _PROPERTIES, keys, op="chunks", batch=_TEXT_BATCH
        )


def _mentions(pairs: Sequence[tuple[Chunk, Mapping[str, Any]]]) -> dict[str, list[Entity]]:
    """The extractor entities kept per chunk id (a chunk written before they were kept has no
    entry)."""
    return {c.id: decode_mentions(p["mentions"]) for c, p in pairs if p.get("mentions") is not None}
