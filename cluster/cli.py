"""The `rayweave` command line: a thin edge that builds Settings and calls one function per command.

Every command accepts `--config FILE` (a rayweave.toml); environment variables with the
`RAYWEAVE_` prefix override the file. Errors from the tree in `rayweave.cluster.errors` print as
one line naming the problem and exit with status 2 (bad input) or 1 (anything else).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from rayweave.cluster import __version__
from rayweave.cluster.errors import InputError, RayweaveError
from rayweave.cluster.logging_setup import configure_logging
from rayweave.cluster.settings import Settings, load_settings

app = typer.Typer(
    name="rayweave",
    help="Ray-distributed embedding and retrieval for technical documentation and code.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
bench_app = typer.Typer(help="Benchmarks that print figures and ratios.", no_args_is_help=True)
graph_app = typer.Typer(help="Maintain the knowledge graph.", no_args_is_help=True)
app.add_typer(bench_app, name="bench")
app.add_typer(graph_app, name="graph")

# Without a terminal (logs, CI, `ray job submit`) rich would wrap tables at 80 columns.
console = Console(stderr=True, width=None if sys.stderr.isatty() else 160)
out = Console(width=None if sys.stdout.isatty() else 160)

ConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--config", "-c", help="rayweave.toml to read (default: ./rayweave.toml if present)."
    ),
]
CollectionOpt = Annotated[
    str | None, typer.Option("--collection", help="Namespace (vector collection + graph scope).")
]
DATA_ENV = "RAYWEAVE_DATA"
DataOpt = Annotated[
    Path | None,
    typer.Option(
        "--data",
        envvar=DATA_ENV,
        show_envvar=True,
        help="Folder of BEIR data sets, one folder per set (hotpotqa-dev/corpus.jsonl, ...).",
    ),
]
LimitOpt = Annotated[int | None, typer.Option(help="Use at most this many documents per set.")]
JsonOutOpt = Annotated[
    Path | None, typer.Option("--json", help="Also write the rows as JSON here.")
]

T = TypeVar("T")


def _settings(config: Path | None, collection: str | None = None, **overrides: Any) -> Settings:
    from rayweave.cluster.services.runtime import apply_ray_environment

    settings = load_settings(config, **overrides)
    configure_logging(settings.log_level)
    apply_ray_environment(settings)
    if collection:
        settings = settings.model_copy(
            update={"qdrant": settings.qdrant.model_copy(update={"collection": collection})}
        )
        # Re-validate so the collection name pattern is checked.
        settings = Settings(**settings.model_dump())
    return settings


def _data_dir(data: Path | None) -> Path:
    """The --data folder of the development-set benchmarks: given, and a folder."""
    if data is None:
        raise InputError(
            f"no data folder: pass --data DIR (or set {DATA_ENV}=DIR), a folder holding one "
            "BEIR data set per folder, such as DIR/hotpotqa-dev/corpus.jsonl"
        )
    folder = data.expanduser()
    if not folder.is_dir():
        raise InputError(f"--data {data}: no such folder (a folder of BEIR data sets)")
    return folder


def _run(fn: Callable[[], T]) -> T:
    try:
        return fn()
    except InputError as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from None
    except RayweaveError as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(1) from None


@contextmanager
def ray_output_to_log(settings: Settings) -> Iterator[Path]:
    """Send what Ray writes to this process's stdout and stderr to `ray_console_log`, and rayweave's
    own consoles to the terminal.

    Ray prints from places no setting reaches: its C++ core worker logs errors straight to file
    descriptor 2 (Ray Data's actors always pass their transformer through the object store, which
    draws a restartability warning), Ray Data warns on its console handler, and a listener thread
    echoes raylet notices ("8 PYTHON worker processes have been started"). A user should see the
    progress bar and the summary; Ray's lines stay in that file and in Ray's session logs."""
    from rayweave.cluster.services.runtime import ray_console_log

    log = ray_console_log(settings)
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved_out, saved_err = os.dup(1), os.dup(2)
    terminal_out = os.fdopen(saved_out, "w", buffering=1, encoding="utf-8", errors="replace")
    terminal_err = os.fdopen(saved_err, "w", buffering=1, encoding="utf-8", errors="replace")
    out.file, console.file = terminal_out, terminal_err
    with log.open("ab") as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            yield log
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved_out, 1)
            os.dup2(saved_err, 2)
            out.file, console.file = None, None  # type: ignore[assignment]
            terminal_out.close()
            terminal_err.close()


def _version(value: bool) -> None:
    if value:
        out.print(f"rayweave {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """Ray-distributed embedding and retrieval for technical documentation and code."""


@app.command()
def ingest(
    paths: Annotated[
        list[Path], typer.Argument(help="Files or folders to ingest.", show_default=False)
    ],
    config: ConfigOpt = None,
    collection: CollectionOpt = None,
    beir: Annotated[
        bool, typer.Option("--beir", help="PATH is a BEIR folder: ingest its corpus.jsonl records.")
    ] = False,
    report: Annotated[
        Path | None, typer.Option("--report", help="Write the run summary and errors as JSON here.")
    ] = None,
) -> None:
    """Chunk, embed and store documents (vectors in Qdrant, structure in the graph).

    Runs a Ray Data pipeline on the configured cluster (the embedded local head by default).
    Unchanged documents are skipped, changed ones replaced; files that cannot be read are
    listed with their reason while the rest is ingested.
    """
    from rayweave.ingest.pipeline import run_ingest

    settings = _run(lambda: _settings(config, collection))
    with ray_output_to_log(settings):
        summary = _run(lambda: run_ingest(settings, paths, beir=beir, console=console))
        out.print(summary.render(), markup=False, highlight=False)
    if report:
        report.write_text(json.dumps(summary.to_dict(), indent=2))
    if summary.documents_total == 0 and summary.errors:
        raise typer.Exit(2)


@app.command()
def delete(
    targets: Annotated[
        list[str],
        typer.Argument(
            help="Files, folders (also ones gone from disk) or document ids to remove.",
            show_default=False,
        ),
    ],
    config: ConfigOpt = None,
    collection: CollectionOpt = None,
) -> None:
    """Remove documents: their chunks, vectors, graph edges and orphaned entities."""
    from rayweave.ingest.pipeline import delete_documents

    settings = _run(lambda: _settings(config, collection))
    with ray_output_to_log(settings):
        removed = _run(lambda: delete_documents(settings, targets))
    out.print(f"removed {removed} document(s)")


@app.command()
def serve(
    config: ConfigOpt = None,
    collection: CollectionOpt = None,
    host: Annotated[str | None, typer.Option(help="HTTP bind host.")] = None,
    port: Annotated[int | None, typer.Option(help="HTTP port.")] = None,
    blocking: Annotated[
        bool, typer.Option("--blocking", help="Stay in the foreground until Ctrl-C.")
    ] = False,
) -> None:
    """Deploy the Ray Serve app (ingress, classifier, retrievers, fusion, refiner) over HTTP."""
    serve_overrides = {k: v for k, v in {"host": host, "port": port}.items() if v is not None}
    settings = _run(lambda: _settings(config, collection))
    # Only now: serve.app imports Ray, which reads RAY_AUTH_MODE (set by _settings) at import.
    from rayweave.serve.app import deploy

    if serve_overrides:
        settings = Settings(
            **{**settings.model_dump(), "serve": {**settings.serve.model_dump(), **serve_overrides}}
        )
    with ray_output_to_log(settings):
        url = _run(lambda: deploy(settings, console=console))
    out.print(f"serving on {url}  (POST {url}/v1/search, docs at {url}/docs)")
    if blocking:
        import time

        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


@app.command()
def query(
    text: Annotated[str, typer.Argument(help="The question or search text.", show_default=False)],
    config: ConfigOpt = None,
    top_k: Annotated[int | None, typer.Option("--top-k", "-k", help="Number of results.")] = None,
    profile: Annotated[
        str | None, typer.Option(help="Retrieval profile (default: by query type).")
    ] = None,
    url: Annotated[str | None, typer.Option(help="Ingress URL (default: from settings).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the raw JSON response.")] = False,
    answer: Annotated[
        bool,
        typer.Option(
            "--answer", help="Ask for an LLM answer too (needs models.llm; says why not)."
        ),
    ] = False,
) -> None:
    """Ask the running Serve app over HTTP and print the ranked results."""
    from rayweave.serve.client import search_over_http

    settings = _run(lambda: _settings(config))
    response = _run(
        lambda: search_over_http(
            settings,
            text,
            top_k=top_k,
            profile=profile,
            url=url,
            # A local LM on CPU may take minutes; the search alone stays at 60 s.
            timeout_s=600.0 if answer else 60.0,
            answer=answer,
        )
    )
    if as_json:
        out.print_json(data=response)
        return
    if answer:
        out.print(answer_text(response))
    out.print(results_table(response))
    if response.get("degraded"):
        console.print(f"[yellow]degraded:[/yellow] {', '.join(response['degraded'])}")


def answer_text(response: dict[str, Any]) -> Text:
    """The answer of a `/v1/answer` response, or why there is none (as stored, never markup)."""
    if response.get("answer"):
        return Text.assemble(("answer: ", "bold"), str(response["answer"]), "\n")
    note = response.get("answer_note") or "the app returned no answer and no reason"
    return Text.assemble(("no answer: ", "bold yellow"), str(note), "\n")


def results_table(response: dict[str, Any]) -> Table:
    """The ranked hits of a search response as a table.

    Every cell is a `Text`, never markup: corpus text is full of square brackets (Markdown links,
    `list[int]`, `[tool.ruff]`) that rich would otherwise read as style tags and drop."""
    table = Table(
        title=Text(f"{response.get('query_type', '')} · {response.get('profile', '')}"),
        show_lines=True,
    )
    table.add_column("#", justify="right")
    table.add_column("score", justify="right")
    table.add_column("source / section")
    table.add_column("text")
    for i, hit in enumerate(response["results"], 1):
        where = hit["source"] + (
            "\n" + " > ".join(hit["section_path"]) if hit["section_path"] else ""
        )
        if hit.get("duplicates"):
            where += f"\n(+{len(hit['duplicates'])} identical elsewhere)"
        snippet = hit["text"].strip().replace("\n", " ")
        table.add_row(
            str(i),
            f"{hit['score']:.3f}",
            Text(where),
            Text(snippet[:300] + ("…" if len(snippet) > 300 else "")),
        )
    return table


@app.command()
def status(
    config: ConfigOpt = None,
    env: Annotated[
        bool, typer.Option("--env", help="Print only the shell exports for `ray job submit`.")
    ] = False,
) -> None:
    """Show what is running (Ray head, graph server, Serve app) and how to submit jobs."""
    from rayweave.cluster.stack_status import collect_status

    settings = _run(lambda: _settings(config))
    report = _run(lambda: collect_status(settings))
    if env:
        for key, value in report.job_env.items():
            out.print(f"export {key}={value}")
        return
    out.print(report.render())


@app.command()
def stop(config: ConfigOpt = None) -> None:
    """Stop everything rayweave started: the Serve app, the Ray head and the graph server."""
    from rayweave.cluster.stack_status import stop_all

    settings = _run(lambda: _settings(config))
    for line in _run(lambda: stop_all(settings)):
        out.print(line)


@bench_app.command("models")
def bench_models(
    config: ConfigOpt = None,
    data: DataOpt = None,
    limit: LimitOpt = None,
) -> None:
    """Encoder throughput and nDCG per model and precision, against plain sentence-transformers."""
    from rayweave.bench.models import run_models_bench

    data_dir = _run(lambda: _data_dir(data))
    settings = _run(lambda: _settings(config))
    _run(lambda: run_models_bench(settings, data_dir=data_dir, limit=limit, console=out))


@bench_app.command("ingest")
def bench_ingest(
    config: ConfigOpt = None,
    data: DataOpt = None,
    limit: LimitOpt = None,
    dataset: Annotated[
        list[str] | None, typer.Option(help="Data set(s) under --data (default: hotpotqa-dev).")
    ] = None,
    as_json: JsonOutOpt = None,
) -> None:
    """Pipeline documents/s, chunks/s and peak memory against bare SentenceTransformer.encode."""
    from rayweave.bench.ingest import run_ingest_bench

    data_dir = _run(lambda: _data_dir(data))
    settings = _run(lambda: _settings(config))
    with ray_output_to_log(settings):
        _run(
            lambda: run_ingest_bench(
                settings,
                data_dir=data_dir,
                limit=limit,
                console=out,
                datasets=dataset or ("hotpotqa-dev",),
                json_path=as_json,
            )
        )


@bench_app.command("extract")
def bench_extract(
    config: ConfigOpt = None,
    endpoint: Annotated[
        str | None,
        typer.Option(
            help="openai:<base_url>#<model> to measure throughput against (default: the bench's "
            "own deterministic server on 127.0.0.1)."
        ),
    ] = None,
    answer_ms: Annotated[
        float, typer.Option("--answer-ms", min=0, help="The bench server's delay per answer.")
    ] = 50.0,
    chunks: Annotated[
        int, typer.Option(min=1, help="Section chunks to extract (the corpus's first N).")
    ] = 200,
    beir: Annotated[
        Path | None,
        typer.Option(
            "--beir", help="BEIR folder to take the chunks from (default: sample corpus)."
        ),
    ] = None,
    ingest: Annotated[
        bool,
        typer.Option(
            help="Also ingest the chunks' documents without an extractor, with one against the "
            "bench server, and again from the cache, into fresh namespaces."
        ),
    ] = True,
    rounds: Annotated[
        int,
        typer.Option(
            min=1,
            help="Repeat the three ingests this many times, alternating whether the one without "
            "an extractor goes first or last, and print each figure's median and range.",
        ),
    ] = 1,
    as_json: JsonOutOpt = None,
) -> None:
    """Extraction chunks/s, requests/s and tokens/s at graph.extractor_concurrency, and what
    extraction and its cache add to an ingest against the server's answer time."""
    from rayweave.bench.extract import run_extract_bench

    settings = _run(lambda: _settings(config))
    with ray_output_to_log(settings):
        _run(
            lambda: run_extract_bench(
                settings,
                endpoint=endpoint,
                answer_ms=answer_ms,
                chunks=chunks,
                beir=beir,
                ingest=ingest,
                rounds=rounds,
                console=out,
                json_path=as_json,
            )
        )


@bench_app.command("serve")
def bench_serve(
    config: ConfigOpt = None,
    collection: CollectionOpt = None,
    data: DataOpt = None,
    queries: Annotated[
        str | None,
        typer.Option(
            help="BEIR set name (under --data) or folder, or queries file "
            "(default: the sample corpus questions)."
        ),
    ] = None,
    requests: Annotated[int, typer.Option(help="Requests per (profile, concurrency) cell.")] = 200,
    concurrency: Annotated[
        list[int] | None, typer.Option(help="Client counts (repeatable; default 1, 8, 32).")
    ] = None,
    profile: Annotated[
        list[str] | None,
        typer.Option(help="Profiles (repeatable; default dense, hybrid, hybrid+graph)."),
    ] = None,
    url: Annotated[
        str | None, typer.Option(help="Ingress URL (default: from settings; deploys if idle).")
    ] = None,
    anchor: Annotated[
        bool,
        typer.Option(
            "--anchor",
            help="Also run the cells against a one-process sentence-transformers + numpy server "
            "over the same chunks, and show QPS and p50 as ratios to it.",
        ),
    ] = False,
    rounds: Annotated[
        int,
        typer.Option(
            min=1,
            help="Repeat the app's and the anchor's cells this many times, alternating which "
            "goes first, and print each cell's median ratio with its range.",
        ),
    ] = 1,
    tracing: Annotated[
        bool,
        typer.Option(
            "--tracing",
            help="Then restart Serve with every request traced (serve.tracing='file', ratio 1) "
            "and run the same cells again, as '<profile> traced' rows: tracing's CPU per request.",
        ),
    ] = False,
    as_json: JsonOutOpt = None,
) -> None:
    """HTTP load on 127.0.0.1: p50/p95/p99 latency, QPS and CPU-ms per request per stage at 1, 8
    and 32 clients per profile."""
    from rayweave.bench.serve import DEFAULT_CONCURRENCY, DEFAULT_PROFILES, run_serve_bench

    settings = _run(lambda: _settings(config, collection))
    with ray_output_to_log(settings):
        _run(
            lambda: run_serve_bench(
                settings,
                data_dir=data,
                queries=queries,
                requests=requests,
                concurrency=concurrency or DEFAULT_CONCURRENCY,
                profiles=profile or DEFAULT_PROFILES,
                url=url,
                anchor=anchor,
                rounds=rounds,
                tracing=tracing,
                json_path=as_json,
                console=out,
            )
        )


@bench_app.command("graph")
def bench_graph(
    config: ConfigOpt = None,
    data: DataOpt = None,
    corpora: Annotated[
        list[str] | None,
        typer.Option("--corpus", help="Data set folder(s) under --data (default: all three)."),
    ] = None,
    max_queries: Annotated[
        int | None, typer.Option(min=1, help="Queries per corpus (default: all).")
    ] = None,
    synthetic: Annotated[
        bool, typer.Option(help="Also build and walk the synthetic 100k-passage graph.")
    ] = True,
) -> None:
    """Graph build and write rates, Cypher traversal and in-memory walk latency (p50/p99) and the
    projection's size, on the dev corpora and a synthetic 100k-passage / 1M-edge graph."""
    from rayweave.bench.graph import DEFAULT_SYNTHETIC, run_graph_bench

    data_dir = _run(lambda: _data_dir(data))
    settings = _run(lambda: _settings(config))
    _run(
        lambda: run_graph_bench(
            settings,
            data_dir=data_dir,
            corpora=corpora or ["hotpotqa-dev", "musique-dev", "cosqa-dev"],
            max_queries=max_queries,
            synthetic=DEFAULT_SYNTHETIC if synthetic else None,
            console=out,
        )
    )


@bench_app.command("update")
def bench_update(
    collections: Annotated[
        list[str],
        typer.Option(
            "--collection",
            help="Ingested namespace(s) to measure (repeat for sizes; the added document "
            "repeats a section of the first).",
        ),
    ],
    config: ConfigOpt = None,
    as_json: JsonOutOpt = None,
) -> None:
    """One document added and deleted per namespace, incremental upkeep beside the full pass,
    the projection's delta refresh beside a whole load, and the full rebuild's time and peak
    driver memory."""
    from rayweave.bench.update import run_update_bench

    settings = _run(lambda: _settings(config))
    with ray_output_to_log(settings):
        _run(lambda: run_update_bench(settings, collections, console=out, json_path=as_json))


@bench_app.command("code-set")
def bench_code_set(
    out_dir: Annotated[Path, typer.Argument(help="Folder to write the BEIR set into.")],
    package: Annotated[
        list[str] | None,
        typer.Option(
            help="Installed package to draw functions from (repeatable; default ten "
            "pure-Python libraries rayweave's install brings)."
        ),
    ] = None,
    queries: Annotated[int, typer.Option(min=1, help="Queries (one function each).")] = 300,
    max_documents: Annotated[int, typer.Option(min=1, help="Functions in the corpus.")] = 3500,
    seed: Annotated[int, typer.Option(help="Sampling seed.")] = 7,
) -> None:
    """Build a CodeSearchNet-style set (docstring sentence -> the function without it) from
    installed libraries, for `rayweave eval`: code search that no development set holds."""
    from rayweave.bench.code_set import DEFAULT_PACKAGES, build_code_set, package_root

    def build() -> None:
        roots = {name: package_root(name) for name in package or DEFAULT_PACKAGES}
        made = build_code_set(
            roots, out_dir, queries=queries, max_documents=max_documents, seed=seed
        )
        out.print(
            f"{out_dir}: {made.documents} functions of {made.functions} found in "
            f"{len(roots)} packages, {made.queries} queries",
            highlight=False,
        )

    _run(build)


@app.command("eval")
def evaluate(
    dataset: Annotated[
        Path, typer.Argument(help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/).")
    ],
    config: ConfigOpt = None,
    profile: Annotated[
        list[str] | None,
        typer.Option(help="Profile(s) to evaluate (default: the default profile)."),
    ] = None,
    ablation: Annotated[
        bool, typer.Option("--ablation", help="Run every profile side by side.")
    ] = False,
    report: Annotated[
        Path | None, typer.Option("--report", help="Write the JSON report here.")
    ] = None,
    max_queries: Annotated[
        int | None,
        typer.Option(min=1, help="Score only the first N judged queries (default: all)."),
    ] = None,
    fresh: Annotated[
        bool,
        typer.Option(
            "--fresh",
            help="Drop the set's namespace and ingest it again (default: skip unchanged).",
        ),
    ] = False,
) -> None:
    """Ingest a BEIR set into its own namespace and score retrieval (nDCG, MRR, Recall, ...)."""
    from rayweave.bench.evaluation.harness import run_eval

    settings = _run(lambda: _settings(config))
    with ray_output_to_log(settings):
        _run(
            lambda: run_eval(
                settings,
                dataset,
                profiles=profile or [],
                ablation=ablation,
                max_queries=max_queries,
                fresh=fresh,
                report_path=report,
                console=out,
            )
        )


@graph_app.command("prune")
def graph_prune(
    config: ConfigOpt = None,
    collection: CollectionOpt = None,
    min_confidence: Annotated[
        float | None,
        typer.Option(
            help="Remove inferred edges below this confidence "
            "(default: graph.prune_min_confidence)."
        ),
    ] = None,
    retention_days: Annotated[
        float | None,
        typer.Option(
            help="Remove conversations idle this many days; 0 keeps them "
            "(default: graph.conversation_retention_days)."
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Report what would be removed; change nothing.")
    ] = False,
) -> None:
    """Remove weak inferred edges, orphan entities, orphan chunks and stale conversations."""
    from rayweave.graph.store.maintenance import prune_graph

    settings = _run(lambda: _settings(config, collection))
    result = _run(
        lambda: prune_graph(
            settings, min_confidence=min_confidence, retention_days=retention_days, dry_run=dry_run
        )
    )
    out.print(result.render(), markup=False, highlight=False)


@graph_app.command("rebuild")
def graph_rebuild(config: ConfigOpt = None, collection: CollectionOpt = None) -> None:
    """Rebuild the namespace's entity layer, synonyms and facts from its stored chunks, writing
    every row (after settings that shape the graph changed, or to repair): a Ray job over shares
    of the documents, on every node of the cluster."""
    from rayweave.cluster.services.graph_server import resolve_graph_connection
    from rayweave.cluster.services.runtime import connect
    from rayweave.ingest.pipeline import finalize

    settings = _run(lambda: _settings(config, collection))
    name = settings.qdrant.collection
    with ray_output_to_log(settings), console.status(f"graph rebuild {name}") as shown:
        _run(lambda: connect(settings))
        _run(lambda: resolve_graph_connection(settings))

        def progress(step: str) -> None:
            shown.update(f"graph rebuild {name}: {step}")

        done = _run(lambda: finalize(settings, name, rebuild=True, progress=progress))
    out.print(
        f"graph {name}: {done.entities} entities written, edges {done.edges_written} written, "
        f"{done.edges_deleted} deleted"
    )


@graph_app.command("stats")
def graph_stats(config: ConfigOpt = None, collection: CollectionOpt = None) -> None:
    """Count the namespace's graph: nodes per label, relationships per type (a walk of every
    relationship, so not part of an ingest's report)."""
    from rayweave.graph.store import open_graph_store

    settings = _run(lambda: _settings(config, collection))
    graph = _run(lambda: open_graph_store(settings, namespace=settings.qdrant.collection))
    try:
        counts = _run(graph.counts)
    finally:
        graph.close()
    out.print(counts.render(settings.qdrant.collection), markup=False, highlight=False)


@graph_app.command("export-extractions")
def graph_export_extractions(
    path: Annotated[Path, typer.Argument(help="OpenIE JSON file to write.", show_default=False)],
    config: ConfigOpt = None,
    collection: CollectionOpt = None,
) -> None:
    """Write the namespace's stored extractions as HippoRAG OpenIE JSON, which
    graph.extractor = "file:PATH" reads back."""
    from rayweave.graph.extraction_export import export_extractions

    settings = _run(lambda: _settings(config, collection))
    summary = _run(lambda: export_extractions(settings, path))
    out.print(summary.render(), markup=False, highlight=False)


@app.command("config-docs")
def config_docs(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")
    ] = None,
) -> None:
    """Print the configuration reference (docs/configuration.md) generated from the settings."""
    from rayweave.cluster.config_reference import render_reference

    text = render_reference()
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        console.print("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
