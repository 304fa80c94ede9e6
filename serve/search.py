"""The search request path: classify -> retrieve in parallel under one deadline -> fuse -> refine.

`SearchPipeline` depends only on the protocols below. In Ray Serve its components are adapters
over DeploymentHandles (`serve/handle_proxy.py`); the evaluator builds the same pipeline from
in-process objects, so both run this exact code.

Retrieval runs in two phases inside the deadline: phase 1 runs the vector and entity-graph
retrievers and the registered ones (web and any a user adds, `serve/retrievers.py`)
concurrently; phase 2 expands the graph from phase 1's top vector hits (parents, neighbours,
bridge documents). A retriever that raises or misses the deadline is dropped from
fusion and named in `degraded`; the request still succeeds. A retriever that raises is logged
(once per `FAILURE_LOG_EVERY_S` for the same failure) with its exception, and reported to
`on_retriever_failure` (the Serve app counts it: `rayweave_retriever_failures`), so a degraded
answer can always be explained. One failure is not degraded but answered as such: the vector
retriever's collection does not exist (NotFoundError, HTTP 404 naming it and the fix).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from rayweave.cluster.errors import NotFoundError, VectorStoreError
from rayweave.cluster.types import Hit
from rayweave.serve.fusion import cap_per_document, collapse_duplicates, split_per_document
from rayweave.serve.schemas import ContentScope, Profile, QueryType
from rayweave.serve.tracing import stage
from rayweave.serve.views import MATCHED_LEVELS, DocumentView, Evidence, resolve_views

FACTS = "facts"
"""The vector retriever's list of matching facts: walk seeds, never fused as passages."""

READ_TRIES = 2
"""Tries of the page's payload read (see `SearchPipeline._read`)."""

FAILURE_LOG_EVERY_S = 30.0
"""The same retriever failure (retriever, type and message) is logged at most this often; the
next line says how many were left out meanwhile."""

INGEST_FIX = (
    "ingest documents into it first: `rayweave ingest PATH` (--collection NAME for a named one)"
)

log = logging.getLogger(__name__)

FailureHook = Callable[[str, BaseException], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Classification:
    query_type: QueryType
    scope: ContentScope
    keywords: tuple[str, ...] = ()
    # A code question phrased for a web search ("python how to read a csv"): in the asker's words,
    # not the code's (`serve/planning.py`).
    web_phrased: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class RetrievalPlan:
    """What one request runs, decided once from the profile and the query type."""

    profile: Profile
    query_type: QueryType
    scope: ContentScope
    dense: bool = True
    sparse: bool = False
    graph: bool = False
    # Whether the registered retrievers (`serve/retrievers.py`: web, a user's) run.
    extras: bool = False
    refine: str = "off"
    hierarchical: bool = False
    weights: Mapping[str, float] = field(default_factory=dict)
    top_k: int = 10
    candidates: int = 50
    max_per_document: int = 0
    collapse_duplicates: bool = True
    anchor_top: int = 1
    graph_seeds: int = 8
    document_view: DocumentView = "off"
    view_evidence: Evidence = "auto"


@dataclass(frozen=True, slots=True, kw_only=True)
class RetrievalQuery:
    text: str
    plan: RetrievalPlan
    keywords: tuple[str, ...] = ()
    filters: Mapping[str, object] = field(default_factory=dict)
    level: str | None = None
    seeds: tuple[Hit, ...] = ()
    # The facts whose vectors best match the query (`FACTS` list), when the namespace has any:
    # their subjects and objects seed the graph walk (HippoRAG 2's recognition step).
    facts: tuple[Hit, ...] = ()
    conversation_id: str | None = None
    user_id: str | None = None


RankedLists = dict[str, list[Hit]]


class Classifier(Protocol):
    async def classify(self, text: str) -> Classification: ...


class Retriever(Protocol):
    async def retrieve(self, query: RetrievalQuery) -> RankedLists: ...


class GraphRetriever(Protocol):
    async def retrieve(self, query: RetrievalQuery) -> RankedLists:
        """Entity-based search from the query alone (phase 1)."""

    async def expand(self, query: RetrievalQuery) -> RankedLists:
        """Expansion from `query.seeds` (phase 2)."""


class Hydrator(Protocol):
    async def hydrate(self, ids: Sequence[str]) -> dict[str, Hit]:
        """Current, visible payloads of chunk ids (drops ids that are gone or not yet visible)."""


class Fuser(Protocol):
    async def fuse(self, lists: RankedLists, plan: RetrievalPlan) -> list[Hit]: ...


class Refiner(Protocol):
    async def refine(self, query: str, hits: list[Hit], plan: RetrievalPlan) -> list[Hit]: ...


@dataclass(slots=True, kw_only=True)
class SearchOutcome:
    classification: Classification
    plan: RetrievalPlan
    hits: list[Hit]
    degraded: list[str]
    timings_ms: dict[str, float]


class SearchPipeline:
    def __init__(
        self,
        *,
        classifier: Classifier,
        planner: PlanFn,
        vector: Retriever,
        hydrator: Hydrator,
        fuser: Fuser,
        graph: GraphRetriever | None = None,
        retrievers: Mapping[str, Retriever] | None = None,
        refiner: Refiner | None = None,
        deadline_s: float = 2.0,
        read_floor_s: float = 0.5,
        on_retriever_failure: FailureHook | None = None,
    ) -> None:
        self.classifier = classifier
        self.planner = planner
        self.vector = vector
        self.hydrator = hydrator
        self.fuser = fuser
        self.graph = graph
        self.retrievers = dict(retrievers or {})
        self.refiner = refiner
        self.deadline_s = deadline_s
        self.read_floor_s = read_floor_s
        self.on_retriever_failure = on_retriever_failure

    async def search(
        self,
        text: str,
        *,
        top_k: int,
        profile: Profile | None = None,
        query_type: QueryType | None = None,
        filters: Mapping[str, object] | None = None,
        level: str | None = None,
        hierarchical: bool | None = None,
        conversation_id: str | None = None,
        user_id: str | None = None,
    ) -> SearchOutcome:
        started = time.perf_counter()
        deadline = started + self.deadline_s
        timings: dict[str, float] = {}
        degraded: list[str] = []

        with stage("classify"):
            classification = await self.classifier.classify(text)
        if query_type is not None:
            classification = replace(classification, query_type=query_type)
        plan = self.planner(classification, profile=profile, top_k=top_k, hierarchical=hierarchical)
        timings["classify"] = _ms(started)
        query = RetrievalQuery(
            text=text,
            plan=plan,
            keywords=classification.keywords,
            filters=dict(filters or {}),
            level=level,
            conversation_id=conversation_id,
            user_id=user_id,
        )

        phase1: dict[str, Awaitable[RankedLists]] = {"vector": self.vector.retrieve(query)}
        if plan.graph and self.graph is not None:
            phase1["graph"] = self.graph.retrieve(query)
        if plan.extras:
            for name, retriever in self.retrievers.items():
                phase1[name] = retriever.retrieve(query)
        lists = await self._retrieve(phase1, deadline, degraded, timings)

        if plan.graph and self.graph is not None and "graph" not in degraded:
            seeds = _seeds(lists, plan)
            facts = tuple(lists.pop(FACTS, ()))
            if seeds or facts:
                expand = {
                    "graph-expand": self.graph.expand(replace(query, seeds=seeds, facts=facts))
                }
                lists.update(await self._retrieve(expand, deadline, degraded, timings))
        lists.pop(FACTS, None)
        if "vector" in degraded and not any(lists.values()):
            # Nothing to fuse: report emptiness, still not an error.
            return SearchOutcome(
                classification=classification,
                plan=plan,
                hits=[],
                degraded=degraded,
                timings_ms=timings,
            )

        t = time.perf_counter()
        view: DocumentView = "off" if level and level != "any" else plan.document_view
        with stage("fuse", lists=len(lists)):
            lists = resolve_views(lists, view, plan.view_evidence)
            fused = await self.fuser.fuse(lists, plan)
        timings["fuse"] = _ms(t)

        t = time.perf_counter()
        candidates = fused[: max(plan.candidates, plan.top_k)]
        refining = plan.refine != "off" and self.refiner is not None
        hits, folded = await self._page(candidates, plan, query.filters, deadline, refining)
        timings["hydrate"] = _ms(t)

        if refining:
            assert self.refiner is not None
            t = time.perf_counter()
            remaining = deadline - time.perf_counter()
            try:
                with stage("refine", refiner=plan.refine):
                    hits = await asyncio.wait_for(
                        self.refiner.refine(text, hits, plan), timeout=max(remaining, 0.001)
                    )
            except Exception as exc:  # noqa: BLE001 - a failed or late refiner degrades
                degraded.append("refiner")
                if not isinstance(exc, TimeoutError):
                    _failed({"refiner": exc}, self.on_retriever_failure)
            timings["refine"] = _ms(t)
            folded = _folded(hits, plan)
        hits = cap_per_document(folded, max_per_document=plan.max_per_document)
        timings["total"] = _ms(started)
        return SearchOutcome(
            classification=classification,
            plan=plan,
            hits=hits[: plan.top_k],
            degraded=degraded,
            timings_ms=timings,
        )

    async def _page(
        self,
        candidates: Sequence[Hit],
        plan: RetrievalPlan,
        filters: Mapping[str, object],
        deadline: float,
        refining: bool,
    ) -> tuple[list[Hit], list[Hit]]:
        """(the hydrated candidates, the same folded) that the page is cut from.

        Retrievers pass ids, scores and paths; text and metadata are read here, once, for what
        can reach the page: the first 2 x top_k candidates, more only when folding and the
        per-document cap leave the page short. The refiner reads every candidate."""
        window = len(candidates) if refining else min(len(candidates), 2 * plan.top_k)
        hits: list[Hit] = []
        folded: list[Hit] = []
        read = 0
        while True:
            with stage("read page", chunks=window - read):
                hits.extend(await self._hydrated(candidates[read:window], filters, deadline))
            read = window
            if refining:
                return hits, folded
            folded = _folded(hits, plan)
            if read >= len(candidates) or _page_settled(folded, plan):
                return hits, folded
            window = min(len(candidates), 2 * window)

    async def _retrieve(
        self,
        calls: Mapping[str, Awaitable[RankedLists]],
        deadline: float,
        degraded: list[str],
        timings: dict[str, float],
    ) -> RankedLists:
        """`_gather`, with each failure logged and counted; a vector collection that does not
        exist is the request's error (an empty 200 would hide that nothing was ingested)."""
        failures: dict[str, BaseException] = {}
        lists = await _gather(calls, deadline, degraded, timings, failures)
        _failed(failures, self.on_retriever_failure)
        missing = failures.get("vector")
        if isinstance(missing, NotFoundError):
            raise NotFoundError(f"{error_text(missing)}: {INGEST_FIX}") from missing
        return lists

    async def _hydrated(
        self, hits: Sequence[Hit], filters: Mapping[str, object], deadline: float
    ) -> list[Hit]:
        """`hits` over their stored payloads, in one read; gone or hidden chunks dropped.

        External hits (web) are not in the vector store; every other hit is re-read so that only
        visible, current chunks are returned whichever retriever found them."""
        if not hits:
            return []
        current = await self._read([h.id for h in hits if not h.metadata.get("external")], deadline)
        out = [
            h if h.metadata.get("external") else _merge(h, current[h.id])
            for h in hits
            if h.metadata.get("external") or h.id in current
        ]
        if filters:
            # Graph and web hits were found without the vector store's payload filter.
            out = [h for h in out if matches_filters(h, filters)]
        return out

    async def _read(self, ids: Sequence[str], deadline: float) -> dict[str, Hit]:
        """The stored payloads of `ids`, tried at most `READ_TRIES` times. A replica on a node
        that just died can hold a call until the cluster notices (tens of seconds), and the page
        cannot be answered without its text: each try waits what is left of the deadline, but at
        least `read_floor_s`, and the next try goes wherever the router sends it then."""
        failure: BaseException | None = None
        for _ in range(READ_TRIES):
            timeout = max(deadline - time.perf_counter(), self.read_floor_s)
            try:
                return await asyncio.wait_for(self.hydrator.hydrate(ids), timeout=timeout)
            except asyncio.CancelledError as exc:
                if request_cancelled():
                    raise  # the request itself is cancelled
                failure = exc  # cancelled under us: the replica was torn down mid-call
            except Exception as exc:  # noqa: BLE001 - a dying replica raises any Ray error; retried
                failure = exc
        raise VectorStoreError(
            f"reading the page's {len(ids)} chunks failed {READ_TRIES} times: "
            f"{type(failure).__name__}: {failure}"
        ) from failure


def _folded(hits: Sequence[Hit], plan: RetrievalPlan) -> list[Hit]:
    return collapse_duplicates(hits) if plan.collapse_duplicates else list(hits)


def _page_settled(folded: Sequence[Hit], plan: RetrievalPlan) -> bool:
    """Whether the top_k of `folded` (hydrated, copies folded) is final: candidates ranked below
    can only land under hits that the per-document cap keeps in place, once top_k such hits
    exist."""
    head, _ = split_per_document(folded, max_per_document=plan.max_per_document)
    return len(head) >= plan.top_k


class PlanFn(Protocol):
    def __call__(
        self,
        classification: Classification,
        *,
        profile: Profile | None,
        top_k: int,
        hierarchical: bool | None,
    ) -> RetrievalPlan: ...


def request_cancelled() -> bool:
    """Whether the running task is being cancelled (the request's deadline, a client gone),
    as opposed to an awaited call having come back cancelled under it."""
    task = asyncio.current_task()
    return task is None or task.cancelling() > 0


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 2)


async def _timed(name: str, call: Awaitable[RankedLists]) -> tuple[RankedLists, float]:
    started = time.perf_counter()
    with stage(f"retrieve {name}"):
        result = await call
    return result, _ms(started)


async def _gather(
    calls: Mapping[str, Awaitable[RankedLists]],
    deadline: float,
    degraded: list[str],
    timings: dict[str, float],
    failures: dict[str, BaseException] | None = None,
) -> RankedLists:
    """Run retrievers concurrently until the deadline; late or failed ones go to `degraded`, and
    failed ones' exceptions to `failures` (late ones are not failures: the deadline cut them)."""
    tasks = {name: asyncio.ensure_future(_timed(name, call)) for name, call in calls.items()}
    remaining = max(deadline - time.perf_counter(), 0.001)
    _, pending = await asyncio.wait(list(tasks.values()), timeout=remaining)
    for task in pending:
        task.cancel()
    lists: RankedLists = {}
    for name, task in tasks.items():
        # A task cancelled under us (not by the deadline above) degrades like a failed one;
        # `exception()` would raise its CancelledError into the request.
        if task in pending:
            degraded.append(name)
            continue
        failure = asyncio.CancelledError() if task.cancelled() else task.exception()
        if failure is not None:
            degraded.append(name)
            if failures is not None:
                failures[name] = failure
            continue
        result, ms = task.result()
        lists.update(result)
        timings[name] = ms
    return lists


class _FailureLog:
    """Logs each retriever failure with its exception, the same failure at most once per
    `FAILURE_LOG_EVERY_S` (a dead store fails every request the same way)."""

    def __init__(self, every_s: float) -> None:
        self.every_s = every_s
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, str, str], tuple[float, int]] = {}

    def __call__(self, retriever: str, exc: BaseException) -> None:
        text = error_text(exc)
        key = (retriever, type(exc).__name__, text)
        now = time.monotonic()
        with self._lock:
            last, left_out = self._seen.get(key, (float("-inf"), 0))
            if now - last < self.every_s:
                self._seen[key] = (last, left_out + 1)
                return
            if len(self._seen) > 1000:
                self._seen.clear()
            self._seen[key] = (now, 0)
        more = f" ({left_out} more like it in the last {self.every_s:g}s)" if left_out else ""
        log.warning(
            "retriever %s failed, answer degraded: %s: %s%s",
            retriever,
            type(exc).__name__,
            text,
            more,
            exc_info=exc,
        )


_log_failure = _FailureLog(FAILURE_LOG_EVERY_S)


def _failed(failures: Mapping[str, BaseException], hook: FailureHook | None) -> None:
    for name, exc in failures.items():
        _log_failure(name, exc)
        if hook is not None:
            try:
                hook(name, exc)
            except Exception:  # counting must never fail the request
                log.exception("recording the failure of retriever %s failed", name)


def error_text(exc: BaseException) -> str:
    """An exception's message; for one re-raised by Ray (a `RayTaskError` that is also an
    instance of the cause's type) the cause's own, without the remote traceback."""
    cause = getattr(exc, "cause", None)
    return str(cause if isinstance(cause, BaseException) else exc)


def _seeds(lists: RankedLists, plan: RetrievalPlan) -> tuple[Hit, ...]:
    """Top `plan.graph_seeds` vector hits (dense first, then sparse) that seed graph expansion,
    deduplicated."""
    n = plan.graph_seeds
    seen: set[str] = set()
    seeds: list[Hit] = []
    for name in ("dense", "sparse"):
        for hit in lists.get(name, []):
            if hit.id not in seen:
                seen.add(hit.id)
                seeds.append(hit)
            if len(seeds) >= n:
                return tuple(seeds)
    return tuple(seeds)


def matches_filters(hit: Hit, filters: Mapping[str, object]) -> bool:
    """The request's filters (field -> allowed values) over a hydrated hit."""
    fields = {
        "source": hit.source,
        "doc_id": hit.doc_id,
        "content_type": hit.metadata.get("content_type"),
        "language": hit.metadata.get("language"),
    }
    for name, allowed in filters.items():
        if not allowed or name not in fields:
            continue
        values = allowed if isinstance(allowed, list | tuple | set) else [allowed]
        if fields[name] not in values:
            return False
    return True


def _merge(fused: Hit, current: Hit) -> Hit:
    """Fused score, retrievers, paths, the facts behind them and the levels that matched over the
    stored payload (text, source, section)."""
    metadata = current.metadata
    carried = {
        k: fused.metadata[k]
        for k in ("facts", "fact_topics", MATCHED_LEVELS)
        if fused.metadata.get(k)
    }
    if carried:
        metadata = {**metadata, **carried}
    return current.evolve(
        score=fused.score,
        retrievers=fused.retrievers,
        paths=fused.paths,
        metadata=metadata,
    )
