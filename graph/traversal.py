"""Graph traversals for retrieval: pure query builders, pure scoring, and a thin executor.

Every result is a `Hit` whose `paths` hold the `GraphPath`s that justified it (node ids from the
seed or query entity to the hit, the relationship types walked, and the path's score). Paths
read from where the walk started; a type walked against its stored direction (a seed's parent
reached over `HAS_CHILD`) is written the same way, since the type says what the link means.

Traversals (seed 000, 001, 003):

- `neighbourhood`: from seed chunks, in ONE query whatever the profile asks for: parent,
  children, previous/next siblings (`expand_depth`), usage examples (seed DEFINES a symbol that
  a chunk USES), definitions (the reverse), REFERENCES both ways, solutions (SOLVES the seed's
  error), and RELATED_TO neighbours' explanations.
- `entity_search`: query n-grams -> `Alias` -> `Entity` (exact, singular, alias) -> EXPLAINS /
  SOLVES / DEFINES / MENTIONS -> chunks; with `expand_entities` also over RELATED_TO.
- `bridge`: multi-hop beam search from the seeds over chunk -MENTIONS-> entity <-EXPLAINS-
  chunk, scored like one step of personalised PageRank: a seed's mass flows through each entity
  it mentions, damped by that entity's rarity, into the chunks that explain it; the best
  `beam_width` become the next frontier (`max_hops`, `hop_decay`).
- conversation-aware ranking and unseen-document discovery (seed 003).

Seed scores are divided by the largest one, so graph scores live in [0, 1] whatever the
vector store's scale. Independent queries of a profile run concurrently: a query costs about
two round trips, however many seeds it has.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from rayweave.cluster.errors import ConfigError
from rayweave.cluster.settings import GraphSettings
from rayweave.cluster.types import GraphPath, Hit, Level, QueryType
from rayweave.graph.names import name_ngrams, normalize_name, variants
from rayweave.graph.schema import NodeLabel, RelType, node_key
from rayweave.graph.store import GraphStore

MAX_PATHS_PER_HIT = 3
ENTITY_TARGETS_PER_ENTITY = 25
RELATED_ROWS_PER_SEED = 40
MENTIONS_MAX_DF = 50


def parse_query_type(value: str | QueryType | None) -> QueryType:
    """`None` is GENERAL; anything else must name a `QueryType` (hyphens and case are forgiven)."""
    if value is None:
        return QueryType.GENERAL
    if isinstance(value, QueryType):
        return value
    key = str(value).strip().lower().replace("_", "-").replace(" ", "-")
    try:
        return QueryType(key)
    except ValueError:
        valid = ", ".join(q.value for q in QueryType)
        raise ConfigError(f"unknown query type {value!r}; valid: {valid}") from None


@dataclass(frozen=True, slots=True, kw_only=True)
class TraversalProfile:
    """How much each traversal contributes for one query type (0 disables it)."""

    parent: float = 0.0
    children: float = 0.0
    sequence: float = 0.0
    sequence_depth: int | None = None  # None: GraphSettings.expand_depth
    examples: float = 0.0
    definitions: float = 0.0
    references: float = 0.0
    solutions: float = 0.0
    related: float = 0.0
    bridge: float = 0.0
    entity: float = 0.0
    entity_rels: Mapping[RelType, float] = field(
        default_factory=lambda: {RelType.EXPLAINS: 1.0, RelType.MENTIONS: 0.3}
    )
    entity_expand: bool | None = None  # None: GraphSettings.expand_entities


PROFILES: Mapping[QueryType, TraversalProfile] = {
    # Steps come in sequence, and an API's usage examples show how.
    QueryType.HOW_TO: TraversalProfile(
        parent=0.4,
        children=0.3,
        sequence=0.8,
        sequence_depth=2,
        examples=0.7,
        entity=0.5,
        entity_rels={RelType.EXPLAINS: 1.0, RelType.DEFINES: 0.6, RelType.MENTIONS: 0.3},
    ),
    # Concept explanations and the context a definition sits in.
    QueryType.WHAT_IS: TraversalProfile(
        parent=0.6,
        sequence=0.2,
        entity=1.0,
        entity_expand=False,
        entity_rels={RelType.EXPLAINS: 1.0, RelType.DEFINES: 0.8, RelType.MENTIONS: 0.2},
    ),
    # Explanations that connect concepts.
    QueryType.WHY: TraversalProfile(
        parent=0.4,
        sequence=0.4,
        related=0.7,
        entity=0.8,
        entity_expand=True,
        entity_rels={RelType.EXPLAINS: 1.0, RelType.MENTIONS: 0.3},
    ),
    # Error-solution pairs first.
    QueryType.ERROR: TraversalProfile(
        parent=0.3,
        sequence=0.5,
        solutions=1.0,
        entity=1.0,
        entity_expand=False,
        entity_rels={RelType.SOLVES: 1.0, RelType.EXPLAINS: 0.6, RelType.MENTIONS: 0.3},
    ),
    # Definitions, usages and references of symbols.
    QueryType.CODE: TraversalProfile(
        parent=0.5,
        definitions=1.0,
        examples=0.7,
        references=0.6,
        entity=0.8,
        entity_expand=False,
        entity_rels={RelType.DEFINES: 1.0, RelType.USES: 0.5, RelType.EXPLAINS: 0.6},
    ),
    # Both sides of a comparison, and the bridge between documents.
    QueryType.COMPARISON: TraversalProfile(parent=0.3, bridge=0.8, entity=1.0),
    QueryType.MULTI_HOP: TraversalProfile(parent=0.3, bridge=1.0, entity=0.8),
    QueryType.GENERAL: TraversalProfile(parent=0.4, sequence=0.3, bridge=0.5, entity=0.6),
}


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
    branches: list[str] = []
    ret = "RETURN t, kind, rels, via, via_name, strength"
    if profile.parent > 0:
        branches.append(
            "WITH c MATCH (t)-[:HAS_CHILD]->(c) "
            f"WITH t, 'parent' AS kind, ['HAS_CHILD'] AS rels, null AS via, null AS via_name, 1.0 AS strength {ret}"
        )
    if profile.children > 0:
        branches.append(
            "WITH c MATCH (c)-[:HAS_CHILD]->(t) "
            f"WITH t, 'child' AS kind, ['HAS_CHILD'] AS rels, null AS via, null AS via_name, "
            f"1.0 / (1.0 + coalesce(t.position, 0)) AS strength {ret}"
        )
    if profile.sequence > 0 and depth > 0:
        branches.append(
            f"WITH c MATCH p = (c)-[:NEXT*1..{depth}]-(t) "
            "WHERE coalesce(t.parent_id, '') = coalesce(c.parent_id, '') "
            f"WITH t, 'sequence' AS kind, [r IN relationships(p) | type(r)] AS rels, null AS via, "
            f"null AS via_name, 1.0 / length(p) AS strength {ret}"
        )
    if profile.examples > 0:
        branches.append(
            "WITH c MATCH (c)-[:DEFINES]->(e:Entity)<-[u:USES]-(t) "
            "WITH t, 'example' AS kind, ['DEFINES', 'USES'] AS rels, e.id AS via, e.name AS via_name, "
            f"u.confidence AS strength {ret} ORDER BY strength DESC LIMIT {RELATED_ROWS_PER_SEED}"
        )
    if profile.definitions > 0:
        branches.append(
            "WITH c MATCH (c)-[u:USES]->(e:Entity)<-[d:DEFINES]-(t) "
            "WITH t, 'definition' AS kind, ['USES', 'DEFINES'] AS rels, e.id AS via, e.name AS via_name, "
            f"u.confidence * d.confidence AS strength {ret}"
        )
    if profile.references > 0:
        branches.append(
            "WITH c MATCH (c)-[r:REFERENCES]-(t) WHERE NOT t:Message "
            "WITH t, 'reference' AS kind, ['REFERENCES'] AS rels, null AS via, null AS via_name, "
            f"r.confidence AS strength {ret}"
        )
    if profile.solutions > 0:
        branches.append(
            "WITH c MATCH (c)-[:MENTIONS|SOLVES]->(e:Entity {kind: 'error'})<-[s:SOLVES]-(t) "
            "WITH t, 'solution' AS kind, ['MENTIONS', 'SOLVES'] AS rels, e.id AS via, e.name AS via_name, "
            f"s.confidence AS strength {ret}"
        )
    if profile.related > 0:
        branches.append(
            "WITH c MATCH (c)-[m:MENTIONS]->(e:Entity)-[r:RELATED_TO]-(:Entity)<-[x:EXPLAINS]-(t) "
            "WITH t, 'related' AS kind, ['MENTIONS', 'RELATED_TO', 'EXPLAINS'] AS rels, e.id AS via, "
            "e.name AS via_name, m.confidence * r.weight * x.confidence AS strength "
            f"{ret} ORDER BY strength DESC LIMIT {RELATED_ROWS_PER_SEED}"
        )
    if not branches or not seeds:
        return None
    union = " UNION ALL ".join(branches)
    text = (
        f"UNWIND $seeds AS s {_resolve_seed('s', seeds)} "
        f"CALL {{ {union} }} "
        "RETURN s.id AS seed, coalesce(c.doc_id, c.id) AS seed_doc, kind, rels, via, via_name, strength, "
        f"{_node('t')}"
    )
    return CypherQuery(text=text, params={"seeds": _seed_rows(ns, seeds)})


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryForm:
    """A normalised name the query contains, with its token span (for longest-match)."""

    form: str
    start: int
    length: int
    exact: bool


def query_forms(text: str, max_ngram: int, names: Iterable[str] = ()) -> list[QueryForm]:
    """Every n-gram of the query (and its singular), plus explicitly given names (span -1)."""
    out: dict[str, QueryForm] = {}
    for start, length, norm in name_ngrams(text, max_ngram):
        for i, form in enumerate(variants(norm)):
            old = out.get(form)
            cand = QueryForm(form=form, start=start, length=length, exact=i == 0)
            if old is None or (cand.length, cand.exact) > (old.length, old.exact):
                out[form] = cand
    for name in names:
        norm = normalize_name(name)
        for i, form in enumerate(variants(norm)):
            out[form] = QueryForm(form=form, start=-1, length=len(form.split()), exact=i == 0)
    return list(out.values())


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
            "WITH t, n AS hub, type(x) AS xtype, x.confidence AS xc, x.weight AS xw, r.weight AS rw "
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
        "WITH u, c1, c2, reduce(w = 1.0, r IN relationships(p) | w * coalesce(r.weight, 0.5)) AS pw, "
        "[x IN nodes(p) | x.id] AS ids "
        "MATCH (c2)<-[x:EXPLAINS]-(t) "
        "WITH u, coalesce(t.dkey, t.key) AS dkey, c1, c2, pw * x.confidence AS w, ids "
        "MATCH (d:Document {key: dkey}) "
        "WHERE NOT EXISTS { MATCH (u)-[:VIEWED]->(d) } "
        "WITH d, sum(w) AS score, count(DISTINCT c2) AS concepts, collect(ids)[0] AS path "
        "RETURN d.id AS tid, 'Document' AS tlabel, d.id AS tdoc, d.chunk_id AS tchunk, d.ckey AS tkey, "
        "d.text AS ttext, d.title AS ttitle, d.section_path AS tpath, d.source AS tsource, "
        "score, concepts, path "
        f"ORDER BY score DESC, tid LIMIT {int(limit)}"
    )
    return CypherQuery(text=text, params={"ukey": node_key(ns, user_id)})


# -- scoring (pure) --------------------------------------------------------------------------


def idf(df: int) -> float:
    """Rarity damping of an entity mentioned by `df` chunks: 1 for a unique one, ~0.3 at df=10."""
    return 1.0 / (1.0 + math.log(max(1, int(df))))


def normalize_seeds(seeds: Sequence[Seed]) -> list[Seed]:
    """Scores divided by the largest (non-positive maxima give every seed 1.0); duplicates merged."""
    best: dict[str, float] = {}
    for s in seeds:
        best[s.chunk_id] = max(best.get(s.chunk_id, float("-inf")), s.score)
    top = max(best.values(), default=0.0)
    if top <= 0:
        return [Seed(chunk_id=k, score=1.0) for k in best]
    return [Seed(chunk_id=k, score=max(0.0, v / top)) for k, v in best.items()]


@dataclass(slots=True)
class _Node:
    row: Mapping[str, Any]
    score: float = 0.0
    paths: list[GraphPath] = field(default_factory=list)
    kinds: set[str] = field(default_factory=set)

    @property
    def label(self) -> str:
        return str(self.row["tlabel"])

    @property
    def hit_id(self) -> str:
        if self.label == NodeLabel.DOCUMENT.value:
            return str(self.row.get("tchunk") or self.row["tid"])
        return str(self.row["tid"])


class ScoreBoard:
    """Accumulates path contributions per node: scores add up (several paths to a node are more
    evidence), the strongest paths are kept as the justification."""

    def __init__(self, exclude: Iterable[str] = ()) -> None:
        self._nodes: dict[tuple[str, str], _Node] = {}
        self._exclude = set(exclude)
        self._seed_docs: set[str] = set()

    def note_seed_docs(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Remember the documents of the seeds (rows with a `seed_doc` column)."""
        self._seed_docs.update(str(r["seed_doc"]) for r in rows if r.get("seed_doc") is not None)

    def add(self, row: Mapping[str, Any], score: float, path: GraphPath, kind: str) -> None:
        if score <= 0 or row.get("tid") is None:
            return
        key = (str(row["tlabel"]), str(row["tid"]))
        node = self._nodes.get(key)
        if node is None:
            node = self._nodes[key] = _Node(row=row)
        if node.hit_id in self._exclude or str(row["tid"]) in self._exclude:
            return
        node.score += score
        node.kinds.add(kind)
        node.paths.append(path)

    def nodes(self) -> list[_Node]:
        return [n for n in self._nodes.values() if n.score > 0]

    def hits(self, limit: int) -> list[Hit]:
        """Best-first hits.

        A Document node without a summary chunk only stands for its chunks: its score folds
        into its best chunk among the hits, and it is dropped when a seed is one of its chunks.
        """
        nodes = self.nodes()
        chunks_by_doc: dict[str, list[_Node]] = defaultdict(list)
        for n in nodes:
            if n.label != NodeLabel.DOCUMENT.value:
                chunks_by_doc[str(n.row["tdoc"])].append(n)
        kept: list[_Node] = []
        for n in nodes:
            proxy = n.label == NodeLabel.DOCUMENT.value and not n.row.get("tchunk")
            if proxy and str(n.row["tid"]) in self._seed_docs:
                continue
            if proxy and chunks_by_doc.get(str(n.row["tid"])):
                best = max(chunks_by_doc[str(n.row["tid"])], key=lambda x: (x.score, x.hit_id))
                best.score += n.score
                best.paths.extend(n.paths)
                best.kinds |= n.kinds
            else:
                kept.append(n)
        kept.sort(key=lambda n: (-n.score, n.hit_id))
        return [_to_hit(n) for n in kept[:limit]]


_LEVELS = {
    NodeLabel.DOCUMENT.value: Level.DOCUMENT,
    NodeLabel.SECTION.value: Level.SECTION,
    NodeLabel.PROPOSITION.value: Level.PROPOSITION,
}


def _to_hit(node: _Node) -> Hit:
    row = node.row
    label = node.label
    level = _LEVELS.get(label, Level.PROPOSITION)
    paths = sorted(node.paths, key=lambda p: (-p.score, p.nodes))[:MAX_PATHS_PER_HIT]
    text = row.get("ttext") or ""
    if not text and label == NodeLabel.DOCUMENT.value:
        text = row.get("ttitle") or ""
    return Hit(
        id=node.hit_id,
        doc_id=str(row["tdoc"]),
        text=str(text),
        score=round(node.score, 6),
        level=level,
        source=str(row.get("tsource") or ""),
        title=str(row.get("ttitle") or ""),
        section_path=tuple(row.get("tpath") or ()),
        retrievers=("graph",),
        paths=tuple(paths),
        metadata={"graph_kinds": sorted(node.kinds), "graph_node": label},
    )


def score_neighbourhood(
    rows: Iterable[Mapping[str, Any]],
    seeds: Mapping[str, float],
    profile: TraversalProfile,
    board: ScoreBoard,
) -> None:
    rows = list(rows)
    board.note_seed_docs(rows)
    weights = {
        "parent": profile.parent,
        "child": profile.children,
        "sequence": profile.sequence,
        "example": profile.examples,
        "definition": profile.definitions,
        "reference": profile.references,
        "solution": profile.solutions,
        "related": profile.related,
    }
    for r in rows:
        w = weights.get(str(r["kind"]), 0.0)
        strength = float(r["strength"] or 0.0)
        score = seeds.get(str(r["seed"]), 0.0) * w * strength
        nodes = (str(r["seed"]), *((str(r["via"]),) if r["via"] else ()), str(r["tid"]))
        board.add(
            r,
            score,
            GraphPath(nodes=nodes, relationships=tuple(r["rels"]), score=round(score, 6)),
            str(r["kind"]),
        )


def score_entity_search(
    rows: Iterable[Mapping[str, Any]],
    forms: Sequence[QueryForm],
    profile: TraversalProfile,
    settings: GraphSettings,
    board: ScoreBoard,
) -> None:
    """Entity matches are weighted by specificity (multi-word 1.0, one word 0.6, singular variant
    x0.9) and rarity; a match inside a longer matched name ("magazine" in "Arthur's Magazine")
    is dropped."""
    rows = list(rows)
    by_form = {f.form: f for f in forms}
    matched_spans = [
        (by_form[r["via_form"]].start, by_form[r["via_form"]].length)
        for r in rows
        if r["via_form"] in by_form
    ]

    def inside_longer(f: QueryForm) -> bool:
        if f.start < 0:
            return False
        end = f.start + f.length
        return any(
            s <= f.start and end <= s + n and n > f.length for s, n in matched_spans if s >= 0
        )

    for r in rows:
        form = by_form.get(str(r["via_form"]))
        if form is None or inside_longer(form):
            continue
        specificity = (1.0 if form.length > 1 else 0.6) * (1.0 if form.exact else 0.9)
        match = specificity * idf(int(r["edf"]))
        rel_w = profile.entity_rels.get(RelType(str(r["xtype"])), 0.0)
        expanded = r["hid"] != r["eid"]
        hop = settings.hop_decay * float(r["rw"] or 0.0) if expanded else 1.0
        edge = float(r["xc"] or 0.0) * (
            float(r["xw"] or 0.0) if r["xtype"] == RelType.MENTIONS.value else 1.0
        )
        score = profile.entity * match * rel_w * hop * edge
        nodes = (str(r["eid"]), *((str(r["hid"]),) if expanded else ()), str(r["tid"]))
        rels = ((RelType.RELATED_TO.value,) if expanded else ()) + (str(r["xtype"]),)
        board.add(
            r, score, GraphPath(nodes=nodes, relationships=rels, score=round(score, 6)), "entity"
        )


@dataclass(slots=True)
class _BridgeState:
    score: float
    path: GraphPath
    level: Level | None = None


def score_bridge_hop(
    rows: Iterable[Mapping[str, Any]],
    frontier: Mapping[str, _BridgeState],
    *,
    hop: int,
    weight: float,
    settings: GraphSettings,
    visited: set[str],
    board: ScoreBoard,
) -> dict[str, tuple[float, GraphPath, Mapping[str, Any]]]:
    """Spread frontier mass over one hop; returns the reached chunks (id -> score, best path, row).

    Each frontier chunk passes its mass through at most `max_entities_per_seed` of its rarest
    entities: score = mass x mention weight x mention confidence x idf(entity) x explains
    confidence x hop_decay^(hop-1).
    """
    rows = list(rows)
    if hop == 1:
        board.note_seed_docs(rows)
    per_seed: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        per_seed[str(r["seed"])].append(r)
    reached: dict[str, tuple[float, GraphPath, Mapping[str, Any]]] = {}
    decay = settings.hop_decay ** (hop - 1)
    for seed, seed_rows in per_seed.items():
        state = frontier.get(seed)
        if state is None:
            continue
        entity_rank, allowed = _rarest_entities(seed_rows, settings.max_entities_per_seed)
        for r in seed_rows:
            if str(r["eid"]) not in allowed:
                continue
            flow = state.score * entity_rank[str(r["eid"])] * float(r["xc"] or 0.0) * decay
            path = GraphPath(
                nodes=(*state.path.nodes, str(r["eid"]), str(r["tid"])),
                relationships=(
                    *state.path.relationships,
                    RelType.MENTIONS.value,
                    RelType.EXPLAINS.value,
                ),
                score=round(flow * weight, 6),
            )
            target = str(r["tid"])
            key = str(r["tkey"] or "")
            if target in visited:
                continue
            board.add(r, flow * weight, path, "bridge")
            if key:
                old = reached.get(key)
                total = flow + (old[0] if old else 0.0)
                best = path if old is None or path.score > old[1].score else old[1]
                reached[key] = (total, best, r)
    return reached


def _rarest_entities(
    seed_rows: Sequence[Mapping[str, Any]], limit: int
) -> tuple[dict[str, float], set[str]]:
    """A seed's entities ranked by idf x mention weight x confidence, and the `limit` best."""
    rank: dict[str, float] = {}
    for r in seed_rows:
        rank[str(r["eid"])] = idf(int(r["edf"])) * float(r["mw"] or 0.0) * float(r["mc"] or 0.0)
    return rank, set(sorted(rank, key=lambda e: (-rank[e], e))[:limit])


def bridge_links(rows: Iterable[Mapping[str, Any]], settings: GraphSettings) -> list[Hit]:
    """One hit per (seed, target) of a first bridge hop: the documents each seed chunk links to
    (it MENTIONS one of its `max_entities_per_seed` rarest entities, which the target EXPLAINS).

    Unlike the bridge score board, nothing is summed over seeds or hidden behind a seed: fusion
    asks "what does the leading hit link to?", and the answer must not depend on the other seeds.
    """
    per_seed: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        per_seed[str(r["seed"])].append(r)
    best: dict[tuple[str, str], _Node] = {}
    for seed, seed_rows in per_seed.items():
        entity_rank, allowed = _rarest_entities(seed_rows, settings.max_entities_per_seed)
        for r in seed_rows:
            eid = str(r["eid"])
            if eid not in allowed or r.get("tid") is None:
                continue
            score = entity_rank[eid] * float(r["xc"] or 0.0)
            path = GraphPath(
                nodes=(seed, eid, str(r["tid"])),
                relationships=(RelType.MENTIONS.value, RelType.EXPLAINS.value),
                score=round(score, 6),
            )
            key = (seed, str(r["tdoc"]))
            node = best.get(key)
            if node is None or score > node.score:
                best[key] = _Node(row=r, score=score, paths=[path], kinds={"link"})
    nodes = sorted(best.values(), key=lambda n: (-n.score, n.hit_id, n.paths[0].nodes))
    return [_to_hit(n) for n in nodes]


def blend_conversation(
    vector_scores: Mapping[str, float],
    concept_strength: Mapping[str, float],
    *,
    vector_weight: float,
    concept_weight: float,
) -> dict[str, float]:
    """Seed 003's conversation-aware relevance: `vector_weight * vector + concept_weight * concept`,
    each normalised by its maximum over the candidates."""
    vmax = max(vector_scores.values(), default=0.0)
    cmax = max(concept_strength.values(), default=0.0)
    out = {}
    for doc, v in vector_scores.items():
        vn = v / vmax if vmax > 0 else 0.0
        cn = concept_strength.get(doc, 0.0) / cmax if cmax > 0 else 0.0
        out[doc] = vector_weight * vn + concept_weight * cn
    return out


# -- executor ------------------------------------------------------------------------------


class GraphTraversal:
    """Runs the traversals against a `GraphStore` (one namespace)."""

    def __init__(
        self, store: GraphStore, settings: GraphSettings | None = None, *, workers: int = 3
    ) -> None:
        self.store = store
        self.settings = settings or store.settings
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="graph-traversal")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _run(self, query: CypherQuery | None, op: str) -> list[dict[str, Any]]:
        if query is None:
            return []
        return self.store.read(query.text, query.params, op=op)

    # individual traversals

    def expand(
        self,
        seeds: Sequence[Seed | Hit],
        profile: TraversalProfile | None = None,
        *,
        limit: int | None = None,
    ) -> list[Hit]:
        """Seed 000's chunk expansion: parent, previous/next siblings and children (by default)."""
        prof = profile or TraversalProfile(parent=0.6, sequence=0.8, children=0.4)
        norm = normalize_seeds(_as_seeds(seeds))
        board = ScoreBoard(exclude=(s.chunk_id for s in norm))
        rows = self._run(neighbourhood_query(self.store.ns, norm, prof, self.settings), "expand")
        score_neighbourhood(rows, {s.chunk_id: s.score for s in norm}, prof, board)
        return board.hits(limit or self.settings.max_results)

    def entity_search(
        self,
        query_text: str,
        *,
        entity_names: Sequence[str] = (),
        profile: TraversalProfile | None = None,
        limit: int | None = None,
    ) -> list[Hit]:
        """Chunks that explain (or solve, define, mention) the entities the query names."""
        prof = profile or replace(PROFILES[QueryType.WHAT_IS], entity=1.0)
        board = ScoreBoard()
        self._entity_into(board, query_text, entity_names, prof)
        return board.hits(limit or self.settings.max_results)

    def bridge(
        self, seeds: Sequence[Seed | Hit], *, limit: int | None = None, weight: float = 1.0
    ) -> list[Hit]:
        """Multi-hop bridge search from the seeds (see module docstring)."""
        norm = normalize_seeds(_as_seeds(seeds))
        board = ScoreBoard(exclude=(s.chunk_id for s in norm))
        self._bridge_into(board, norm, weight)
        return board.hits(limit or self.settings.max_results)

    # the profile-driven search

    def search(
        self,
        *,
        query_text: str,
        seeds: Sequence[Seed | Hit] = (),
        query_type: str | QueryType | None = None,
        entity_names: Sequence[str] = (),
        limit: int | None = None,
    ) -> list[Hit]:
        """Everything the query type's profile asks for, merged on one score board.

        Neighbourhood, entity search and the first bridge hop run concurrently; further bridge
        hops follow. Seeds themselves are not returned (the caller already has them).
        """
        return self.search_with_links(
            query_text=query_text,
            seeds=seeds,
            query_type=query_type,
            entity_names=entity_names,
            limit=limit,
        )[0]

    def search_with_links(
        self,
        *,
        query_text: str,
        seeds: Sequence[Seed | Hit] = (),
        query_type: str | QueryType | None = None,
        entity_names: Sequence[str] = (),
        limit: int | None = None,
    ) -> tuple[list[Hit], list[Hit]]:
        """`search`'s hits, plus the first bridge hop's `bridge_links` (empty when the query
        type's profile does not bridge)."""
        prof = PROFILES[parse_query_type(query_type)]
        norm = normalize_seeds(_as_seeds(seeds))
        board = ScoreBoard(exclude=(s.chunk_id for s in norm))
        seed_scores = {s.chunk_id: s.score for s in norm}
        futures = []
        neighbourhood = neighbourhood_query(self.store.ns, norm, prof, self.settings)
        if neighbourhood is not None:
            futures.append(
                (
                    self._pool.submit(self._run, neighbourhood, "search"),
                    lambda rows: score_neighbourhood(rows, seed_scores, prof, board),
                )
            )
        entity_rows = None
        if prof.entity > 0 and (query_text.strip() or entity_names):
            entity_rows = self._pool.submit(self._entity_rows, query_text, entity_names, prof)
        links: list[Hit] = []
        if prof.bridge > 0 and norm:
            links = self._bridge_into(board, norm, prof.bridge)
        for future, apply in futures:
            apply(future.result())
        if entity_rows is not None:
            forms, rows = entity_rows.result()
            score_entity_search(rows, forms, prof, self.settings, board)
        return board.hits(limit or self.settings.max_results), links

    # conversation-aware (seed 003)

    def conversation_rerank(
        self,
        hits: Sequence[Hit],
        conversation_id: str,
        *,
        vector_weight: float | None = None,
        concept_weight: float | None = None,
    ) -> list[Hit]:
        """Re-score hits: documents that explain concepts mentioned earlier in the conversation
        rise (`vector_weight * vector + concept_weight * concept`, defaults from settings)."""
        if not hits:
            return []
        vw = self.settings.vector_weight if vector_weight is None else vector_weight
        cw = self.settings.concept_weight if concept_weight is None else concept_weight
        rows = self._run(
            conversation_concepts_query(self.store.ns, conversation_id, [h.doc_id for h in hits]),
            "conversation_rerank",
        )
        strength = {str(r["doc"]): float(r["strength"] or 0.0) for r in rows}
        concepts = {str(r["doc"]): list(r["entities"]) for r in rows}
        blended = blend_conversation(
            {h.id: h.score for h in hits},
            {h.id: strength.get(h.doc_id, 0.0) for h in hits},
            vector_weight=vw,
            concept_weight=cw,
        )
        cmax = max(strength.values(), default=0.0)
        out = []
        for h in hits:
            cn = strength.get(h.doc_id, 0.0) / cmax if cmax > 0 else 0.0
            meta = {**h.metadata, "vector_score": h.score, "concept_score": round(cn, 6)}
            paths = h.paths
            if concepts.get(h.doc_id):
                paths = (
                    *paths,
                    GraphPath(
                        nodes=(conversation_id, *concepts[h.doc_id][:1], h.doc_id),
                        relationships=(
                            RelType.PART_OF.value,
                            RelType.MENTIONS.value,
                            RelType.EXPLAINS.value,
                        ),
                        score=round(cw * cn, 6),
                    ),
                )
            out.append(replace(h, score=round(blended[h.id], 6), metadata=meta, paths=paths))
        out.sort(key=lambda h: (-h.score, h.id))
        return out

    def discover(self, user_id: str, *, limit: int = 3) -> list[Hit]:
        """Unseen documents explaining concepts related to what the user asked about."""
        rows = self._run(
            discovery_query(self.store.ns, user_id, self.settings.discovery_max_hops, limit),
            "discover",
        )
        hits = []
        for r in rows:
            node = _Node(row=r, score=float(r["score"]))
            path = [str(x) for x in r["path"] or ()]
            node.paths.append(
                GraphPath(
                    nodes=(user_id, *path, str(r["tid"])),
                    relationships=(
                        RelType.CREATED.value,
                        RelType.MENTIONS.value,
                        *([RelType.RELATED_TO.value] * max(0, len(path) - 1)),
                        RelType.EXPLAINS.value,
                    ),
                    score=round(float(r["score"]), 6),
                )
            )
            node.kinds.add("discovery")
            hits.append(_to_hit(node))
        return hits

    # internals

    def _entity_rows(
        self, query_text: str, entity_names: Sequence[str], prof: TraversalProfile
    ) -> tuple[list[QueryForm], list[dict[str, Any]]]:
        forms = query_forms(query_text, self.settings.gazetteer_max_ngram, entity_names)
        expand = self.settings.expand_entities if prof.entity_expand is None else prof.entity_expand
        rows = self._run(
            entity_search_query(self.store.ns, forms, prof.entity_rels, expand), "entity_search"
        )
        return forms, rows

    def _entity_into(
        self,
        board: ScoreBoard,
        query_text: str,
        entity_names: Sequence[str],
        prof: TraversalProfile,
    ) -> None:
        forms, rows = self._entity_rows(query_text, entity_names, prof)
        score_entity_search(rows, forms, prof, self.settings, board)

    def _bridge_into(self, board: ScoreBoard, seeds: Sequence[Seed], weight: float) -> list[Hit]:
        """Bridge hops onto `board`; returns the first hop's `bridge_links`."""
        links: list[Hit] = []
        frontier = {
            s.chunk_id: _BridgeState(
                score=s.score, path=GraphPath(nodes=(s.chunk_id,), relationships=())
            )
            for s in seeds
        }
        visited = set(frontier)
        for hop in range(1, self.settings.max_hops + 1):
            frontier_seeds = [
                Seed(chunk_id=k, score=v.score, level=v.level) for k, v in frontier.items()
            ]
            rows = self._run(bridge_hop_query(self.store.ns, frontier_seeds), "bridge")
            if hop == 1:
                links = bridge_links(rows, self.settings)
            reached = score_bridge_hop(
                rows,
                frontier,
                hop=hop,
                weight=weight,
                settings=self.settings,
                visited=visited,
                board=board,
            )
            if not reached or hop == self.settings.max_hops:
                break
            beam = sorted(reached.items(), key=lambda kv: (-kv[1][0], kv[0]))[
                : self.settings.beam_width
            ]
            prefix = f"{self.store.ns}:"
            frontier = {}
            for key, (score, path, row) in beam:
                chunk_id = key[len(prefix) :] if key.startswith(prefix) else key
                if row["tlabel"] == NodeLabel.DOCUMENT.value and not row.get("tchunk"):
                    continue  # a document without a summary chunk mentions nothing itself
                frontier[chunk_id] = _BridgeState(
                    score=score, path=path, level=_LEVELS.get(str(row["tlabel"]))
                )
                visited.add(str(row["tid"]))
            if not frontier:
                break
        return links


def _as_seeds(items: Sequence[Seed | Hit]) -> list[Seed]:
    return [s if isinstance(s, Seed) else Seed.from_hit(s) for s in items]
