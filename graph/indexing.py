"""Writing chunks into the graph: per batch during ingest, and once over the corpus after it.

`index_batch` is what an ingest writer calls for each batch: documents and chunk nodes with
their structure, and each chunk's extractor entities kept on the chunk. Nothing entity-level is
written per batch, because none of it is a fact about one batch: which names are entities, how
plurals and short code names merge, which names are too generic to link, co-occurrence and
topics all depend on the whole corpus. `rebuild_corpus_edges` builds that layer from the stored
chunks alone and replaces the previous one, so the graph after any sequence of ingests and
deletes equals a single ingest of the documents that remain, whatever the batch size or order.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from rayweave.cluster.gc_pause import gc_paused
from rayweave.cluster.step_clock import StepClock
from rayweave.cluster.types import Chunk, Document, Entity
from rayweave.graph.builders import build_graph
from rayweave.graph.corpus_content import CorpusContent, document_keys, read_content
from rayweave.graph.edge_memo import MemoizedParts
from rayweave.graph.extraction import Extraction, encode_extraction
from rayweave.graph.layer_memos import LayerMemos, Memo, MemoKeeper
from rayweave.graph.layer_snapshot import LayerSnapshot, stored_layer
from rayweave.graph.match_memo import MatchMemo, MemoizedMatches
from rayweave.graph.name_memo import MemoizedNames
from rayweave.graph.schema import CORPUS_SOURCES
from rayweave.graph.store import GraphStore
from rayweave.graph.store.layer_sync import EdgeSync, EntityRows, EntityView
from rayweave.graph.synonym_index import NameIndex, SynonymUpdate, update_synonyms
from rayweave.graph.tally_memo import MemoizedTally


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexReport:
    documents: int
    chunks: int


def index_batch(
    store: GraphStore,
    chunks: Sequence[Chunk],
    *,
    documents: Sequence[Document] = (),
    mentions: Mapping[str, Sequence[Entity]] | None = None,
    extractions: Mapping[str, Extraction] | None = None,
) -> IndexReport:
    """Write one ingest batch's documents and chunks (`mentions`: NER's entities per chunk id;
    `extractions`: what a graph extractor read off section chunks; both kept for the corpus
    pass). A failed extraction is not kept: the chunk has none, as if no extractor had run."""
    docs = store.write_documents(documents) if documents else 0
    encoded = {
        cid: encode_extraction(x) for cid, x in (extractions or {}).items() if x.error is None
    }
    written = store.write_chunks(chunks, mentions, encoded) if chunks else 0
    return IndexReport(documents=docs, chunks=written)


@dataclass(frozen=True, slots=True, kw_only=True)
class CorpusPass:
    """What the corpus pass changed: entities and edges written, edges that went, and edges
    recomputed equal to what was stored (left alone); how much of the stored layer it read."""

    entities: int
    topics: int
    edges: EdgeSync
    reread: int | None = None  # keys whose edges were read back (None: the whole layer)
    rematched: int | None = None  # chunks the gazetteer matched anew (None: no memo kept)
    reused: int | None = None  # documents whose phase 3 was reused (None: no memo kept)
    read: int | None = None  # documents whose chunks were read (None: every document)
    seconds: dict[str, float] = field(default_factory=dict)  # per step, in the order they ran


@gc_paused()
def rebuild_corpus_edges(
    store: GraphStore,
    *,
    full: bool = False,
    memos: MemoKeeper | None = None,
    made: str | None = None,
) -> CorpusPass:
    """Build entities, topics and every rule-made edge from all stored chunks and make the
    stored layer equal them (see module docstring), writing only rows that differ (`full`:
    every row, for repair). Readers see the old layer, then old and new together, never
    neither: new rows are written first, what they do not repeat is deleted after.
    `memos` (`graph/layer_memos.py`) keeps what the pass leaves for the next: the edges it
    synced, so that the next one reads back only what changed since (`graph/layer_snapshot.py`);
    its gazetteer matches, so that the next one matches only the chunks a change can touch
    (`graph/match_memo.py`; `full` matches every chunk and starts the memo anew); each
    document's phase 3 and the facts it read, so that the next one recomputes and syncs only
    the documents a change can reach (`graph/edge_memo.py`; needs the other two; `full`, which
    keeps no snapshot, neither uses nor keeps it). `made` names the pass in the memos it keeps
    (None: a fresh name); when the store writes as `made` (`writing_as`), the next pass tells
    this one's writes from others' and re-reads no document for them."""
    clock = StepClock()
    kept = memos.kept if memos is not None else frozenset()
    old = memos.load() if memos is not None and not full else LayerMemos()
    handed: list[Memo] = [m for m in ("snapshot", "parts") if getattr(old, m) is not None]
    if memos is not None and handed:
        memos.hand_over(*handed)  # changed in place below
    # What is stored is known first, from the version before anything is read (see
    # `graph/layer_snapshot.py`): writes that land while the pass runs are re-read next time.
    with clock.step("stored layer"):
        stored = (
            None
            if full
            else stored_layer(
                store, CORPUS_SOURCES, old.snapshot, owned=True, index="content" in kept
            )
        )
        unsettled = None if stored is None else stored.unsettled
    with clock.step("read chunks"):
        (chunks, mentions, extractions), content, read = _read_chunks(
            store, old.content, hold="content" in kept
        )
        # Phase 1 per document, reused where the held content says a document is unchanged.
        names = None
        if "names" in kept and content is not None:
            was = old.names
            fits = was is not None and old.content is not None and was.at == old.content.at
            names = MemoizedNames(was if fits else None, changed=read)
    with clock.step("compute"):
        memo = MemoizedMatches(old.matches) if "matches" in kept else None
        tally = None
        if memo is not None and content is not None:  # phase 2's counts carried with the input
            tally = MemoizedTally(
                old.matches if _same_pass(old.matches, old.content) else None,
                before=None if old.content is None else old.content.documents,
                after=content.documents,
                read=read,
                matches=memo,
            )
        reuse = None
        doc_keys: Mapping[str, frozenset[str]] = {}
        if "parts" in kept and memo is not None and not full:  # `full` keeps no snapshot
            doc_keys = (  # a held input has them already
                document_keys(store, chunks)
                if content is None
                else {d: own.keys for d, own in content.documents.items()}
            )
            reuse = MemoizedParts(
                old.parts,
                same_input=_same_input(old, content, read),
                matches=memo,
                at=None if stored is None else stored.since,
                held="content" in kept,  # a keeper that holds the caches in memory
                names=names,
                owned=True,  # handed over above
                blocked=None
                if unsettled is None
                else {d for d, keys in doc_keys.items() if not keys.isdisjoint(unsettled)},
            )
        batch = build_graph(
            chunks,
            mentions,
            settings=store.settings,
            extractions=extractions,
            names_of=names,
            find=memo,
            tally=tally,
            parts_of=reuse,
            columns=stored is not None,  # compared with it, not written whole
        )
    with clock.step("write"):
        # Edges are written only between nodes that exist: topics first, as entities.
        topics = store.write_topics(batch.topics)
        synced: list[str] | None = None  # the keys of the entities written (None: all)
        entity_view: EntityView | None = None  # the stored entities after the write
        entity_rows: EntityRows | None = None  # the rows they equal
        sync_entry: int | None = None  # the change-log entry of the sync alone
        if stored is None:
            entities = store.write_entities(batch.entities, mode="replace")
            run = uuid.uuid4().hex
            written = store.write_edges(batch.edge_rows(), mode="replace", run=run)
            gone = store.delete_stale(run, CORPUS_SOURCES)
            edges = EdgeSync(edges_written=written, edges_deleted=gone, edges_unchanged=0)
        else:
            synced, entity_view, entity_rows = store.sync_entities(
                batch.entities, stored.entities, stored.rows
            )
            entities = len(synced)
            edges = store.sync_edges(
                batch.edges,
                CORPUS_SOURCES,
                stored=stored.view,
                keep_view="snapshot" in kept,
                standing=set().union(*(doc_keys[d] for d in reuse.reused)) if reuse else set(),
                columns=batch.columns,
                delta=None if reuse is None else reuse.related_delta,
                rows_delta=None if reuse is None else reuse.belongs_delta,
            )
            # Logged apart from the clean-up's writes: the snapshot kept below holds these
            # keys as the sync wrote them, so the next pass need not read them back.
            sync_entry = store.touch()
    with clock.step("clean up"):
        store.delete_topics_except(batch.topics)
        # After a sync from a snapshot, only the entities it wrote can list fewer aliases, and
        # only those at an end of an edge it wrote or deleted can have lost what introduced
        # them (a plural now merged into its singular, a deleted document's names): those go,
        # as a zero threshold drops no edge. A pass that read the layer whole (the first, after
        # a crash, `full`) looks at every alias and entity, as an interrupted one may have
        # written rows it did not get to clean up after.
        partial = stored is not None and stored.reread is not None
        store.delete_unlisted_aliases(among=synced if partial else None)
        store.prune(0.0, among=edges.entity_ends if partial else None)
        store.touch()
    with clock.step("memo files"):
        made = made or uuid.uuid4().hex  # names this pass in the memos: used together
        if memos is not None:
            memos.keep(
                LayerMemos(
                    snapshot=None
                    if stored is None or edges.view is None
                    else LayerSnapshot(
                        ns=store.ns,
                        at=stored.at,
                        view=edges.view,
                        entities=entity_view,
                        made=made,
                        synced=sync_entry,
                        rows=entity_rows,
                    ),
                    matches=None
                    if memo is None or memo.memo is None
                    else dataclasses.replace(
                        memo.memo,
                        made=made,
                        counts=[] if tally is None or tally.held is None else [tally.held],
                    ),
                    parts=None if reuse is None or stored is None else reuse.memo(made, stored.at),
                    content=None if content is None else dataclasses.replace(content, made=made),
                    names=None if names is None or content is None else names.memo(content.at),
                )
            )
    reread = None if stored is None else stored.reread
    rematched = None if memo is None else memo.rematched
    return CorpusPass(
        entities=entities,
        topics=topics,
        edges=edges,
        reread=reread,
        rematched=rematched,
        reused=None if reuse is None else len(reuse.reused),
        read=None if read is None else len(read),
        seconds=clock.seconds,
    )


def _same_pass(matches: MatchMemo | None, content: CorpusContent | None) -> bool:
    """Whether the match memo was kept by the pass that kept the content as its input."""
    return matches is not None and content is not None and matches.made == content.made != ""


def _same_input(
    old: LayerMemos, content: CorpusContent | None, read: AbstractSet[str] | None
) -> AbstractSet[str] | None:
    """The documents whose input is the one the edge memo's pass read (None: not known): those
    not read again since the held content, when the pass that kept it kept the edge memo."""
    if content is None or read is None or old.content is None or old.parts is None:
        return None
    if old.content.made != old.parts.made or not old.parts.made:
        return None
    return content.documents.keys() - read


def _read_chunks(
    store: GraphStore, held: CorpusContent | None, *, hold: bool
) -> tuple[
    tuple[list[Chunk], dict[str, list[Entity]], dict[str, Extraction]],
    CorpusContent | None,
    frozenset[str] | None,
]:
    """The pass's input; with `hold`, from the `held` copy and the documents logged since, and
    the copy for the next pass (`graph/corpus_content.py`); the documents read (None: all)."""
    for attempt in range(2):
        if hold:
            content, read = read_content(store, held)
            found = content.flat()
        else:
            content, read, found = None, None, store.documents_content()
        chunks, mentions, _ = found
        if len(mentions) == len(chunks) or attempt:
            break
        store.backfill_mentions()  # written by an earlier version: keep its NER entities
        held = None
    return found, content, read


@dataclass(frozen=True, slots=True, kw_only=True)
class LayerChange:
    """What an upkeep changed in the entity layer, and its seconds per step: what an ingest
    reports. Not the graph's totals, which cost a walk of every relationship whatever changed
    (`rayweave graph stats` counts them)."""

    entities: int  # entity rows written: new, or changed
    edges_written: int  # entity-layer and synonym edges written: new, or changed
    edges_deleted: int  # entity-layer edges that went
    seconds: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class EntityLayerUpdate:
    corpus: CorpusPass
    synonyms: SynonymUpdate | None
    seconds: dict[str, float] = field(default_factory=dict)  # the pass's steps, then synonymy

    def change(self) -> LayerChange:
        edges = self.corpus.edges
        return LayerChange(
            entities=self.corpus.entities,
            edges_written=edges.edges_written + (self.synonyms.edges if self.synonyms else 0),
            edges_deleted=edges.edges_deleted,
            seconds=self.seconds,
        )


def update_entity_layer(
    store: GraphStore,
    names: NameIndex | None,
    *,
    full: bool = False,
    memos: MemoKeeper | None = None,
) -> EntityLayerUpdate:
    """The maintenance step after documents are written or deleted: the entity layer from the
    stored chunks, then synonymy for the names that changed (none without a name index);
    `full` rewrites every row and re-encodes every name; `memos`: see `rebuild_corpus_edges`."""
    if store.begin_maintenance():  # an upkeep died mid-way: what it wrote is not logged
        store.mark_all()
        if memos is not None:
            memos.forget_snapshot()
    made = uuid.uuid4().hex
    clock = StepClock()
    synonyms = None
    with store.writing_as(made):  # this pass's entries, which its memos account for
        corpus = rebuild_corpus_edges(store, full=full, memos=memos, made=made)
        clock.add(corpus.seconds)
        if names is not None:
            with clock.step("synonymy"):
                if full:
                    names.store.drop()
                held = None if full or memos is None else memos.held_names()
                synonyms = update_synonyms(store, names, held)
                if memos is not None:
                    memos.hold_names(synonyms.held)
    store.end_maintenance()
    return EntityLayerUpdate(corpus=corpus, synonyms=synonyms, seconds=clock.seconds)
