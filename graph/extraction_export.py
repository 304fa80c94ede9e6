"""`rayweave graph export-extractions`: a namespace's stored extractions as a HippoRAG OpenIE file.

Each section chunk keeps the extraction it was ingested with (`GraphStore.chunk_extractions`);
written with its text in HippoRAG's OpenIE format (`graph.openie_file.write_openie`), they can be
read back by `graph.extractor = "file:<path>"` (a re-ingest elsewhere, without the model) or by
HippoRAG itself. Confidence, topics and entity kinds have no place in the format and are lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rayweave.cluster.errors import InputError
from rayweave.cluster.settings import Settings

__all__ = ["ExportSummary", "export_extractions"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExportSummary:
    namespace: str
    path: Path
    chunks: int
    """Chunks with a stored extraction."""
    passages: int
    """Passages written (chunks of the same text count once)."""
    statements: int

    def render(self) -> str:
        return (
            f"wrote {self.passages} passages ({self.statements} triples) from {self.chunks} "
            f"chunks of namespace {self.namespace} to {self.path}"
        )


def export_extractions(
    settings: Settings, path: Path, *, namespace: str | None = None
) -> ExportSummary:
    """Write the extractions stored on `namespace`'s chunks (default `settings.qdrant.collection`)
    to `path`; an `InputError` when the namespace has none (nothing is written then)."""
    from rayweave.graph.openie_file import text_key, write_openie
    from rayweave.graph.store import open_graph_store

    ns = namespace or settings.qdrant.collection
    graph = open_graph_store(settings, namespace=ns)
    try:
        extractions = graph.chunk_extractions()
        chunks, _ = graph.chunks_and_mentions() if extractions else ([], {})
    finally:
        graph.close()
    if not extractions:
        raise InputError(
            f"namespace {ns!r} keeps no extractions: ingest it with graph.extractor set "
            "(e.g. RAYWEAVE_GRAPH__EXTRACTOR='openai:<url>#<model>') first"
        )
    rows = [(c.text, extractions[c.id]) for c in chunks if c.id in extractions]
    # One row per text, the first kept, as the file holds it.
    distinct = {text_key(t): (t, x) for t, x in reversed(rows) if t.strip()}
    passages = write_openie(path, rows)
    return ExportSummary(
        namespace=ns,
        path=path,
        chunks=len(rows),
        passages=passages,
        statements=sum(len(x.statements) for _, x in distinct.values()),
    )
