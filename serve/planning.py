"""From a classified query and a profile to the retrieval plan (pure).

Fusion weights per content scope encode one measured fact of the dev sets: a weak lexical
retriever must not vote as loudly as dense retrieval on code search (equal-weight RRF of dense and
SPLADE-tiny loses a quarter of dense MRR on cosqa-dev), while on prose the lexical and graph lists
add recall that dense misses. The weights are general defaults, not per-data-set switches.

Anchoring (`RetrievalSettings.anchor_top`) keeps the vector lists' best hit first because the
graph's lists are associative (a shared entity, a bridge) and a short list's rank 1 would outvote
it. An error question is the exception: its graph list follows SOLVES edges, a chunk that names
the error and explains a fix, which is the answer relation itself, so there every list votes
freely (the exception class's own docstring must not lead the page that says how to fix it).
"""

from __future__ import annotations

from functools import partial
from types import MappingProxyType

from rayweave.cluster.settings import RetrievalSettings
from rayweave.serve.schemas import ContentScope, Profile, QueryType
from rayweave.serve.search import Classification, PlanFn, RetrievalPlan

WEIGHTS: MappingProxyType[ContentScope, MappingProxyType[str, float]] = MappingProxyType(
    {
        ContentScope.DOCS: MappingProxyType(
            {
                "dense": 1.0,
                "sparse": 0.7,
                "hierarchical": 0.8,
                "graph": 0.4,
                "graph-expand": 0.4,
                "web": 0.5,
            }
        ),
        ContentScope.CODE: MappingProxyType(
            {
                # On natural-language code search every list added to dense cost MRR (cosqa-dev:
                # sparse/graph at 0.25/0.3/0.5 took 0.525 to 0.463). At 0.05 a list's rank-1 vote
                # (0.05/61 in RRF) moves a hit about three places near the top, which docstring-
                # style questions over library code gain from (MRR +0.025; docs/experiments/
                # 2026-11-28-content-evidence.md); web-phrased questions get `WEB_PHRASED_CODE`.
                "dense": 1.0,
                "sparse": 0.05,
                "hierarchical": 0.6,
                "graph": 0.05,
                "graph-expand": 0.05,
                "web": 0.3,
            }
        ),
        ContentScope.WEB: MappingProxyType(
            {
                "dense": 1.0,
                "sparse": 0.5,
                "hierarchical": 0.5,
                "graph": 0.3,
                "graph-expand": 0.5,
                "web": 1.0,
            }
        ),
    }
)


# A code question phrased for a web search ("python how to read a csv file") is in the asker's
# words, not the code's. The lexical and entity lists match the code's own words (identifiers,
# docstrings); a docstring-style description of library code is in those words, and there their
# votes add MRR 0.02 (CodeSearchNet's familiar finding that BM25 is strong on docstring queries).
# On cosqa-dev's web questions they add nothing at any weight: at 0.05 they cost dense MRR 0.008
# and Recall@2 0.020, and even as a tie-break (0.02/61, enough to swap two neighbouring dense
# ranks) they cost Recall@5 0.010 with fp32 encoders. So they do not vote there; they still run,
# and what they find is kept as evidence
# (docs/experiments/2026-11-28-web-phrased-code-questions.md).
WEB_PHRASED_CODE: MappingProxyType[str, float] = MappingProxyType(
    {**WEIGHTS[ContentScope.CODE], "sparse": 0.0, "graph": 0.0, "graph-expand": 0.0}
)


def weights_for(classification: Classification, *, dense: bool) -> MappingProxyType[str, float]:
    """The fusion weights of a classified query, before `retriever_weights` overrides: a
    web-phrased code question is ranked by dense search where the profile runs it (a sparse
    profile's only list must still rank)."""
    if dense and classification.scope is ContentScope.CODE and classification.web_phrased:
        return WEB_PHRASED_CODE
    return WEIGHTS[classification.scope]


def make_plan(
    classification: Classification,
    *,
    profile: Profile | None,
    top_k: int,
    hierarchical: bool | None,
    settings: RetrievalSettings,
) -> RetrievalPlan:
    chosen = profile or Profile(settings.default_profile)
    dense = chosen is not Profile.SPARSE
    sparse = chosen in (Profile.SPARSE, Profile.HYBRID, Profile.GRAPH, Profile.FULL)
    graph = chosen in (Profile.GRAPH, Profile.FULL)
    return RetrievalPlan(
        profile=chosen,
        query_type=classification.query_type,
        scope=classification.scope,
        dense=dense,
        sparse=sparse,
        graph=graph,
        extras=chosen in (Profile.GRAPH, Profile.FULL),
        refine=settings.refiner if chosen is Profile.FULL else "off",
        hierarchical=settings.hierarchical if hierarchical is None else hierarchical,
        weights={**weights_for(classification, dense=dense), **settings.retriever_weights},
        top_k=top_k,
        candidates=max(settings.candidates, top_k),
        max_per_document=settings.max_per_document,
        collapse_duplicates=settings.collapse_duplicates,
        anchor_top=0 if classification.query_type is QueryType.ERROR else settings.anchor_top,
        graph_seeds=settings.graph_seeds,
        document_view=settings.document_view,
        view_evidence=settings.view_evidence,
    )


def planner(settings: RetrievalSettings) -> PlanFn:
    """`make_plan` bound to settings: the pipeline's `PlanFn`."""
    return partial(make_plan, settings=settings)


__all__ = ["WEB_PHRASED_CODE", "WEIGHTS", "QueryType", "make_plan", "planner", "weights_for"]
