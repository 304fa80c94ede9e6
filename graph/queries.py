"""Cypher for the graph traversals: pure builders from seeds, query forms and a profile to a
`CypherQuery` (the store binds `$ns`).

- `neighbourhood_query`: from seed chunks, in ONE query whatever the profile asks for: parent,
  children, previous/next siblings, usage examples (seed DEFINES a symbol that a chunk USES),
  definitions (the reverse), REFERENCES both ways, solutions (SOLVES the seed's error), and
  RELATED_TO neighbours' explanations.
- `entity_search_query`: query forms -> `Alias` -> `Entity` -> EXPLAINS / SOLVES / DEFINES /
  MENTIONS -> chunks; with `expand` also over RELATED_TO.
- `bridge_hop_query`: one hop of chunk -MENTIONS-> entity <-EXPLAINS- chunk.
- `conversation_concepts_query`, `discovery_query`: seed 003's conversation-aware ranking and
  unseen-document discovery.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rayweave.cluster.settings import GraphSettings
from rayweave.cluster.types import Hit, Level
from rayweave.graph.names import QueryForm
from rayweave.graph.profiles import TraversalProfile
from rayweave.graph.schema import RelType, node_key

ENTITY_TARGETS_PER_ENTITY = 25
RELATED_ROWS_PER_SEED = 40
MENTIONS_MAX_DF = 50


@dataclass(frozen=True, slots=True, kw_only=True)
class Seed:
    """A hit to start from (from vector search): a chunk id, its score, and its level when known
    (which saves the lookups of the other two levels)."""

    chunk_id: str
    score: float = 1.0
    level: Level | None = None

    @classmethod
    def from_hit(cls, hit: Hit) -> Seed:
        return cls(chunk_id=hit.id, score=hit.score, level=hit.level)


@dataclass(frozen=True, slots=True, kw_only=True)
class CypherQuery:
    """A query and its parameters; `$ns` is bound by the store."""

    text: str
    params: Mapping[str, Any]


# -- query builders (pure) -------------------------------------------------------------------

_NODE = (
    "{v}.id AS tid, labels({v})[0] AS tlabel, coalesce({v}.doc_id, {v}.id) AS tdoc, "
    "{v}.chunk_id AS tchunk, coalesce({v}.ckey, {v}.key) AS tkey, {v}.text AS ttext, "
    "{v}.title AS ttitle, {v}.section_path AS tpath, {v}.source AS tsource"
)


def _node(var: str) -> str:
    return _NODE.format(v=var)


_LEVEL_LOOKUP = {
    Level.DOCUMENT: ("Document", "ckey", "dk"),
    Level.SECTION: ("Section", "key", "sk"),
    Level.PROPOSITION: ("Proposition", "key", "pk"),
}
_NO_KEY = "\u0000"  # a key no node has: an index seek that finds nothing (null would scan)


def _resolve_seed(param: str, seeds: Sequence[Seed]) -> str:
    """Resolve a seed row to `c`, a chunk node of any level (a Document holds its summary).

    Only the levels the seeds can be on are looked up; one known level is a plain MATCH.
    """
    levels = [lv for lv in Level if any(s.level in (None, lv) for s in seeds)]
    if len(levels) == 1:
        label, prop, col = _LEVEL_LOOKUP[levels[0]]
        return f"MATCH (c:{label} {{{prop}: {param}.{col}}}) "
    parts = []
    names = []
    for i, lv in enumerate(levels):
        label, prop, col = _LEVEL_LOOKUP[lv]
        parts.append(f"OPTIONAL MATCH (c{i}:{label} {{{prop}: {param}.{col}}}) ")
        names.append(f"c{i}")
    return (
        "".join(parts)
        + f"WITH {param}, coalesce({', '.join(reversed(names))}) AS c WHERE c IS NOT NULL "
    )


def _seed_rows(ns: str, seeds: Sequence[Seed]) -> list[dict[str, Any]]:
    rows = []
    for s in seeds:
        key = node_key(ns, s.chunk_id)
        row: dict[str, Any] = {"id": s.chunk_id, "score": s.score}
        for lv, (_, _, col) in _LEVEL_LOOKUP.items():
            row[col] = key if s.level in (None, lv) else _NO_KEY
        rows.append(row)
    return rows


def neighbourhood_query(
    ns: str, seeds: Sequence[Seed], profile: TraversalProfile, settings: GraphSettings
) -> CypherQuery | None:
    """One query returning every enabled one- and two-step neighbour of every seed.

    Rows: seed id, `kind`, the walked relationship types `rels`, the entity walked through
    (`via`, `via_name`) if any, an edge `strength` in [0, 1], and the target node's columns.
    """
    depth = int(
        profile.sequence_depth if profile.sequence_depth is not None else settings.expand_depth
    )
    branches = [
        _branch(*spec)
        for weight, spec in _neighbourhood_branches(depth)
        if getattr(profile, weight) > 0 and (weight != "sequence" or depth > 0)
    ]
    if not branches or not seeds:
        return None
    union = " UNION ALL ".join(branches)
    text = (
        f"UNWIND $seeds AS s {_resolve_seed('s', seeds)} "
        f"CALL {{ {union} }} "
        "RETURN s.id AS seed, coalesce(c.doc_id, c.id) AS seed_doc, kind, rels, via, via_name, "
        f"strength, {_node('t')}"
    )
    return CypherQuery(text=text, params={"seeds": _seed_rows(ns, seeds)})


_Branch = tuple[str, str, str, str, bool, bool]  # pattern, kind, rels, strength, via, limit


def _neighbourhood_branches(depth: int) -> list[tuple[str, _Branch]]:
    """(profile weight, branch) for each neighbour kind, in the order the query unions them."""
    return [
        ("parent", ("(t)-[:HAS_CHILD]->(c)", "parent", "['HAS_CHILD']", "1.0", False, False)),
        (
            "children",
            (
                "(c)-[:HAS_CHILD]->(t)",
                "child",
                "['HAS_CHILD']",
                "1.0 / (1.0 + coalesce(t.position, 0))",
                False,
                False,
            ),
        ),
        (
            "sequence",
            (
                f"p = (c)-[:NEXT*1..{depth}]-(t) "
                "WHERE coalesce(t.parent_id, '') = coalesce(c.parent_id, '')",
                "sequence",
                "[r IN relationships(p) | type(r)]",
                "1.0 / length(p)",
                False,
                False,
            ),
        ),
        (
            "examples",
            (
                "(c)-[:DEFINES]->(e:Entity)<-[u:USES]-(t)",
                "example",
                "['DEFINES', 'USES']",
                "u.confidence",
                True,
                True,
            ),
        ),
        (
            "definitions",
            (
                "(c)-[u:USES]->(e:Entity)<-[d:DEFINES]-(t)",
                "definition",
                "['USES', 'DEFINES']",
                "u.confidence * d.confidence",
                True,
                False,
            ),
        ),
        (
            "references",
            (
                "(c)-[r:REFERENCES]-(t) WHERE NOT t:Message",
                "reference",
                "['REFERENCES']",
                "r.confidence",
                False,
                False,
            ),
        ),
        (
            "solutions",
            (
                "(c)-[:MENTIONS|SOLVES]->(e:Entity {kind: 'error'})<-[s:SOLVES]-(t)",
                "solution",
                "['MENTIONS', 'SOLVES']",
                "s.confidence",
                True,
                False,
            ),
        ),
        (
            "related",
            (
                "(c)-[m:MENTIONS]->(e:Entity)-[r:RELATED_TO]-(:Entity)<-[x:EXPLAINS]-(t)",
                "related",
                "['MENTIONS', 'RELATED_TO', 'EXPLAINS']",
                "m.confidence * r.weight * x.confidence",
                True,
                True,
            ),
        ),
    ]


def _branch(pattern: str, kind: str, rels: str, strength: str, via: bool, limit: bool) -> str:
    """One UNION branch from seed `c` to target `t` (through entity `e` when `via`)."""
    via_cols = "e.id AS via, e.name AS via_name" if via else "null AS via, null AS via_name"
    tail = f" ORDER BY strength DESC LIMIT {RELATED_ROWS_PER_SEED}" if limit else ""
    return (
        f"WITH c MATCH {pattern} "
        f"WITH t, '{kind}' AS kind, {rels} AS rels, {via_cols}, {strength} AS strength "
        f"RETURN t, kind, rels, via, via_name, strength{tail}"
    )


def entity_search_query(
    ns: str, forms: Sequence[QueryForm], rels: Mapping[RelType, float], expand: bool
) -> CypherQuery | None:
    """Alias seeks for the query's forms, then the chunks that explain/solve/define/mention each
    matched entity (and, with `expand`, those of its RELATED_TO neighbours)."""
    if not forms or not rels:
        return None
    strong = "|".join(r.value for r in rels if r is not RelType.MENTIONS)
    branches = []
    if strong:
        branches.append(
            f"WITH e MATCH (e)<-[x:{strong}]-(t) WHERE NOT t:Message "
            "WITH t, e AS hub, type(x) AS xtype, x.confidence AS xc, x.weight AS xw, 1.0 AS rw "
            "RETURN t, hub, xtype, xc, xw, rw "
            f"ORDER BY xc * xw DESC LIMIT {ENTITY_TARGETS_PER_ENTITY}"
        )
    if RelType.MENTIONS in rels:
        # Mentions of a common entity are weak evidence and many: only rare entities' count.
        branches.append(
            f"WITH e MATCH (e)<-[x:MENTIONS]-(t) WHERE coalesce(e.df, 0) <= {MENTIONS_MAX_DF} "
            "AND NOT t:Message "
            "WITH t, e AS hub, type(x) AS xtype, x.confidence AS xc, x.weight AS xw, 1.0 AS rw "
            "RETURN t, hub, xtype, xc, xw, rw "
            f"ORDER BY xc * xw DESC LIMIT {ENTITY_TARGETS_PER_ENTITY}"
        )
    types = "|".join(r.value for r in rels if r is not RelType.MENTIONS) or RelType.EXPLAINS.value
    if expand:
        branches.append(
            f"WITH e MATCH (e)-[r:RELATED_TO]-(n:Entity)<-[x:{types}]-(t) WHERE NOT t:Message "
            "WITH t, n AS hub, type(x) AS xtype, x.confidence AS xc, x.weight AS xw, "
            "r.weight AS rw "
            "RETURN t, hub, xtype, xc, xw, rw "
            f"ORDER BY rw * xc * xw DESC LIMIT {ENTITY_TARGETS_PER_ENTITY}"
        )
    text = (
        "UNWIND $aliases AS ak "
        "MATCH (a:Alias {key: ak})-[:ALIAS_OF]->(e:Entity) "
        "WITH a.norm AS via_form, e "
        f"CALL {{ {' UNION ALL '.join(branches)} }} "
        "RETURN via_form, e.id AS eid, e.name AS ename, coalesce(e.df, 0) AS edf, "
        "hub.id AS hid, hub.name AS hname, coalesce(hub.df, 0) AS hdf, xtype, xc, xw, rw, "
        f"{_node('t')}"
    )
    return CypherQuery(text=text, params={"aliases": [node_key(ns, f.form) for f in forms]})


def bridge_hop_query(ns: str, frontier: Sequence[Seed]) -> CypherQuery | None:
    """One bridge hop: frontier chunk -MENTIONS-> entity <-EXPLAINS- chunk of another document."""
    if not frontier:
        return None
    seeds = frontier
    text = (
        f"UNWIND $seeds AS s {_resolve_seed('s', seeds)} "
        "MATCH (c)-[m:MENTIONS]->(e:Entity)<-[x:EXPLAINS]-(t) "
        "WHERE coalesce(t.doc_id, t.id) <> coalesce(c.doc_id, c.id) "
        "RETURN s.id AS seed, coalesce(c.doc_id, c.id) AS seed_doc, e.id AS eid, e.name AS ename, "
        "coalesce(e.df, 1) AS edf, "
        "m.weight AS mw, m.confidence AS mc, x.confidence AS xc, "
        f"{_node('t')}"
    )
    return CypherQuery(text=text, params={"seeds": _seed_rows(ns, frontier)})


def conversation_concepts_query(
    ns: str, conversation_id: str, doc_ids: Sequence[str]
) -> CypherQuery:
    """Per candidate document: how strongly it explains the concepts the conversation mentioned."""
    text = (
        "MATCH (:Conversation {key: $ckey})<-[:PART_OF]-(:Message)-[:MENTIONS]->(e:Entity) "
        "WITH DISTINCT e "
        "MATCH (e)<-[x:EXPLAINS]-(t) "
        "WITH coalesce(t.doc_id, t.id) AS doc, e, max(x.confidence) AS conf "
        "WHERE doc IN $docs "
        "RETURN doc, count(e) AS concepts, sum(conf) AS strength, collect(e.id)[..5] AS entities"
    )
    return CypherQuery(
        text=text,
        params={"ckey": node_key(ns, conversation_id), "docs": list(dict.fromkeys(doc_ids))},
    )


def discovery_query(ns: str, user_id: str, max_hops: int, limit: int) -> CypherQuery:
    """Documents explaining concepts related (RELATED_TO*1..max_hops) to what a user asked about,
    that the user has not viewed (seed 003's multi-hop knowledge discovery)."""
    hops = int(max_hops)
    text = (
        "MATCH (u:User {key: $ukey})-[:CREATED]->(:Message)-[:MENTIONS]->(c1:Entity) "
        "WITH u, collect(DISTINCT c1) AS asked "
        "UNWIND asked AS c1 "
        f"MATCH p = (c1)-[:RELATED_TO*1..{hops}]-(c2:Entity) "
        "WHERE NOT c2 IN asked "
        "WITH u, c1, c2, "
        "reduce(w = 1.0, r IN relationships(p) | w * coalesce(r.weight, 0.5)) AS pw, "
        "[x IN nodes(p) | x.id] AS ids "
        "MATCH (c2)<-[x:EXPLAINS]-(t) "
        "WITH u, coalesce(t.dkey, t.key) AS dkey, c1, c2, pw * x.confidence AS w, ids "
        "MATCH (d:Document {key: dkey}) "
        "WHERE NOT EXISTS { MATCH (u)-[:VIEWED]->(d) } "
        "WITH d, sum(w) AS score, count(DISTINCT c2) AS concepts, collect(ids)[0] AS path "
        "RETURN d.id AS tid, 'Document' AS tlabel, d.id AS tdoc, d.chunk_id AS tchunk, "
        "d.ckey AS tkey, "
        "d.text AS ttext, d.title AS ttitle, d.section_path AS tpath, d.source AS tsource, "
        "score, concepts, path "
        f"ORDER BY score DESC, tid LIMIT {int(limit)}"
    )
    return CypherQuery(text=text, params={"ukey": node_key(ns, user_id)})
