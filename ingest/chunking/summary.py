"""The document-level chunk's text: an LLM's summary when one is configured, else extractive."""

from __future__ import annotations

from typing import NamedTuple

from rayweave.cluster.settings import IngestSettings
from rayweave.cluster.types import Document
from rayweave.ingest.chunking.chunked import Summarize
from rayweave.ingest.chunking.plans import Plan
from rayweave.ingest.sentences import split_sentences
from rayweave.models.protocols import TokenCounter

__all__ = ["Summary", "document_summary", "pack_summary"]


class Summary(NamedTuple):
    text: str
    tokens: int
    outline: bool  # the code's signatures alone (`Chunk.outline`)


def pack_summary(plan: Plan, budget: int) -> tuple[str, int]:
    """Title and lead as lines, then as much of the outline (headings, signatures) as fits."""
    lines: list[str] = []
    total = 0
    for part, n in plan.summary_parts[: plan.summary_primary]:
        if part and (not lines or total + n <= budget):
            lines.append(part)
            total += n
    outline: list[str] = []
    for part, n in plan.summary_parts[plan.summary_primary :]:
        if total + n + 1 > budget:
            break
        outline.append(part)
        total += n + 1
    if outline:
        lines.append(plan.outline_separator.join(outline))
    return "\n".join(lines), total


def document_summary(
    doc: Document,
    plan: Plan,
    counter: TokenCounter,
    settings: IngestSettings,
    summarize: Summarize | None,
) -> Summary:
    if summarize is not None:
        try:
            generated = (summarize(doc) or "").strip()
        except Exception as exc:  # noqa: BLE001 - an LLM outage must not stop ingestion
            plan.warnings.append(
                f"LLM summary failed ({type(exc).__name__}: {exc}); extractive summary used"
            )
            generated = ""
        if generated:
            sentences = [generated[a:b] for a, b in split_sentences(generated)]
            counts = counter.count_tokens(sentences)
            kept: list[str] = []
            total = 0
            for s, n in zip(sentences, counts, strict=True):
                if kept and total + n > settings.summary_max_tokens:
                    break
                kept.append(s)
                total += int(n)
            return Summary(" ".join(kept), total, outline=False)
    text, total = pack_summary(plan, settings.summary_max_tokens)
    if not text:
        first = plan.sections[0]
        return Summary(plan.text[first.start : first.end], first.tokens, outline=False)
    return Summary(text, total, outline=plan.outline_only)
