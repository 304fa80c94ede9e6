"""Cypher text the store's parts share, and the builders that interpolate schema enums into it.

Labels and relationship types come only from `schema` enums; every value is a query parameter.
"""

from __future__ import annotations

from typing import Literal, LiteralString

from rayweave.graph.schema import ENTITY_ANCHORS, EdgeSource, NodeLabel, RelType

__all__ = [
    "ANCHOR_PATTERN",
    "CHANGE_LABEL",
    "INTRODUCED",
    "NEIGHBOUR_IN",
    "NEIGHBOUR_OUT",
    "NEIGHBOUR_START",
    "REFRESH_DF",
    "REFRESH_DF_ALL",
    "STAMP_LABEL",
    "WriteMode",
    "delete_edges_query",
    "detach_delete_query",
    "link_chunks_query",
    "merge_edges_query",
    "q",
    "upsert_entities_query",
]

WriteMode = Literal["max", "replace"]
ANCHOR_PATTERN = "|".join(r.value for r in ENTITY_ANCHORS)
# An entity lives while something introduces it. A gazetteer mention only links text to an
# entity that exists already, so it must not keep one alive: otherwise what a clean ingest of
# the same corpus would hold depends on which documents came and went before.
INTRODUCED = (
    f"EXISTS {{ MATCH (e)<-[r:{ANCHOR_PATTERN}]-() "
    f"WHERE r.source <> '{EdgeSource.GAZETTEER.value}' }}"
)
# One node per namespace whose `value` changes on every write (not a NodeLabel: it is bookkeeping,
# not part of the graph, and counts leave it out).
STAMP_LABEL = "GraphStamp"
# The change log's entries (`graph/store/change_log.py`); bookkeeping like the stamp.
CHANGE_LABEL = "GraphChange"

# `df` (how many chunks mention an entity) of the entities keyed by `$rows`, or of all of them.
REFRESH_DF = """
    UNWIND $rows AS r
    MATCH (e:Entity {key: r.key})
    OPTIONAL MATCH (e)<-[m:MENTIONS]-()
    WITH e, count(m) AS df
    SET e.df = df
    RETURN count(e) AS n
"""
REFRESH_DF_ALL = """
    MATCH (e:Entity {ns: $ns})
    OPTIONAL MATCH (e)<-[m:MENTIONS]-()
    WITH e, count(m) AS df
    SET e.df = df
"""


def q(text: str) -> LiteralString:
    """Query text is built only from literals and schema enums (values travel as parameters)."""
    return text


def delete_edges_query(label: NodeLabel, where: str) -> str:
    """Delete the out-edges of `label` nodes of the namespace that match `where` (on `r`)."""
    return f"""
        MATCH (s:{label.value} {{ns: $ns}})-[r]->()
        WHERE {where}
        DELETE r
        RETURN count(*) AS n
    """


def detach_delete_query(label: NodeLabel) -> str:
    """Delete the `label` nodes keyed by `$keys` with their edges."""
    return f"UNWIND $keys AS k MATCH (n:{label.value} {{key: k}}) DETACH DELETE n"


def upsert_entities_query(mode: WriteMode) -> str:
    """MERGE entities; `"replace"` sets name, kind and aliases to the rows, `"max"` only adds."""
    update = (
        "SET e.name = r.name, e.kind = r.kind, e.aliases = r.aliases"
        if mode == "replace"
        else """SET e.kind = CASE WHEN e.kind = 'concept' THEN r.kind ELSE e.kind END,
        e.aliases = e.aliases + [a IN r.aliases WHERE NOT a IN e.aliases]"""
    )
    return f"""
        UNWIND $rows AS r
        MERGE (e:Entity {{key: r.key}})
        ON CREATE SET e.ns = $ns, e.id = r.id, e.name = r.name, e.kind = r.kind, e.df = 0,
                      e.aliases = []
        SET e.description = coalesce(e.description, r.description)
        {update}
        RETURN count(e) AS n
    """


def _resolve_chunk(var: str, key: str) -> str:
    """Cypher resolving a chunk key of any level to `var` (a Document holds its summary chunk)."""
    return (
        f"OPTIONAL MATCH ({var}1:Document {{ckey: {key}}}) "
        f"OPTIONAL MATCH ({var}2:Section {{key: {key}}}) "
        f"OPTIONAL MATCH ({var}3:Proposition {{key: {key}}}) "
    )


def link_chunks_query(rel: RelType) -> str:
    return f"""
        UNWIND $rows AS r
        {_resolve_chunk("a", "r.a")}
        WITH r, coalesce(a3, a2, a1) AS a
        WHERE a IS NOT NULL
        {_resolve_chunk("b", "r.b")}
        WITH a, coalesce(b3, b2, b1) AS b
        WHERE b IS NOT NULL
        MERGE (a)-[e:{rel.value}]->(b)
        ON CREATE SET e.weight = 1.0, e.confidence = 1.0, e.source = 'structure', e.count = 1
        RETURN count(e) AS n
    """


def merge_edges_query(rel: RelType, src: NodeLabel, dst: NodeLabel, mode: WriteMode) -> str:
    gaz = EdgeSource.GAZETTEER.value
    if mode == "replace":
        update = (
            "SET e.weight = r.w, e.confidence = r.c, e.source = r.src, e.count = r.n, e.run = $run"
        )
    else:
        # The label rule of builders.stronger_source: the gazetteer never takes over another
        # rule's edge, and always gives way to one.
        update = f"""SET e.source = CASE
                WHEN (r.src = '{gaz}') <> (e.source = '{gaz}')
                    THEN CASE WHEN r.src = '{gaz}' THEN e.source ELSE r.src END
                WHEN r.c > e.confidence THEN r.src ELSE e.source END,
            e.weight = CASE WHEN r.w > e.weight THEN r.w ELSE e.weight END,
            e.confidence = CASE WHEN r.c > e.confidence THEN r.c ELSE e.confidence END,
            e.count = CASE WHEN r.n > e.count THEN r.n ELSE e.count END"""
    return f"""
        UNWIND $rows AS r
        MATCH (s:{src.value} {{key: r.s}})
        MATCH (d:{dst.value} {{key: r.d}})
        MERGE (s)-[e:{rel.value}]->(d)
        ON CREATE SET e.weight = r.w, e.confidence = r.c, e.source = r.src, e.count = r.n
        {update}
        SET e += r.props
        RETURN count(e) AS n
    """


# The search page's graph view: start nodes by key (a Document also by its summary chunk key),
# then one hop out and in. Aliases and conversations are bookkeeping, not knowledge.
_VIEW_FIELDS = (
    "labels({v})[0] AS label, {v}.key AS key, {v}.name AS name, {v}.title AS title, "
    "substring(coalesce({v}.text, ''), 0, 120) AS text, {v}.source AS source, "
    "{v}.level AS level"
)
NEIGHBOUR_START = (
    "UNWIND $keys AS k "
    "OPTIONAL MATCH (d:Document {key: k}) OPTIONAL MATCH (c:Document {ckey: k}) "
    "OPTIONAL MATCH (s:Section {key: k}) OPTIONAL MATCH (p:Proposition {key: k}) "
    "OPTIONAL MATCH (e:Entity {key: k}) OPTIONAL MATCH (t:Topic {key: k}) "
    "WITH coalesce(d, c, s, p, e, t) AS n WHERE n IS NOT NULL "
    "RETURN DISTINCT " + _VIEW_FIELDS.format(v="n")
)
_NEIGHBOUR_HOP = (
    "UNWIND $keys AS k "
    "OPTIONAL MATCH (d:Document {{key: k}}) OPTIONAL MATCH (s:Section {{key: k}}) "
    "OPTIONAL MATCH (p:Proposition {{key: k}}) OPTIONAL MATCH (e:Entity {{key: k}}) "
    "OPTIONAL MATCH (t:Topic {{key: k}}) "
    "WITH k, coalesce(d, s, p, e, t) AS n WHERE n IS NOT NULL "
    "MATCH (n){pattern}(m) WHERE m.ns = $ns AND NOT m:Alias AND NOT m:Message "
    "AND NOT m:Conversation AND NOT m:User "
    "RETURN k AS from, type(r) AS type, {out} AS out, " + _VIEW_FIELDS.format(v="m") + " "
    "LIMIT $limit"
)
NEIGHBOUR_OUT = _NEIGHBOUR_HOP.format(pattern="-[r]->", out="true")
NEIGHBOUR_IN = _NEIGHBOUR_HOP.format(pattern="<-[r]-", out="false")
