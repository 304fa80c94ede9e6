"""The full rebuild of a namespace's entity layer as a Ray job over shares of its documents.

A rebuild is needed when settings that shape the graph change, and for repair (`rayweave graph
rebuild`). In one process it would hold the whole corpus; here Ray tasks, spread over every node,
each read one share of documents from the store and run the corpus pass's phases on it
(`graph/corpus_phases.py`); what the shares count merges by key in reduce tasks; the lexicon
and context each phase needs travel through the object store; and every share's edges are
written by a writer task per share. The driver holds object references and counts only.
Synonymy is relinked last, in one task on the driver's node (an embedded name index's files
are there): every name re-encoded, all pairs.

Order of writes: entities, then topics, then edges (an edge is written only between nodes that
exist), then the rows the run did not write again go (`delete_stale`), as the in-process full
pass does; readers see the old layer, then both, never neither.
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from rayweave.cluster.gc_pause import gc_paused
from rayweave.cluster.settings import Settings
from rayweave.graph.corpus_phases import (
    Context,
    Lexicon,
    MatchTally,
    NameTally,
    context,
    corpus_edges,
    lexicon,
    merge_all,
    share_edges,
    tally_matches,
    tally_names,
)
from rayweave.graph.document_edges import CrossTally
from rayweave.graph.schema import CORPUS_SOURCES, EdgeRow, EntityRow, TopicRow
from rayweave.graph.share import Found, Share

_FAN_IN = 8  # tallies one reduce task merges
_T = TypeVar("_T", NameTally, MatchTally, CrossTally)


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterRebuild:
    """What a cluster rebuild did, and where."""

    documents: int
    shares: int
    nodes: int  # distinct Ray nodes the shares' tasks ran on
    entities: int
    topics: int
    edges_written: int
    edges_deleted: int
    seconds: dict[str, float] = field(default_factory=dict)


def rebuild_on_cluster(
    settings: Settings, collection: str, *, progress: Callable[[str], None] | None = None
) -> ClusterRebuild:
    """Rebuild `collection`'s entity layer from its stored chunks on the connected Ray cluster,
    then relink every name (see module docstring). Facts are left to the caller (`finalize`)."""
    from rayweave.graph.store import open_graph_store
    from rayweave.ingest.upkeep_host import let_go_of

    say = progress or (lambda _: None)
    with open_graph_store(settings, namespace=collection) as store:
        store.begin_maintenance()
        store.backfill_mentions()  # chunks written before chunks kept their NER entities
        documents = store.document_count()
    laps = _Laps()
    # An empty namespace is one empty share: the rebuild then deletes what is left.
    offsets = range(0, max(documents, 1), settings.graph.rebuild_share_documents)
    say(f"linking {documents} documents in {len(offsets)} shares")
    layer = _layer(settings, collection, offsets, laps)
    say("writing the entity layer")
    entities, topics, written = _write_layer(settings, collection, layer)
    laps("writes")
    with open_graph_store(settings, namespace=collection) as store:
        gone = store.delete_stale(layer.run, CORPUS_SOURCES)
        store.delete_unlisted_aliases()
        store.prune(0.0)
        store.mark_all()
        store.touch()
        store.end_maintenance()
    laps("cleanup")
    say("relinking synonyms")
    let_go_of(settings, collection)  # the upkeep actor's hold on the name index
    _wait(_task(relink_synonyms, here=True).remote(settings, collection))
    laps("synonyms")
    return ClusterRebuild(
        documents=documents,
        shares=len(offsets),
        nodes=layer.nodes,
        entities=entities,
        topics=topics,
        edges_written=written,
        edges_deleted=gone,
        seconds=laps.seconds,
    )


class _Laps:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._clock = time.perf_counter()

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = round(now - self._clock, 2)
        self._clock = now


@dataclass(frozen=True, slots=True)
class _Layer:
    """Object references to the rebuilt layer's rows, and how many nodes computed them."""

    own_edges: list[Any]  # one list of edges per share
    cross_edges: Any
    topics: Any
    entities: Any
    nodes: int
    run: str


def _layer(settings: Settings, collection: str, offsets: range, laps: _Laps) -> _Layer:
    """The phases over every share, merged between phases by reduce tasks."""
    import ray

    cfg = settings.graph
    outs = [
        _task(_read_share, returns=3, spread=True).remote(settings, collection, o, offsets.step)
        for o in offsets
    ]
    shares = [o[0] for o in outs]
    names = _reduce([o[1] for o in outs])
    nodes = len(set(ray.get([o[2] for o in outs])))
    lex = _task(lexicon).remote(names, cfg)
    _wait(lex)
    laps("names")
    outs = [_task(_matches, returns=2, spread=True).remote(s, lex) for s in shares]
    ctx = _task(context).remote(names, _reduce([o[0] for o in outs]), cfg)
    founds = [o[1] for o in outs]
    _wait(ctx)
    laps("matches")
    edged = _task(_edges, returns=2, spread=True)
    outs = [edged.remote(s, lex, ctx, f) for s, f in zip(shares, founds, strict=True)]
    cross = _task(corpus_edges, returns=3).remote(_reduce([o[1] for o in outs]), lex, ctx)
    _wait(*cross)
    laps("edges")
    return _Layer(
        own_edges=[o[0] for o in outs],
        cross_edges=cross[0],
        topics=cross[1],
        entities=cross[2],
        nodes=nodes,
        run=uuid.uuid4().hex,
    )


def _write_layer(settings: Settings, collection: str, layer: _Layer) -> tuple[int, int, int]:
    """Entities, then topics, then every share's edges by its own writer task; topics no longer
    made go after the edges, as in the in-process pass."""
    import ray

    entities = ray.get(_task(_write_entities).remote(settings, collection, layer.entities))
    topics = ray.get(_task(_write_topics).remote(settings, collection, layer.topics))
    writer = _task(_write_edges, spread=True)
    edges = [*layer.own_edges, layer.cross_edges]
    written = sum(ray.get([writer.remote(settings, collection, e, layer.run) for e in edges]))
    ray.get(_task(_drop_other_topics).remote(settings, collection, layer.topics))
    return int(entities), int(topics), written


def _wait(*refs: Any) -> None:
    """Until the tasks behind `refs` finished, without fetching their values to the driver."""
    import ray

    ray.wait(list(refs), num_returns=len(refs), fetch_local=False)


def relink_synonyms(settings: Settings, collection: str) -> None:
    """Every entity name re-encoded and linked (`graph/synonym_index.py`), in a task: the names'
    vectors and the encoder are the size of the names, and stay out of the driver."""
    from rayweave.cluster.vectors.service import vector_store_for
    from rayweave.graph.store import open_graph_store
    from rayweave.graph.synonym_index import update_synonyms
    from rayweave.ingest.name_index import name_index

    dim = vector_store_for(settings, collection).spec().dense_dim
    names = name_index(settings, collection, dense_dim=dim)
    if names is None:
        return
    try:
        with open_graph_store(settings, namespace=collection) as graph:
            names.store.drop()
            update_synonyms(graph, names)
    finally:
        names.store.close()


def _task(
    fn: Callable[..., Any], *, returns: int = 1, spread: bool = False, here: bool = False
) -> Any:
    """`fn` as a Ray task, run with the cyclic collector paused as the driver's pass is
    (`cluster/gc_pause.py`; `spread`: over every node rather than packed onto the first; `here`:
    on the driver's node, where an embedded store's files are)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    opts: dict[str, Any] = {"num_returns": returns}
    if spread:
        opts["scheduling_strategy"] = "SPREAD"
    if here:
        node = ray.get_runtime_context().get_node_id()
        opts["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node, soft=False)
    return ray.remote(_paused(fn)).options(**opts)


def _paused(fn: Callable[..., Any]) -> Callable[..., Any]:
    # Not `gc_paused()(fn)`: that wrapper holds a generator, which Ray cannot pickle.
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        with gc_paused():
            return fn(*args, **kwargs)

    return run


def _read_share(
    settings: Settings, collection: str, offset: int, limit: int
) -> tuple[Share, NameTally, str]:
    """One share read from the store and its names tallied, on whichever node runs it."""
    import ray

    from rayweave.graph.store import open_graph_store

    with open_graph_store(settings, namespace=collection) as store:
        chunks, mentions, extractions = store.documents_content(store.document_ids(offset, limit))
    share = Share(chunks, mentions, extractions)
    return share, tally_names(share), ray.get_runtime_context().get_node_id()


def _matches(share: Share, lex: Lexicon) -> tuple[MatchTally, Found]:
    found = lex.found(share.chunks)
    return tally_matches(share, lex, found), found


def _edges(
    share: Share, lex: Lexicon, ctx: Context, found: Found
) -> tuple[list[EdgeRow], CrossTally]:
    part = share_edges(share, lex, ctx, found)
    return part.edges, part.cross


def _merge(*tallies: _T) -> _T:
    return merge_all(tallies)


def _reduce(refs: Sequence[Any]) -> Any:
    """One object reference for the merge of many tallies: a tree of reduce tasks, `_FAN_IN` at
    a time, so no task (and never the driver) holds more than a few tallies at once."""
    merge = _task(_merge)
    level = list(refs)
    while len(level) > 1:
        level = [merge.remote(*level[i : i + _FAN_IN]) for i in range(0, len(level), _FAN_IN)]
    return level[0]


def _write_entities(settings: Settings, collection: str, rows: Sequence[EntityRow]) -> int:
    from rayweave.graph.store import open_graph_store

    with open_graph_store(settings, namespace=collection) as store:
        return store.write_entities(rows, mode="replace")


def _write_topics(settings: Settings, collection: str, rows: Sequence[TopicRow]) -> int:
    from rayweave.graph.store import open_graph_store

    with open_graph_store(settings, namespace=collection) as store:
        return store.write_topics(rows)


def _drop_other_topics(settings: Settings, collection: str, rows: Sequence[TopicRow]) -> None:
    from rayweave.graph.store import open_graph_store

    with open_graph_store(settings, namespace=collection) as store:
        store.delete_topics_except(rows)


def _write_edges(settings: Settings, collection: str, rows: Sequence[EdgeRow], run: str) -> int:
    """Edges with `replace` semantics, stamped with the rebuild's `run`."""
    from rayweave.graph.store import open_graph_store

    with open_graph_store(settings, namespace=collection) as store:
        return store.write_edges(rows, mode="replace", run=run)
