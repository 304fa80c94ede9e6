"""What an ingest run did, for the CLI, `ray job submit` logs and the JSON report."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

DocStatus = Literal["inserted", "updated", "skipped", "failed"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DocumentError:
    """A source that could not be ingested, with the reason; the rest of the run goes on."""

    path: str
    reason: str


MAX_EXTRACTION_ERRORS = 20
"""Failed chunk extractions a summary lists by name (all are counted)."""


@dataclass(slots=True, kw_only=True)
class ExtractionTally:
    """What the graph extractor did for a document's (or a run's) section chunks."""

    extracted: int = 0  # chunks with at least one entity or fact
    empty: int = 0  # answered with nothing (for `file:`, no passage matched the chunk)
    failed: int = 0  # a model error or an answer that could not be parsed; counted, not fatal
    cached: int = 0  # answers reused from the extraction cache (no model call)
    facts: int = 0
    errors: list[str] = field(default_factory=list)

    def count(self, extraction: Any, chunk_id: str, *, cached: bool = False) -> None:
        """Add one chunk's `graph.extraction.Extraction`."""
        self.cached += int(cached)
        if extraction.error is not None:
            self.failed += 1
            if len(self.errors) < MAX_EXTRACTION_ERRORS:
                self.errors.append(f"chunk {chunk_id}: {extraction.error}")
        elif extraction.entities or extraction.statements:
            self.extracted += 1
            self.facts += len(extraction.statements)
        else:
            self.empty += 1

    def merge(self, other: ExtractionTally) -> None:
        self.extracted += other.extracted
        self.empty += other.empty
        self.failed += other.failed
        self.cached += other.cached
        self.facts += other.facts
        room = MAX_EXTRACTION_ERRORS - len(self.errors)
        self.errors.extend(other.errors[: max(room, 0)])

    @property
    def chunks(self) -> int:
        return self.extracted + self.empty + self.failed

    def render(self) -> str:
        return (
            f"extraction: {self.chunks} chunks, {self.extracted} with facts or entities "
            f"({self.facts} facts), {self.empty} empty, {self.failed} failed, "
            f"{self.cached} from the cache"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class DocumentOutcome:
    """One row of the write stage's output."""

    doc_id: str
    source: str
    status: DocStatus
    chunks: int = 0
    vectors: int = 0
    error: str | None = None
    extraction: ExtractionTally | None = None


@dataclass(slots=True, kw_only=True)
class IngestSummary:
    collection: str
    documents_inserted: int = 0
    documents_updated: int = 0
    documents_skipped: int = 0
    documents_failed: int = 0
    chunks: int = 0
    vectors: int = 0
    # What the run changed in the entity layer (`rayweave graph stats` counts the totals).
    graph_entities: int = 0  # entity rows written: new, or changed
    graph_edges_written: int = 0
    graph_edges_deleted: int = 0
    seconds: float = 0.0
    link_seconds: float = 0.0  # of `seconds`: the graph's upkeep after writing (`finalize`)
    link_steps: dict[str, float] = field(default_factory=dict)  # that upkeep's seconds per step
    errors: list[DocumentError] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # by ignore files or globs (folders end in /)
    skipped_types: dict[str, int] = field(default_factory=dict)
    """Files seen but not ingested because of their type, by type (`.gif`, `no extension`)."""
    notes: list[str] = field(default_factory=list)
    """Why some files were not ingested and how to change that (e.g. no image model)."""
    extraction: ExtractionTally | None = None  # set when a graph extractor ran
    stage_stats: str = ""
    """Ray Data's per-operator statistics of the run (`Dataset.stats()`), for finding the stage
    that bounds it (`rayweave bench ingest` keeps them)."""

    @property
    def documents_total(self) -> int:
        return self.documents_inserted + self.documents_updated + self.documents_skipped

    @property
    def files_not_ingested(self) -> int:
        return sum(self.skipped_types.values())

    @property
    def files_seen(self) -> int:
        """Every input the run saw: ingested, unchanged, failed or not ingested for its type."""
        return self.documents_total + self.documents_failed + self.files_not_ingested

    def skip_type(self, kind: str, n: int = 1) -> None:
        self.skipped_types[kind] = self.skipped_types.get(kind, 0) + n

    def add(self, outcome: DocumentOutcome) -> None:
        match outcome.status:
            case "inserted":
                self.documents_inserted += 1
            case "updated":
                self.documents_updated += 1
            case "skipped":
                self.documents_skipped += 1
            case "failed":
                self.add_error(outcome.source, outcome.error or "unknown error")
        self.chunks += outcome.chunks
        self.vectors += outcome.vectors
        if outcome.extraction is not None:
            if self.extraction is None:
                self.extraction = ExtractionTally()
            self.extraction.merge(outcome.extraction)

    def add_error(self, path: str, reason: str) -> None:
        self.documents_failed += 1
        reason = reason.removeprefix(f"{path}: ")  # errors that name their file already
        self.errors.append(DocumentError(path=path, reason=reason))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["documents_total"] = self.documents_total
        data["files_seen"] = self.files_seen
        data["files_not_ingested"] = self.files_not_ingested
        data["documents_per_s"] = self.rate(self.documents_inserted + self.documents_updated)
        data["chunks_per_s"] = self.rate(self.chunks)
        return data

    def rate(self, n: int) -> float:
        return n / self.seconds if self.seconds > 0 else 0.0

    def render(self) -> str:
        not_ingested = ""
        if self.skipped_types:
            kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(self.skipped_types.items()))
            not_ingested = f", {self.files_not_ingested} not ingested by type ({kinds})"
        lines = [
            f"collection {self.collection}: {self.files_seen} seen: "
            f"{self.documents_inserted} inserted, "
            f"{self.documents_updated} updated, {self.documents_skipped} unchanged, "
            f"{self.documents_failed} failed{not_ingested}",
            f"chunks {self.chunks}, vectors {self.vectors}; entity layer: "
            f"{self.graph_entities} entities written, edges {self.graph_edges_written} "
            f"written, {self.graph_edges_deleted} deleted",
            f"{self.seconds:.1f}s (linking {self.link_seconds:.1f}s): "
            f"{self.rate(self.documents_inserted + self.documents_updated):.1f} documents/s, "
            f"{self.rate(self.chunks):.1f} chunks/s",
        ]
        if self.ignored:
            shown = ", ".join(self.ignored[:5]) + (", ..." if len(self.ignored) > 5 else "")
            lines.append(
                f"ignored {len(self.ignored)} paths (.gitignore, .rayweaveignore, ingest "
                f"include/exclude): {shown}"
            )
        if self.extraction is not None:
            lines.append(self.extraction.render())
            lines += [f"  extraction failed: {e}" for e in self.extraction.errors]
        lines += [f"  note: {note}" for note in self.notes]
        for err in self.errors[:50]:
            lines.append(f"  error: {err.path}: {err.reason}")
        if len(self.errors) > 50:
            lines.append(f"  ... and {len(self.errors) - 50} more errors (see --report)")
        return "\n".join(lines)
