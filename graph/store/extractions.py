"""Extractions in the store: kept on their section chunks, and cached by text hash.

A chunk's extraction lives on its node (`extraction`, JSON), so the corpus pass rebuilds every
extracted entity, relation and fact from stored chunks alone, like the rule-made layer. The
cache is separate and in no namespace: an answer is a fact about a text and an extractor, so a
re-ingest, an edited document's unchanged sections and a fresh evaluation namespace all reuse it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rayweave.cluster.types import ContentType
from rayweave.graph.extraction import Extraction, decode_extraction
from rayweave.graph.schema import NodeLabel
from rayweave.graph.store.connection import StoreConnection

__all__ = ["CACHE_NAMESPACE", "GraphExtractions"]

CACHE_NAMESPACE = "_extraction_cache"
_LOOKUP_BATCH = 1000


class GraphExtractions(StoreConnection):
    """Reads of the extractions kept on chunks; the namespace-free extraction cache."""

    def chunk_extractions(self) -> dict[str, Extraction]:
        """Every extraction kept on this namespace's chunks, by chunk id."""
        rows = self.read(
            f"MATCH (c:{NodeLabel.SECTION.value} {{ns: $ns}}) WHERE c.extraction IS NOT NULL "
            "RETURN c.id AS id, c.extraction AS x",
            op="chunk_extractions",
        )
        return {str(r["id"]): decode_extraction(r["x"]) for r in rows}

    def has_extractions(self) -> bool:
        """Whether any chunk of this namespace keeps an extraction (so facts may exist)."""
        rows = self.read(
            f"MATCH (c:{NodeLabel.SECTION.value} {{ns: $ns}}) WHERE c.extraction IS NOT NULL "
            "RETURN c.id AS id LIMIT 1",
            op="has_extractions",
        )
        return bool(rows)

    def section_count(self) -> int:
        """This namespace's section chunks that an extractor reads (code keeps its parser's
        symbols): what a fact walk must reach (`serve/fact_search.py`)."""
        rows = self.read(
            f"MATCH (c:{NodeLabel.SECTION.value} {{ns: $ns}}) "
            "WHERE coalesce(c.content_type, 'text') <> $code RETURN count(c) AS n",
            {"code": ContentType.CODE.value},
            op="section_count",
        )
        return int(rows[0]["n"]) if rows else 0

    def cached_extractions(self, keys: Sequence[str]) -> dict[str, str]:
        """The cached JSON of each key present (`graph.extraction.extraction_key`)."""
        found: dict[str, str] = {}
        unique = sorted(set(keys))
        for start in range(0, len(unique), _LOOKUP_BATCH):
            rows = self.read(
                f"UNWIND $keys AS k MATCH (x:{NodeLabel.EXTRACTION_CACHE.value} {{key: k}}) "
                "RETURN x.key AS key, x.value AS value",
                {"keys": unique[start : start + _LOOKUP_BATCH]},
                op="cached_extractions",
            )
            found.update({str(r["key"]): str(r["value"]) for r in rows})
        return found

    def cache_extractions(self, values: Mapping[str, str]) -> int:
        """Store `key -> JSON` rows (failed extractions are never passed here)."""
        rows = [{"key": k, "value": v} for k, v in values.items()]
        if not rows:
            return 0
        return self._write_rows(
            f"""
            UNWIND $rows AS r
            MERGE (x:{NodeLabel.EXTRACTION_CACHE.value} {{key: r.key}})
            SET x.ns = $cache_ns, x.value = r.value
            RETURN count(x) AS n
            """,
            rows,
            op="cache_extractions",
            cache_ns=CACHE_NAMESPACE,
        )

    def forget_extractions(self, keys: Sequence[str]) -> int:
        """Remove the cache rows of `keys` (a bench's answers from a server gone now); returns
        how many there were."""
        rows = [{"key": k} for k in sorted(set(keys))]
        if not rows:
            return 0
        return self._write_rows(
            f"""
            UNWIND $rows AS r
            MATCH (x:{NodeLabel.EXTRACTION_CACHE.value} {{key: r.key}})
            DETACH DELETE x
            RETURN count(*) AS n
            """,
            rows,
            op="forget_extractions",
        )

    def cached_extraction_count(self) -> int:
        rows = self.read(
            f"MATCH (x:{NodeLabel.EXTRACTION_CACHE.value} {{ns: $cache_ns}}) RETURN count(x) AS n",
            {"cache_ns": CACHE_NAMESPACE},
            op="cached_extraction_count",
        )
        return int(rows[0]["n"]) if rows else 0
