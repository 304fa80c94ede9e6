"""`GraphStore`: the knowledge graph over the official `neo4j` driver (Cypher over Bolt).

Production Neo4j and the embedded ArcadeDB server share this one code path, so every query
sticks to the openCypher both accept: UNWIND + MERGE batches, no APOC, no Neo4j-only DDL.
Labels and relationship types are interpolated only from `schema` enums; every value is a
query parameter.

One store instance is bound to one namespace (`for_namespace` gives siblings that share the
driver). Writes are idempotent: MERGE on keys, and an edge written again keeps the larger of its
old and new weight/confidence/count, so re-running a batch changes no counts. Replace a changed
document with `delete_document` first.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, LiteralString, TypeVar, cast

import neo4j
from neo4j.exceptions import (
    ConstraintError,
    DriverError,
    Neo4jError,
    ServiceUnavailable,
    SessionExpired,
    TransientError,
)

from rayweave.cluster.errors import GraphStoreError, InputError, NotFoundError
from rayweave.cluster.services import GraphConnection, resolve_graph_connection
from rayweave.cluster.settings import GraphSettings, Settings
from rayweave.cluster.types import Chunk, Document, Entity, Level
from rayweave.graph.names import name_ngrams, normalize_name, unique, variants
from rayweave.graph.schema import (
    CHUNK_LABELS,
    ENTITY_ANCHORS,
    INFERRED_SOURCES,
    EdgeRow,
    EdgeSource,
    EntityRow,
    GraphBatch,
    NodeLabel,
    RelType,
    TopicRow,
    check_namespace,
    label_for_level,
    node_key,
    schema_statements,
)

T = TypeVar("T")
WriteMode = Literal["max", "replace"]
_ANCHOR_PATTERN = "|".join(r.value for r in ENTITY_ANCHORS)
# An entity lives while something introduces it. A gazetteer mention only links text to an
# entity that exists already, so it must not keep one alive: otherwise what a clean ingest of
# the same corpus would hold depends on which documents came and went before.
_INTRODUCED = f"EXISTS {{ MATCH (e)<-[r:{_ANCHOR_PATTERN}]-() WHERE r.source <> '{EdgeSource.GAZETTEER.value}' }}"
_RETRIES = 4
# One node per namespace whose `value` changes on every write (not a NodeLabel: it is bookkeeping,
# not part of the graph, and counts leave it out).
STAMP_LABEL = "GraphStamp"
_MAX_NGRAM = 6


@dataclass(frozen=True, slots=True, kw_only=True)
class GraphCounts:
    nodes: dict[str, int]
    relationships: dict[str, int]

    def node(self, label: NodeLabel) -> int:
        return self.nodes.get(label.value, 0)

    def rel(self, rel: RelType) -> int:
        return self.relationships.get(rel.value, 0)


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteReport:
    entities: int = 0
    topics: int = 0
    edges: int = 0
    skipped_edges: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteReport:
    doc_id: str
    chunks: int
    entities: int
    aliases: int
    topics: int


@dataclass(frozen=True, slots=True, kw_only=True)
class PruneReport:
    edges: int
    entities: int
    aliases: int
    topics: int
    chunks: int = 0
    """Section/Proposition nodes whose Document was gone."""
    conversations: int = 0
    messages: int = 0
    users: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class EntityMatch:
    """An entity found through an alias: `via` is the normalised form that matched."""

    id: str
    name: str
    kind: str
    df: int
    via: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageRecord:
    conversation_id: str
    message_id: str
    mentioned_entity_ids: tuple[str, ...]
    referenced_doc_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ViewRecord:
    user_id: str
    doc_id: str
    view_count: int
    first_viewed_at: float
    last_viewed_at: float


@dataclass(slots=True)
class _Shared:
    driver: neo4j.Driver
    schema_ready: bool = False
    refs: int = 1


def _batches(rows: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


class GraphStore:
    """The graph of one namespace (see module docstring)."""

    def __init__(
        self,
        connection: GraphConnection,
        settings: GraphSettings,
        *,
        namespace: str = "default",
        _shared: _Shared | None = None,
    ) -> None:
        self.connection = connection
        self.settings = settings
        self.ns = check_namespace(namespace)
        if _shared is None:
            try:
                driver = neo4j.GraphDatabase.driver(
                    connection.uri,
                    auth=(connection.user, connection.password),
                    connection_timeout=min(settings.timeout_s, 15.0),
                    max_connection_pool_size=32,
                )
            except (DriverError, ValueError) as exc:
                raise GraphStoreError(
                    f"cannot create a graph driver for {connection.uri}: {exc}"
                ) from exc
            _shared = _Shared(driver=driver)
        else:
            _shared.refs += 1
        self._shared = _shared
        self._closed = False

    @classmethod
    def open(cls, settings: Settings, *, namespace: str = "default") -> GraphStore:
        """Connect as configured (starting the embedded server if needed) and ensure the schema."""
        store = cls(resolve_graph_connection(settings), settings.graph, namespace=namespace)
        store.ensure_schema()
        return store

    def for_namespace(self, namespace: str) -> GraphStore:
        """A store over another namespace sharing this one's driver."""
        return GraphStore(self.connection, self.settings, namespace=namespace, _shared=self._shared)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._shared.refs -= 1
        if self._shared.refs == 0:
            self._shared.driver.close()

    def __enter__(self) -> GraphStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def database(self) -> str:
        return self.connection.database

    def key(self, node_id: str) -> str:
        return node_key(self.ns, node_id)

    # -- execution -----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _errors(self, op: str) -> Iterator[None]:
        try:
            yield
        except (ServiceUnavailable, SessionExpired) as exc:
            raise GraphStoreError(
                f"graph {op}: server {self.connection.uri} is unreachable: {exc}"
            ) from exc
        except Neo4jError as exc:
            raise GraphStoreError(f"graph {op} failed: {exc.code}: {exc.message}") from exc
        except DriverError as exc:
            raise GraphStoreError(f"graph {op} failed: {exc}") from exc

    def _timed(self, work: Callable[..., T]) -> Callable[..., T]:
        """Give a transaction function the configured per-query timeout."""
        return neo4j.unit_of_work(timeout=self.settings.timeout_s)(work)

    def read(
        self, text: str, params: Mapping[str, Any] | None = None, *, op: str = "read"
    ) -> list[dict[str, Any]]:
        """Run one read query in the store's namespace (`$ns` is always bound).

        An auto-commit query: RUN and PULL travel in one round trip, where a transaction
        function adds BEGIN and COMMIT (measured 1.4 vs 2.2 ms for `RETURN 1`). A dropped
        connection is retried once.
        """
        bound = {"ns": self.ns, **(params or {})}
        query = neo4j.Query(_q(text), timeout=self.settings.timeout_s)
        for attempt in range(2):
            try:
                with (
                    self._errors(op),
                    self._shared.driver.session(
                        database=self.database, default_access_mode=neo4j.READ_ACCESS
                    ) as session,
                ):
                    return session.run(query, bound).data()
            except GraphStoreError as exc:
                if attempt == 1 or not isinstance(
                    exc.__cause__, ServiceUnavailable | SessionExpired
                ):
                    raise
        raise AssertionError("unreachable")

    def _write(self, op: str, work: Callable[[neo4j.ManagedTransaction], T]) -> T:
        """One write transaction; a concurrent MERGE that lost a uniqueness race is retried."""
        for attempt in range(_RETRIES):
            try:
                with (
                    self._errors(op),
                    self._shared.driver.session(database=self.database) as session,
                ):
                    return session.execute_write(self._timed(work))
            except GraphStoreError as exc:
                retriable = isinstance(exc.__cause__, ConstraintError | TransientError)
                if not retriable or attempt == _RETRIES - 1:
                    raise
                time.sleep(0.05 * (attempt + 1))
        raise AssertionError("unreachable")

    def write(
        self, text: str, params: Mapping[str, Any] | None = None, *, op: str = "write"
    ) -> list[dict[str, Any]]:
        bound = {"ns": self.ns, **(params or {})}
        query = _q(text)
        return self._write(op, lambda tx: [r.data() for r in tx.run(query, bound)])

    def _write_rows(
        self, text: str, rows: Sequence[Mapping[str, Any]], *, op: str, **params: Any
    ) -> int:
        """UNWIND `rows` in batches of `write_batch`; the query returns `n` (rows written)."""
        total = 0
        query = _q(text)
        for batch in _batches(rows, self.settings.write_batch):
            bound = {"ns": self.ns, "rows": list(batch), **params}

            def work(tx: neo4j.ManagedTransaction, bound: dict[str, Any] = bound) -> int:
                record = tx.run(query, bound).single()
                return int(record["n"]) if record is not None and record["n"] is not None else 0

            total += self._write(op, work)
        return total

    # -- schema --------------------------------------------------------------------------------

    def ensure_schema(self) -> None:
        """Create constraints and indexes if missing (idempotent, once per driver)."""
        if self._shared.schema_ready:
            return
        for statement in schema_statements():
            with (
                self._errors("schema"),
                self._shared.driver.session(database=self.database) as session,
            ):
                session.run(neo4j.Query(_q(statement), timeout=self.settings.timeout_s)).consume()
        self._shared.schema_ready = True

    # -- documents and chunks ------------------------------------------------------------------

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
        return self._write_rows(
            """
            UNWIND $rows AS r
            MERGE (d:Document {key: r.key})
            SET d.ns = $ns, d.id = r.id, d.title = r.title, d.source = r.source,
                d.content_type = r.content_type, d.language = r.language, d.content_hash = r.content_hash
            RETURN count(d) AS n
            """,
            rows,
            op="write_documents",
        )

    def write_chunks(
        self, chunks: Sequence[Chunk], mentions: Mapping[str, Sequence[Entity]] | None = None
    ) -> int:
        """Chunk nodes plus CHUNK_OF, HAS_CHILD (both directions' fields) and NEXT edges.

        A `Level.DOCUMENT` chunk is stored on its Document node. Structure edges are written
        whenever both ends exist, from whichever end arrives second, so batch order is free.
        `mentions` (an extractor's entities per chunk id) are kept on the chunk, so that the
        corpus pass can rebuild the entity layer from stored chunks alone.
        """
        mentions = mentions or {}
        by_label: dict[NodeLabel, list[dict[str, Any]]] = defaultdict(list)
        child_rows: list[dict[str, str]] = []
        next_rows: list[dict[str, str]] = []
        for c in chunks:
            label = label_for_level(c.level)
            ckey = self.key(c.id)
            row: dict[str, Any] = {
                "key": ckey,
                "dkey": self.key(c.doc_id),
                "doc_id": c.doc_id,
                "props": {
                    "ns": self.ns,
                    "id": c.id,
                    "doc_id": c.doc_id,
                    "dkey": self.key(c.doc_id),
                    "level": c.level.value,
                    "text": c.text,
                    "position": c.position,
                    "parent_id": c.parent_id,
                    "section_path": list(c.section_path),
                    "source": c.source,
                    "content_type": c.content_type.value,
                    "language": c.language,
                    "token_count": c.token_count,
                    "keywords": list(c.keywords),
                    "error_codes": list(c.error_codes),
                    "defined_symbols": list(c.defined_symbols),
                    "references": list(c.references),
                    "dependencies": list(c.dependencies),
                    "mentions": _encode_mentions(mentions.get(c.id, ())),
                },
                "title": c.title or None,
            }
            by_label[label].append(row)
            if c.parent_id:
                child_rows.append({"a": self.key(c.parent_id), "b": ckey})
            child_rows.extend({"a": ckey, "b": self.key(k)} for k in c.children_ids)
            if c.prev_id:
                next_rows.append({"a": self.key(c.prev_id), "b": ckey})
            if c.next_id:
                next_rows.append({"a": ckey, "b": self.key(c.next_id)})

        written = 0
        if by_label[NodeLabel.DOCUMENT]:
            written += self._write_rows(
                """
                UNWIND $rows AS r
                MERGE (d:Document {key: r.dkey})
                SET d.ns = $ns, d.id = r.doc_id, d.chunk_id = r.props.id, d.ckey = r.key,
                    d.text = r.props.text, d.level = 'document', d.section_path = r.props.section_path,
                    d.keywords = r.props.keywords, d.token_count = r.props.token_count,
                    d.mentions = r.props.mentions,
                    d.title = coalesce(r.title, d.title), d.source = coalesce(d.source, r.props.source),
                    d.content_type = coalesce(d.content_type, r.props.content_type)
                RETURN count(d) AS n
                """,
                by_label[NodeLabel.DOCUMENT],
                op="write_chunks",
            )
        for label in (NodeLabel.SECTION, NodeLabel.PROPOSITION):
            if not by_label[label]:
                continue
            written += self._write_rows(
                f"""
                UNWIND $rows AS r
                MERGE (c:{label.value} {{key: r.key}})
                SET c += r.props, c.title = r.title
                WITH c, r
                MERGE (d:Document {{key: r.dkey}})
                ON CREATE SET d.ns = $ns, d.id = r.doc_id
                MERGE (c)-[e:CHUNK_OF]->(d)
                ON CREATE SET e.weight = 1.0, e.confidence = 1.0, e.source = $source, e.count = 1
                RETURN count(c) AS n
                """,
                by_label[label],
                op="write_chunks",
                source=EdgeSource.STRUCTURE.value,
            )
        for rel, rows in ((RelType.HAS_CHILD, child_rows), (RelType.NEXT, next_rows)):
            if rows:
                self._write_rows(_link_chunks_query(rel), unique_rows(rows), op="write_chunks")
        self.touch()
        return written

    # -- entities, topics, edges ---------------------------------------------------------------

    def write_entities(self, entities: Sequence[EntityRow], *, mode: WriteMode = "max") -> int:
        """MERGE entities and their Alias nodes. `mode="max"` only adds (aliases are unioned, a
        specific kind replaces 'concept'); `"replace"` sets name, kind and aliases to these rows
        (the corpus pass, whose rows are the whole truth; `delete_stale` then drops the alias
        links they no longer list)."""
        _check_mode(mode)
        rows = []
        alias_rows: list[dict[str, str]] = []
        for e in entities:
            aliases = unique((normalize_name(e.name), *e.aliases))
            rows.append(
                {
                    "key": self.key(e.id),
                    "id": e.id,
                    "name": e.name,
                    "kind": e.kind,
                    "aliases": list(aliases),
                    "description": e.description or None,
                }
            )
            alias_rows.extend(
                {"akey": self.key(a), "norm": a, "ekey": self.key(e.id)} for a in aliases
            )
        n = self._write_rows(
            """
            UNWIND $rows AS r
            MERGE (e:Entity {key: r.key})
            ON CREATE SET e.ns = $ns, e.id = r.id, e.name = r.name, e.kind = r.kind, e.df = 0,
                          e.aliases = []
            SET e.description = coalesce(e.description, r.description)
            """
            + (
                "SET e.name = r.name, e.kind = r.kind, e.aliases = r.aliases"
                if mode == "replace"
                else """SET e.kind = CASE WHEN e.kind = 'concept' THEN r.kind ELSE e.kind END,
                e.aliases = e.aliases + [a IN r.aliases WHERE NOT a IN e.aliases]"""
            )
            + " RETURN count(e) AS n",
            rows,
            op="write_entities",
        )
        self._write_rows(
            """
            UNWIND $rows AS r
            MATCH (e:Entity {key: r.ekey})
            MERGE (a:Alias {key: r.akey})
            ON CREATE SET a.ns = $ns, a.id = r.norm, a.norm = r.norm
            MERGE (a)-[x:ALIAS_OF]->(e)
            ON CREATE SET x.weight = 1.0, x.confidence = 1.0, x.source = $source, x.count = 1
            RETURN count(x) AS n
            """,
            alias_rows,
            op="write_entities",
            source=EdgeSource.STRUCTURE.value,
        )
        return n

    def write_topics(self, topics: Sequence[TopicRow]) -> int:
        rows = [
            {"key": self.key(t.id), "id": t.id, "name": t.name, "keywords": list(t.keywords)}
            for t in topics
        ]
        return self._write_rows(
            """
            UNWIND $rows AS r
            MERGE (t:Topic {key: r.key})
            SET t.ns = $ns, t.id = r.id, t.name = r.name, t.keywords = r.keywords
            RETURN count(t) AS n
            """,
            rows,
            op="write_topics",
        )

    def write_edges(
        self, edges: Sequence[EdgeRow], *, mode: WriteMode = "max", run: str | None = None
    ) -> int:
        """MERGE edges; both ends must exist (rows whose ends are missing are not written).

        `mode="max"` keeps the larger of old and new weight/confidence/count (idempotent, and a
        second source can only strengthen an edge); `"replace"` overwrites (recomputed edges)
        and stamps each edge with `run`, which `delete_stale` keeps.
        """
        _check_mode(mode)
        groups: dict[
            tuple[RelType, NodeLabel, NodeLabel], dict[tuple[str, str], dict[str, Any]]
        ] = defaultdict(dict)
        for e in edges:
            row = {
                "s": self.key(e.src.id),
                "d": self.key(e.dst.id),
                "w": float(e.weight),
                "c": float(e.confidence),
                "src": e.source.value,
                "n": int(e.count),
                "props": dict(e.props),
            }
            group = groups[(e.rel, e.src.label, e.dst.label)]
            old = group.get((row["s"], row["d"]))
            if old is None or (row["c"], row["w"]) > (old["c"], old["w"]):
                group[(row["s"], row["d"])] = row
        written = 0
        for (rel, src, dst), rows in groups.items():
            written += self._write_rows(
                _merge_edges_query(rel, src, dst, mode),
                list(rows.values()),
                op="write_edges",
                run=run,
            )
            if rel is RelType.MENTIONS:
                self.refresh_entity_stats(sorted({r["d"] for r in rows.values()}), keys=True)
        return written

    def write_batch(self, batch: GraphBatch, *, mode: WriteMode = "max") -> WriteReport:
        """Entities and topics first, then the edges between them and already-written chunks."""
        entities = self.write_entities(batch.entities) if batch.entities else 0
        topics = self.write_topics(batch.topics) if batch.topics else 0
        edges = self.write_edges(batch.edges, mode=mode) if batch.edges else 0
        self.touch()
        distinct = len({(e.rel, e.src, e.dst) for e in batch.edges})
        return WriteReport(
            entities=entities, topics=topics, edges=edges, skipped_edges=distinct - edges
        )

    def refresh_entity_stats(
        self, entity_ids: Sequence[str] | None = None, *, keys: bool = False
    ) -> None:
        """Recompute `df` (how many chunks mention an entity), which traversals use as an IDF."""
        if entity_ids is None:
            self.write(
                """
                MATCH (e:Entity {ns: $ns})
                OPTIONAL MATCH (e)<-[m:MENTIONS]-()
                WITH e, count(m) AS df
                SET e.df = df
                """,
                op="refresh_entity_stats",
            )
            return
        rows = [{"key": i if keys else self.key(i)} for i in entity_ids]
        self._write_rows(
            """
            UNWIND $rows AS r
            MATCH (e:Entity {key: r.key})
            OPTIONAL MATCH (e)<-[m:MENTIONS]-()
            WITH e, count(m) AS df
            SET e.df = df
            RETURN count(e) AS n
            """,
            rows,
            op="refresh_entity_stats",
        )

    # -- removal -------------------------------------------------------------------------------

    def delete_stale(self, run: str, sources: Iterable[EdgeSource]) -> int:
        """Drop the edges of `sources` that the replace write stamped `run` did not write again,
        and alias links their entity no longer lists; returns how many edges went. Conversation
        and user edges are never of these sources, so they stay."""
        params = {"ns": self.ns, "run": run, "sources": sorted(s.value for s in sources)}

        def work(tx: neo4j.ManagedTransaction) -> int:
            gone = 0
            for label in (*CHUNK_LABELS, NodeLabel.ENTITY):
                record = tx.run(
                    _q(
                        f"""
                        MATCH (s:{label.value} {{ns: $ns}})-[r]->()
                        WHERE r.source IN $sources AND (r.run IS NULL OR r.run <> $run)
                        DELETE r
                        RETURN count(*) AS n
                        """
                    ),
                    params,
                ).single()
                gone += int(record["n"]) if record else 0
            tx.run(
                _q(
                    """
                    MATCH (a:Alias {ns: $ns})-[x:ALIAS_OF]->(e:Entity)
                    WHERE NOT a.norm IN e.aliases
                    DELETE x
                    """
                ),
                params,
            ).consume()
            tx.run(
                _q(
                    """
                    MATCH (a:Alias {ns: $ns})
                    WHERE NOT EXISTS { MATCH (a)-[:ALIAS_OF]->() }
                    DETACH DELETE a
                    """
                ),
                params,
            ).consume()
            return gone

        return self._write("delete_stale", work)

    def delete_document(self, doc_id: str) -> DeleteReport:
        """Remove a document, its chunks and their edges, and the entities only it used.

        Entities another document (or a conversation message) still mentions, explains, defines,
        uses or solves are kept; their `df` is recomputed. Topics left without members go too.
        """
        dkey = self.key(doc_id)

        def work(tx: neo4j.ManagedTransaction) -> DeleteReport:
            params = {"ns": self.ns, "dkey": dkey}
            found = tx.run(
                _q(
                    """
                    OPTIONAL MATCH (d:Document {key: $dkey})
                    OPTIONAL MATCH (s:Section {dkey: $dkey})
                    WITH d, count(s) AS sections
                    OPTIONAL MATCH (p:Proposition {dkey: $dkey})
                    RETURN d IS NOT NULL AS doc, sections, count(p) AS propositions
                    """
                ),
                params,
            ).single()
            if found is None or (
                not found["doc"] and found["sections"] + found["propositions"] == 0
            ):
                raise NotFoundError(f"document {doc_id!r} is not in graph namespace {self.ns!r}")
            entity_keys: set[str] = set()
            topic_keys: set[str] = set()
            chunks = 0
            for label in CHUNK_LABELS:
                match = (
                    "(c:Document {key: $dkey})"
                    if label is NodeLabel.DOCUMENT
                    else f"(c:{label.value} {{dkey: $dkey}})"
                )
                record = tx.run(
                    _q(
                        f"""
                        MATCH {match}
                        OPTIONAL MATCH (c)-[:{_ANCHOR_PATTERN}]->(e:Entity)
                        OPTIONAL MATCH (c)-[:BELONGS_TO]->(t:Topic)
                        RETURN count(DISTINCT c) AS chunks, collect(DISTINCT e.key) AS entities,
                               collect(DISTINCT t.key) AS topics
                        """
                    ),
                    params,
                ).single()
                if record is None:
                    continue
                entity_keys.update(k for k in record["entities"] if k)
                topic_keys.update(k for k in record["topics"] if k)
                if label is not NodeLabel.DOCUMENT:
                    chunks += int(record["chunks"])
                tx.run(_q(f"MATCH {match} DETACH DELETE c"), params).consume()
            report = _delete_orphans(tx, self.ns, sorted(entity_keys), sorted(topic_keys))
            return DeleteReport(
                doc_id=doc_id,
                chunks=chunks,
                entities=report.entities,
                aliases=report.aliases,
                topics=report.topics,
            )

        report = self._write("delete_document", work)
        self.touch()
        return report

    def drop_namespace(self) -> int:
        """Delete every node (and so every edge) of this namespace; returns the node count."""
        total = 0
        self.write(f"MATCH (s:{STAMP_LABEL} {{ns: $ns}}) DELETE s", op="drop_namespace")
        for label in NodeLabel:
            while True:
                record = self.write(
                    f"MATCH (n:{label.value} {{ns: $ns}}) WITH n LIMIT 2000 DETACH DELETE n RETURN count(*) AS n",
                    op="drop_namespace",
                )
                removed = int(record[0]["n"]) if record else 0
                total += removed
                if removed == 0:
                    break
        return total

    def prune(
        self,
        min_confidence: float,
        *,
        conversations_before: float | None = None,
        dry_run: bool = False,
    ) -> PruneReport:
        """Drop inferred edges below `min_confidence`, then entities, aliases and topics left orphaned.

        Structural, title/heading, code, link, conversation and user edges are never pruned.
        Section and Proposition nodes whose Document is gone (left by an interrupted write) go
        first. With `conversations_before` (epoch seconds), conversations last updated before it
        go too, with their messages and the users left without any edge, so entities only those
        messages mentioned are orphaned in the same pass. All of it is one transaction: with
        `dry_run` it is rolled back, so the counts are exact and nothing changes.
        """
        if not 0.0 <= min_confidence <= 1.0:
            raise InputError(f"min_confidence must lie in [0, 1], got {min_confidence}")
        inferred = sorted(s.value for s in INFERRED_SOURCES)

        def work(tx: neo4j.ManagedTransaction) -> PruneReport:
            params = {"ns": self.ns, "inferred": inferred, "min": float(min_confidence)}
            conversations = _expire_conversations(tx, self.ns, conversations_before)
            detached = _delete_detached_chunks(tx, self.ns)
            edges = 0
            for label in (*CHUNK_LABELS, NodeLabel.ENTITY, NodeLabel.MESSAGE):
                record = tx.run(
                    _q(
                        f"""
                        MATCH (s:{label.value} {{ns: $ns}})-[r]->()
                        WHERE r.source IN $inferred AND r.confidence < $min
                        DELETE r
                        RETURN count(*) AS n
                        """
                    ),
                    params,
                ).single()
                edges += int(record["n"]) if record else 0
            orphans = tx.run(
                _q(
                    f"""
                    MATCH (e:Entity {{ns: $ns}})
                    WHERE NOT {_INTRODUCED}
                    RETURN collect(e.key) AS keys
                    """
                ),
                params,
            ).single()
            topics = tx.run(
                _q("MATCH (t:Topic {ns: $ns}) RETURN collect(t.key) AS keys"), params
            ).single()
            report = _delete_orphans(
                tx,
                self.ns,
                list(orphans["keys"]) if orphans else [],
                list(topics["keys"]) if topics else [],
                orphans_only=True,
            )
            return PruneReport(
                edges=edges,
                entities=report.entities,
                aliases=report.aliases,
                topics=report.topics,
                chunks=detached,
                conversations=conversations.conversations,
                messages=conversations.messages,
                users=conversations.users,
            )

        if dry_run:
            return self._rehearse("prune", work)
        report = self._write("prune", work)
        if report.edges or report.chunks or report.messages:  # mentions gone: df changed
            self.refresh_entity_stats()
        if report.edges or report.chunks or report.entities or report.topics:
            self.touch()
        return report

    def _rehearse(self, op: str, work: Callable[[neo4j.ManagedTransaction], T]) -> T:
        """Run a write transaction function and roll it back (what it would do, changing nothing)."""
        with (
            self._errors(op),
            self._shared.driver.session(database=self.database) as session,
        ):
            tx = session.begin_transaction(timeout=self.settings.timeout_s)
            try:
                return work(cast(neo4j.ManagedTransaction, tx))
            finally:
                tx.rollback()

    # -- inspection ----------------------------------------------------------------------------

    # -- change stamp (what in-memory projections poll) ------------------------------------------

    def stamp(self) -> str | None:
        """A value that changes whenever this namespace's graph is written (None: never stamped)."""
        rows = self.read(
            f"MATCH (s:{STAMP_LABEL} {{key: $key}}) RETURN s.value AS v",
            {"key": self.key(STAMP_LABEL)},
            op="stamp",
        )
        return str(rows[0]["v"]) if rows and rows[0]["v"] is not None else None

    def touch(self) -> None:
        """Record that the namespace changed (a fresh random value: concurrent writers need no
        ordering, only that the value differs from what a projection was built at)."""
        self.write(
            f"MERGE (s:{STAMP_LABEL} {{key: $key}}) SET s.ns = $ns, s.value = $value",
            {"key": self.key(STAMP_LABEL), "value": uuid.uuid4().hex},
            op="touch",
        )

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
        rows = self.read(
            """
            UNWIND $keys AS k
            MATCH (a:Alias {key: k})-[:ALIAS_OF]->(e:Entity)
            RETURN a.norm AS via, e.id AS id, e.name AS name, e.kind AS kind, e.df AS df
            """,
            {"keys": [self.key(f) for f in forms]},
            op="lookup_entities",
        )
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

    def entities_in_text(self, text: str, *, max_ngram: int = _MAX_NGRAM) -> list[EntityMatch]:
        """Known entities named anywhere in `text` (its n-grams looked up as aliases)."""
        return self.lookup_entities(
            (n for _, _, n in name_ngrams(text, max_ngram)), normalized=True
        )

    def neighbourhood(
        self, node_ids: Sequence[str], *, depth: int = 1, limit: int | None = None
    ) -> dict[str, Any]:
        """Nodes and typed relationships within `depth` hops of `node_ids` (chunk, document or
        entity ids; a summary chunk id resolves to its Document), for the search page's graph
        view. Aliases and conversation nodes are left out; at most `limit` nodes come back
        (`settings.neighbourhood_max_nodes` by default), the start nodes first."""
        if depth < 1 or depth > 3:
            raise InputError(f"neighbourhood depth must be 1-3, got {depth}")
        cap = limit or self.settings.neighbourhood_max_nodes
        nodes: dict[str, dict[str, Any]] = {}
        edges: dict[tuple[str, str, str], dict[str, str]] = {}
        frontier = [self.key(i) for i in dict.fromkeys(node_ids) if i]
        for row in self.read(_NEIGHBOUR_START, {"keys": frontier}, op="neighbourhood"):
            nodes.setdefault(row["key"], _view_node(row, start=True))
        frontier = list(nodes)
        for _ in range(depth):
            if not frontier or len(nodes) >= cap:
                break
            reached: list[str] = []
            # Structure (chunks -> their document) comes in, entities go out: each direction
            # gets its share of the room left, so neither crowds the other out of the view.
            for share, query in ((2, _NEIGHBOUR_IN), (1, _NEIGHBOUR_OUT)):
                room = len(nodes) + max(0, cap - len(nodes)) // share
                rows = self.read(query, {"keys": frontier, "limit": cap * 4}, op="neighbourhood")
                rows.sort(key=lambda r: r["type"] not in _STRUCTURE)  # the outline first
                for row in rows:
                    if row["key"] not in nodes:
                        if len(nodes) >= room:
                            continue
                        nodes[row["key"]] = _view_node(row, start=False)
                        reached.append(row["key"])
                    src, dst = (
                        (row["from"], row["key"]) if row["out"] else (row["key"], row["from"])
                    )
                    edges.setdefault(
                        (src, row["type"], dst),
                        {
                            "source": self._strip(src),
                            "target": self._strip(dst),
                            "type": row["type"],
                        },
                    )
            frontier = reached
        return {
            "nodes": [{**n, "id": self._strip(k)} for k, n in nodes.items()],
            "edges": [e for (src, _, dst), e in edges.items() if src in nodes and dst in nodes],
        }

    def _strip(self, key: str) -> str:
        return key.split(":", 1)[1] if key.startswith(f"{self.ns}:") else key

    def chunks(self, doc_ids: Sequence[str] | None = None) -> list[Chunk]:
        """Stored chunks of every level (of the given documents, else all), for corpus-wide
        rebuilds. Fields the graph does not keep (sibling and child ids, offsets) are empty."""
        return [c for c, _ in self._stored_chunks(doc_ids)]

    def chunks_and_mentions(self) -> tuple[list[Chunk], dict[str, list[Entity]]]:
        """Every stored chunk and, in the same read, the extractor entities `write_chunks` kept
        per chunk id (a chunk written before they were kept has no entry)."""
        pairs = self._stored_chunks(None)
        mentions = {c.id: _decode_mentions(m) for c, m in pairs if m is not None}
        return [c for c, _ in pairs], mentions

    def _stored_chunks(self, doc_ids: Sequence[str] | None) -> list[tuple[Chunk, object]]:
        """(chunk, its stored `mentions` property or None), from one read per label."""
        params: dict[str, Any] = {
            "dkeys": [self.key(d) for d in doc_ids] if doc_ids is not None else None
        }
        found: list[tuple[Chunk, object]] = []
        for label in (NodeLabel.SECTION, NodeLabel.PROPOSITION):
            where = "WHERE c.dkey IN $dkeys" if doc_ids is not None else ""
            rows = self.read(
                f"MATCH (c:{label.value} {{ns: $ns}}) {where} RETURN properties(c) AS p",
                params,
                op="chunks",
            )
            level = Level(label.value.lower())
            found.extend(
                (_chunk_from_props(r["p"], level=level), r["p"].get("mentions")) for r in rows
            )
        where = "AND d.key IN $dkeys" if doc_ids is not None else ""
        rows = self.read(
            f"MATCH (d:Document {{ns: $ns}}) WHERE d.chunk_id IS NOT NULL {where} RETURN properties(d) AS p",
            params,
            op="chunks",
        )
        for r in rows:
            p = dict(r["p"])
            p["doc_id"], p["id"] = p["id"], p["chunk_id"]
            found.append((_chunk_from_props(p, level=Level.DOCUMENT), p.get("mentions")))
        return found

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
                    "m": _encode_mentions(
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

    # -- conversations (seed 003) --------------------------------------------------------------

    def add_message(
        self,
        *,
        conversation_id: str,
        message_id: str,
        text: str,
        role: str = "user",
        user_id: str | None = None,
        referenced_doc_ids: Sequence[str] = (),
        entity_names: Sequence[str] = (),
        timestamp: float | None = None,
        resolve_mentions: bool = True,
    ) -> MessageRecord:
        """Record a message: PART_OF its conversation, CREATED by its user, REFERENCES the
        documents it cites, MENTIONS the known entities it names (explicit names, plus every alias
        found in its text when `resolve_mentions`). Recording the same id again replaces its
        text, mentions and references."""
        if not conversation_id or not message_id:
            raise InputError("conversation_id and message_id must be non-empty")
        ts = time.time() if timestamp is None else float(timestamp)
        names = [normalize_name(n) for n in entity_names]
        if resolve_mentions:
            names.extend(n for _, _, n in name_ngrams(text, _MAX_NGRAM))
        forms = list(unique(f for n in names for f in variants(n)))
        params = {
            "ns": self.ns,
            "ckey": self.key(conversation_id),
            "cid": conversation_id,
            "mkey": self.key(message_id),
            "mid": message_id,
            "text": text,
            "role": role,
            "ts": ts,
            "ukey": self.key(user_id) if user_id else None,
            "uid": user_id,
            "docs": [self.key(d) for d in referenced_doc_ids],
            "aliases": [self.key(f) for f in forms],
            "conv": EdgeSource.CONVERSATION.value,
            "user": EdgeSource.USER.value,
        }

        def work(tx: neo4j.ManagedTransaction) -> MessageRecord:
            tx.run(
                _q(
                    """
                    MERGE (c:Conversation {key: $ckey})
                    ON CREATE SET c.ns = $ns, c.id = $cid, c.created_at = $ts
                    SET c.updated_at = $ts
                    MERGE (m:Message {key: $mkey})
                    ON CREATE SET m.ns = $ns, m.id = $mid, m.created_at = $ts
                    SET m.text = $text, m.role = $role, m.conversation_id = $cid
                    MERGE (m)-[p:PART_OF]->(c)
                    ON CREATE SET p.weight = 1.0, p.confidence = 1.0, p.source = $conv, p.count = 1
                    """
                ),
                params,
            ).consume()
            # Re-recording a message (an edit) replaces what it mentions and references.
            tx.run(
                _q("MATCH (m:Message {key: $mkey})-[r:MENTIONS|REFERENCES]->() DELETE r"), params
            ).consume()
            if user_id:
                tx.run(
                    _q(
                        """
                        MATCH (m:Message {key: $mkey})
                        MERGE (u:User {key: $ukey})
                        ON CREATE SET u.ns = $ns, u.id = $uid
                        MERGE (u)-[r:CREATED]->(m)
                        ON CREATE SET r.weight = 1.0, r.confidence = 1.0, r.source = $user, r.count = 1
                        """
                    ),
                    params,
                ).consume()
            refs = tx.run(
                _q(
                    """
                    MATCH (m:Message {key: $mkey})
                    UNWIND $docs AS dk
                    MATCH (d:Document {key: dk})
                    MERGE (m)-[r:REFERENCES]->(d)
                    ON CREATE SET r.weight = 1.0, r.confidence = 1.0, r.source = $conv, r.count = 1
                    RETURN collect(DISTINCT d.id) AS ids
                    """
                ),
                params,
            ).single()
            mentions = tx.run(
                _q(
                    """
                    MATCH (m:Message {key: $mkey})
                    UNWIND $aliases AS ak
                    MATCH (:Alias {key: ak})-[:ALIAS_OF]->(e:Entity)
                    WITH DISTINCT m, e
                    MERGE (m)-[r:MENTIONS]->(e)
                    ON CREATE SET r.weight = 1.0, r.confidence = 1.0, r.source = $conv, r.count = 1
                    RETURN collect(e.id) AS ids
                    """
                ),
                params,
            ).single()
            return MessageRecord(
                conversation_id=conversation_id,
                message_id=message_id,
                mentioned_entity_ids=tuple(sorted(mentions["ids"])) if mentions else (),
                referenced_doc_ids=tuple(sorted(refs["ids"])) if refs else (),
            )

        return self._write("add_message", work)

    def record_view(
        self, *, user_id: str, doc_id: str, timestamp: float | None = None, duration_s: float = 0.0
    ) -> ViewRecord:
        """Count one view of a document by a user (VIEWED: view_count, first/last_viewed_at)."""
        ts = time.time() if timestamp is None else float(timestamp)
        rows = self.write(
            """
            MATCH (d:Document {key: $dkey})
            MERGE (u:User {key: $ukey})
            ON CREATE SET u.ns = $ns, u.id = $uid
            MERGE (u)-[v:VIEWED]->(d)
            ON CREATE SET v.view_count = 1, v.first_viewed_at = $ts, v.last_viewed_at = $ts,
                          v.duration_s = $dur, v.weight = 1.0, v.confidence = 1.0, v.source = $src,
                          v.count = 1
            ON MATCH SET v.view_count = v.view_count + 1, v.count = v.view_count + 1,
                         v.last_viewed_at = CASE WHEN $ts > v.last_viewed_at THEN $ts ELSE v.last_viewed_at END,
                         v.first_viewed_at = CASE WHEN $ts < v.first_viewed_at THEN $ts ELSE v.first_viewed_at END,
                         v.duration_s = v.duration_s + $dur
            RETURN v.view_count AS views, v.first_viewed_at AS first, v.last_viewed_at AS last
            """,
            {
                "dkey": self.key(doc_id),
                "ukey": self.key(user_id),
                "uid": user_id,
                "ts": ts,
                "dur": float(duration_s),
                "src": EdgeSource.USER.value,
            },
            op="record_view",
        )
        if not rows:
            raise NotFoundError(f"document {doc_id!r} is not in graph namespace {self.ns!r}")
        r = rows[0]
        return ViewRecord(
            user_id=user_id,
            doc_id=doc_id,
            view_count=int(r["views"]),
            first_viewed_at=float(r["first"]),
            last_viewed_at=float(r["last"]),
        )


# The search page's graph view: start nodes by key (a Document also by its summary chunk key),
# then one hop out and in. Aliases and conversations are bookkeeping, not knowledge.
_VIEW_FIELDS = (
    "labels({v})[0] AS label, {v}.key AS key, {v}.name AS name, {v}.title AS title, "
    "substring(coalesce({v}.text, ''), 0, 120) AS text, {v}.source AS source, "
    "{v}.level AS level"
)
_NEIGHBOUR_START = (
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
_STRUCTURE = frozenset({RelType.CHUNK_OF.value, RelType.HAS_CHILD.value, RelType.NEXT.value})
_NEIGHBOUR_OUT = _NEIGHBOUR_HOP.format(pattern="-[r]->", out="true")
_NEIGHBOUR_IN = _NEIGHBOUR_HOP.format(pattern="<-[r]-", out="false")


def _view_node(row: Mapping[str, Any], *, start: bool) -> dict[str, Any]:
    label = str(row["label"])
    if label == NodeLabel.DOCUMENT.value:
        name = row.get("title") or row.get("source") or ""
    elif label in (NodeLabel.SECTION.value, NodeLabel.PROPOSITION.value):
        name = row.get("text") or ""
    else:
        name = row.get("name") or row.get("title") or ""
    return {
        "label": label,
        "name": str(name)[:120],
        "source": row.get("source"),
        "start": start,
    }


def _check_mode(mode: str) -> None:
    if mode not in ("max", "replace"):
        raise ValueError(f"write mode {mode!r} is not one of 'max', 'replace'")


def _encode_mentions(entities: Sequence[Entity]) -> str:
    """JSON, because a Cypher property holds lists of scalars only. A chunk without entities
    keeps '[]': a missing property marks a chunk written before they were kept."""
    return json.dumps([[e.name, e.kind, list(e.aliases)] for e in entities], ensure_ascii=False)


def _decode_mentions(text: object) -> list[Entity]:
    return [
        Entity(id="", name=str(name), kind=str(kind), aliases=tuple(aliases))
        for name, kind, aliases in json.loads(str(text))
    ]


def _chunk_from_props(p: Mapping[str, Any], *, level: Level) -> Chunk:
    return Chunk(
        id=str(p["id"]),
        doc_id=str(p["doc_id"]),
        level=level,
        text=str(p.get("text") or ""),
        position=int(p.get("position") or 0),
        parent_id=p.get("parent_id"),
        section_path=tuple(p.get("section_path") or ()),
        title=str(p.get("title") or ""),
        source=str(p.get("source") or ""),
        content_type=p.get("content_type") or "text",
        language=p.get("language"),
        token_count=int(p.get("token_count") or 0),
        references=tuple(p.get("references") or ()),
        defined_symbols=tuple(p.get("defined_symbols") or ()),
        dependencies=tuple(p.get("dependencies") or ()),
        error_codes=tuple(p.get("error_codes") or ()),
        keywords=tuple(p.get("keywords") or ()),
    )


@dataclass(frozen=True, slots=True)
class _OrphanReport:
    entities: int
    aliases: int
    topics: int


def _delete_orphans(
    tx: neo4j.ManagedTransaction,
    ns: str,
    entity_keys: list[str],
    topic_keys: list[str],
    *,
    orphans_only: bool = False,
) -> _OrphanReport:
    """Delete the listed entities nothing introduces any more (and their unshared aliases), refresh the
    `df` of the survivors, and delete the listed topics that have no members left."""
    params: dict[str, Any] = {"ns": ns, "entities": entity_keys, "topics": topic_keys}
    record = tx.run(
        _q(
            f"""
            UNWIND $entities AS k
            MATCH (e:Entity {{key: k}})
            WHERE NOT {_INTRODUCED}
            OPTIONAL MATCH (a:Alias)-[:ALIAS_OF]->(e)
            RETURN collect(DISTINCT e.key) AS dead, collect(DISTINCT a.key) AS aliases
            """
        ),
        params,
    ).single()
    dead = list(record["dead"]) if record else []
    alias_keys = [k for k in (record["aliases"] if record else []) if k]
    if dead:
        tx.run(
            _q("UNWIND $keys AS k MATCH (e:Entity {key: k}) DETACH DELETE e"), {"keys": dead}
        ).consume()
    aliases = 0
    if alias_keys:
        gone = tx.run(
            _q(
                """
                UNWIND $keys AS k
                MATCH (a:Alias {key: k})
                WHERE NOT EXISTS { MATCH (a)-[:ALIAS_OF]->() }
                DETACH DELETE a
                RETURN count(*) AS n
                """
            ),
            {"keys": alias_keys},
        ).single()
        aliases = int(gone["n"]) if gone else 0
    if not orphans_only:
        survivors = sorted(set(entity_keys) - set(dead))
        if survivors:
            tx.run(
                _q(
                    """
                    UNWIND $keys AS k
                    MATCH (e:Entity {key: k})
                    OPTIONAL MATCH (e)<-[m:MENTIONS]-()
                    WITH e, count(m) AS df
                    SET e.df = df
                    """
                ),
                {"keys": survivors},
            ).consume()
    topics = 0
    if topic_keys:
        gone = tx.run(
            _q(
                """
                UNWIND $topics AS k
                MATCH (t:Topic {key: k})
                WHERE NOT EXISTS { MATCH (t)<-[:BELONGS_TO]-() }
                DETACH DELETE t
                RETURN count(*) AS n
                """
            ),
            params,
        ).single()
        topics = int(gone["n"]) if gone else 0
    return _OrphanReport(entities=len(dead), aliases=aliases, topics=topics)


@dataclass(frozen=True, slots=True)
class _ConversationReport:
    conversations: int
    messages: int
    users: int


def _expire_conversations(
    tx: neo4j.ManagedTransaction, ns: str, before: float | None
) -> _ConversationReport:
    """Delete conversations last updated before `before` (None: none) with their messages, any
    message no conversation holds, and users left without an edge."""
    params: dict[str, Any] = {"ns": ns, "before": before}
    conversations = messages = 0
    if before is not None:
        record = tx.run(
            _q(
                """
                MATCH (c:Conversation {ns: $ns})
                WHERE c.updated_at IS NULL OR c.updated_at < $before
                OPTIONAL MATCH (m:Message)-[:PART_OF]->(c)
                RETURN collect(DISTINCT c.key) AS convs, collect(DISTINCT m.key) AS msgs
                """
            ),
            params,
        ).single()
        convs = list(record["convs"]) if record else []
        msgs = [k for k in (record["msgs"] if record else []) if k]
        if msgs:
            tx.run(
                _q("UNWIND $keys AS k MATCH (m:Message {key: k}) DETACH DELETE m"), {"keys": msgs}
            ).consume()
        if convs:
            tx.run(
                _q("UNWIND $keys AS k MATCH (c:Conversation {key: k}) DETACH DELETE c"),
                {"keys": convs},
            ).consume()
        conversations, messages = len(convs), len(msgs)
    loose = tx.run(
        _q(
            """
            MATCH (m:Message {ns: $ns})
            WHERE NOT EXISTS { MATCH (m)-[:PART_OF]->() }
            DETACH DELETE m
            RETURN count(*) AS n
            """
        ),
        params,
    ).single()
    messages += int(loose["n"]) if loose else 0
    users = tx.run(
        _q(
            """
            MATCH (u:User {ns: $ns})
            WHERE NOT EXISTS { MATCH (u)-[]-() }
            DELETE u
            RETURN count(*) AS n
            """
        ),
        params,
    ).single()
    return _ConversationReport(
        conversations=conversations, messages=messages, users=int(users["n"]) if users else 0
    )


def _delete_detached_chunks(tx: neo4j.ManagedTransaction, ns: str) -> int:
    """Delete Section/Proposition nodes whose Document no longer exists; returns how many."""
    removed = 0
    for label in (NodeLabel.SECTION, NodeLabel.PROPOSITION):
        record = tx.run(
            _q(
                f"""
                MATCH (c:{label.value} {{ns: $ns}})
                OPTIONAL MATCH (d:Document {{key: c.dkey}})
                WITH c, d WHERE d IS NULL
                DETACH DELETE c
                RETURN count(*) AS n
                """
            ),
            {"ns": ns},
        ).single()
        removed += int(record["n"]) if record else 0
    return removed


def _q(text: str) -> LiteralString:
    """Query text is built only from literals and schema enums (values travel as parameters)."""
    return text


def unique_rows(rows: Iterable[dict[str, str]]) -> list[dict[str, str]]:
    seen: dict[tuple[str, str], dict[str, str]] = {}
    for r in rows:
        seen.setdefault((r["a"], r["b"]), r)
    return list(seen.values())


def _resolve_chunk(var: str, key: str) -> str:
    """Cypher resolving a chunk key of any level to `var` (a Document holds its summary chunk)."""
    return (
        f"OPTIONAL MATCH ({var}1:Document {{ckey: {key}}}) "
        f"OPTIONAL MATCH ({var}2:Section {{key: {key}}}) "
        f"OPTIONAL MATCH ({var}3:Proposition {{key: {key}}}) "
    )


def _link_chunks_query(rel: RelType) -> str:
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


def _merge_edges_query(rel: RelType, src: NodeLabel, dst: NodeLabel, mode: WriteMode) -> str:
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


def open_graph_store(settings: Settings, *, namespace: str = "default") -> GraphStore:
    """The edge's way in: connect (starting the embedded server if configured so) and ensure the schema."""
    return GraphStore.open(settings, namespace=namespace)


__all__ = [
    "DeleteReport",
    "EntityMatch",
    "GraphCounts",
    "GraphStore",
    "MessageRecord",
    "PruneReport",
    "ViewRecord",
    "WriteReport",
    "open_graph_store",
]
