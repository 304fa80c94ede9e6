"""Projection benchmark: build time, memory and walk latency of the in-memory graph.

Two inputs: a namespace already in the graph store (what a retriever replica loads, timed end to
end including the Bolt reads) and a synthetic graph of the size the goals name (100k passages,
about 1M edges), built in memory from generated edge lists, so the figures do not depend on a
corpus being ingested. Entity popularity follows a Zipf law, as names in real text do, so the
synthetic graph has the hubs (years, countries, `self`) that make walks expensive.

A walk is what one query costs the graph stage: rarity-weighted query entities and the top
vector hits as restart nodes, personalised PageRank, the top chunks with their explaining paths,
and the seeds' bridge links. Latency figures are in-process, one thread.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from rayweave.cluster.settings import GraphSettings
from rayweave.cluster.types import Level, QueryType
from rayweave.graph.profiles import PROFILES
from rayweave.graph.projection import GraphProjection, ProjectionBuilder, describe
from rayweave.graph.walk import WalkRequest, bridge_links, relation_weights, walk


@dataclass(frozen=True, slots=True, kw_only=True)
class SyntheticGraph:
    """Shape of the generated graph (defaults: the issue's 100k passages and ~1M edges)."""

    passages: int = 100_000
    passages_per_document: int = 4
    entities: int = 50_000
    mentions_per_passage: int = 8
    related_per_entity: float = 1.5
    zipf: float = 1.1
    seed: int = 0


def synthetic_projection(shape: SyntheticGraph) -> GraphProjection:
    """A projection with the structure rayweave ingests: documents of consecutive passages
    (HAS_CHILD from the first, NEXT between neighbours), Zipf-distributed MENTIONS, one EXPLAINS
    per titled passage, co-occurrence RELATED_TO between entities."""
    rng = np.random.default_rng(shape.seed)
    b = ProjectionBuilder()
    per_doc = shape.passages_per_document
    for i in range(shape.passages):
        b.add_chunk(f"c{i}", f"c{i}", f"d{i // per_doc}", Level.SECTION)
    popularity = 1.0 / np.arange(1, shape.entities + 1) ** shape.zipf
    popularity /= popularity.sum()
    mentions = rng.choice(
        shape.entities, size=(shape.passages, shape.mentions_per_passage), p=popularity
    )
    df = np.bincount(mentions.ravel(), minlength=shape.entities)
    for e in range(shape.entities):
        b.add_entity(f"e{e}", f"e{e}", f"entity {e}", float(df[e]))
        b.add_alias(f"entity {e}", f"e{e}")
    for i in range(shape.passages):
        if i % per_doc:
            b.add_edge("sequence", f"c{i - 1}", f"c{i}", 1.0)
            b.add_edge("structure", f"c{i - i % per_doc}", f"c{i}", 1.0)
        for e in mentions[i]:
            b.add_edge("mentions", f"c{i}", f"e{e}", 1.0)
    titled = rng.permutation(shape.passages)[: shape.entities]
    for e, i in enumerate(titled):
        b.add_edge("explains", f"c{i}", f"e{e}", 1.0)
    pairs = rng.choice(
        shape.entities, size=(int(shape.entities * shape.related_per_entity), 2), p=popularity
    )
    for a, c in pairs:
        b.add_edge("related", f"e{a}", f"e{c}", 0.5)
    return b.build(stamp="synthetic")


@dataclass(frozen=True, slots=True, kw_only=True)
class WalkTimings:
    p50_ms: float
    p99_ms: float
    queries: int


def time_walks(
    projection: GraphProjection,
    requests: Sequence[WalkRequest],
    settings: GraphSettings,
    *,
    limit: int = 20,
) -> WalkTimings:
    """Per-query latency of the graph stage as the pipeline runs it: phase 1 (a walk from the
    query's entities), then the expansion (a walk from the entities and the vector seeds, and the
    seeds' bridge links); after one warm-up walk per weighting."""
    for r in requests[:1]:
        walk(projection, r, settings, limit=limit)
    times = []
    for r in requests:
        started = time.perf_counter()
        walk(projection, replace(r, seeds={}), settings, limit=limit)
        walk(projection, r, settings, limit=limit)
        bridge_links(projection, r.seeds, settings)
        times.append((time.perf_counter() - started) * 1000.0)
    ordered = sorted(times)
    return WalkTimings(
        p50_ms=statistics.median(ordered),
        p99_ms=ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))],
        queries=len(ordered),
    )


def random_requests(
    projection: GraphProjection, count: int, *, entities: int = 3, seeds: int = 8, rng_seed: int = 1
) -> list[WalkRequest]:
    """Requests shaped like a query's: a few named entities and the top vector hits (random
    chunks, scores falling with rank), walked with the multi-hop profile."""
    rng = np.random.default_rng(rng_seed)
    kinds = projection.nodes.kinds
    chunk_rows = np.flatnonzero(kinds == 0)
    entity_rows = np.flatnonzero(kinds == 1)
    weights = relation_weights(PROFILES[QueryType.MULTI_HOP])
    out = []
    for _ in range(count):
        ents = rng.choice(entity_rows, size=min(entities, entity_rows.size), replace=False)
        hits = rng.choice(chunk_rows, size=min(seeds, chunk_rows.size), replace=False)
        out.append(
            WalkRequest(
                entities={int(e): 1.0 for e in ents},
                seeds={int(c): 1.0 / (1 + i) for i, c in enumerate(hits)},
                weights=weights,
            )
        )
    return out


def projection_figures(
    projection: GraphProjection,
    requests: Sequence[WalkRequest],
    settings: GraphSettings,
    add: Callable[[str, float, str], None],
) -> None:
    """Rows for one projection: size, memory per edge, build and walk latency."""
    timings = time_walks(projection, requests, settings)
    info = describe(projection)  # after the walks: cached transitions count as memory too
    add("projection nodes", info["nodes"], "")
    add("projection edges", info["edges"], "")
    add("projection build", info["build_s"], "s")
    add("projection memory", info["bytes"] / 2**20, "MiB")
    add("projection memory per edge", info["bytes"] / max(1, info["edges"]), "bytes")
    add("graph stage (phase 1 + expansion) p50", timings.p50_ms, "ms")
    add("graph stage (phase 1 + expansion) p99", timings.p99_ms, "ms")
