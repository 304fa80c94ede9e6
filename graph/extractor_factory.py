"""`graph.extractor` to a `GraphExtractor`, and extraction through the store's cache.

The setting names the extractor once for the whole system (`graph/llm_extraction.py` parses it):
an OpenAI-compatible endpoint, a local causal LM, a file of precomputed extractions, or the
spaCy rules. Model answers are cached by text hash (`GraphStore.cached_extractions`); a file or
the rules cost less to run again than to look up, so they are not cached.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from rayweave.cluster.settings import Settings
from rayweave.graph.extraction import (
    Extraction,
    GraphExtractor,
    decode_extraction,
    encode_extraction,
    extraction_key,
)


class ExtractionCache(Protocol):
    def cached_extractions(self, keys: Sequence[str]) -> dict[str, str]: ...

    def cache_extractions(self, values: Mapping[str, str]) -> int: ...


def extractor_identity(settings: Settings) -> str | None:
    """The cache namespace of the configured extractor; None when it is not cached."""
    from rayweave.graph.extraction_prompts import PROMPT_VERSION, TOPIC_PROMPT_VERSION
    from rayweave.graph.llm_extraction import parse_extractor_spec

    spec = settings.graph.extractor
    if spec is None:
        return None
    kind, _ = parse_extractor_spec(spec)
    if kind in ("file", "rules"):
        return None
    # The prompts' version is part of the key: a changed prompt must not reuse old answers.
    prompt = TOPIC_PROMPT_VERSION if settings.graph.extractor_topics else PROMPT_VERSION
    return f"{spec}|{prompt}|{settings.graph.extractor_max_tokens}"


def build_graph_extractor(settings: Settings) -> GraphExtractor | None:
    """The configured extractor, loaded once (an ingest actor calls this in its constructor)."""
    from rayweave.graph.llm_extraction import build_extractor, parse_extractor_spec

    spec = settings.graph.extractor
    if spec is None:
        return None
    kind, target = parse_extractor_spec(spec)
    if kind == "file":
        from rayweave.graph.openie_file import FileExtractor

        return FileExtractor(Path(target).expanduser())
    if kind == "rules":
        from rayweave.graph.rule_extraction import DEFAULT_SPACY_MODEL, RuleExtractor

        return RuleExtractor(spacy_model=settings.models.ner or DEFAULT_SPACY_MODEL)
    from rayweave.models.factory import run_options

    key = settings.graph.extractor_api_key
    return build_extractor(
        spec,
        api_key=key.get_secret_value() if key is not None else None,
        concurrency=settings.graph.extractor_concurrency,
        timeout_s=settings.graph.extractor_timeout_s,
        retries=settings.graph.extractor_retries,
        max_tokens=settings.graph.extractor_max_tokens,
        plan=run_options(settings.models).plan,
        response_format="json" if settings.graph.extractor_json else "text",
        topics=settings.graph.extractor_topics,
        batch_size=settings.graph.extractor_batch_size,
    )


def extract_cached(
    extractor: GraphExtractor,
    texts: Sequence[str],
    *,
    identity: str | None,
    cache: ExtractionCache | None,
) -> tuple[list[Extraction], list[bool]]:
    """One extraction per text and whether it came from the cache: cached answers first, the
    extractor for the rest (each distinct text once), successful answers cached. A failure stays
    a value (`Extraction.error`) and is asked again next time."""
    keys: dict[str, str] = {}
    if cache is not None and identity is not None:
        keys = {t: extraction_key(identity, t) for t in texts}
    hits = cache.cached_extractions(list(keys.values())) if cache is not None and keys else {}
    results = {t: decode_extraction(hits[k]) for t, k in keys.items() if k in hits}
    from_cache = [t in results for t in texts]
    missing = list(dict.fromkeys(t for t in texts if t not in results))
    if missing:
        answers = extractor.extract(missing)
        if len(answers) != len(missing):
            raise ValueError(f"extractor returned {len(answers)} results for {len(missing)} texts")
        results.update(zip(missing, answers, strict=True))
        if cache is not None and keys:
            cache.cache_extractions(
                {
                    keys[t]: encode_extraction(a)
                    for t, a in zip(missing, answers, strict=True)
                    if a.error is None
                }
            )
    return [results[t] for t in texts], from_cache


def file_match_note(path: str, texts: Sequence[str]) -> str:
    """How a `file:` extractor's passages matched the namespace's section texts: what a user
    importing another system's extractions needs to see (chunks without a passage get none)."""
    from rayweave.graph.openie_file import FileExtractor

    extractor = FileExtractor(Path(path).expanduser())
    extractor.extract(list(texts))
    r = extractor.report()
    sample = f" (e.g. {', '.join(r.unused_sample[:3])})" if r.unused_sample else ""
    return (
        f"extractions file {r.path}: {r.chunks_matched} of {r.chunks_matched + r.chunks_unmatched} "
        f"section chunks matched a passage ({r.chunks_unmatched} did not); "
        f"{r.passages_unused} of {r.passages} passages matched no chunk{sample}; "
        f"{r.triples_dropped} malformed triples dropped"
    )
