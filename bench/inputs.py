"""The benches' inputs: query texts for the serve bench and corpus subsets for the ingest bench.

The default queries ship with the package (`sample_queries.json`: questions over the bundled
sample corpus, each with the files that answer it), so a bench runs without any data set.
"""

from __future__ import annotations

import json
from importlib.resources import as_file, files
from pathlib import Path

from rayweave.bench.evaluation.beir import load_queries
from rayweave.cluster.errors import InputError, SourceError


def sample_queries() -> Path:
    """The bundled questions over the sample corpus (`{"queries": [{"query": ...}]}`)."""
    with as_file(files("rayweave.bench") / "sample_queries.json") as path:
        found = Path(path)
    if not found.is_file():
        raise SourceError(
            f"sample queries not found at {found}: pass a BEIR folder or queries file",
            path=str(found),
        )
    return found


def load_bench_queries(
    source: Path | str | None = None, *, data_dir: Path | None = None
) -> list[str]:
    """Query texts: a BEIR folder or `queries.jsonl`, a data set name under `data_dir`, a JSON file
    shaped like the sample queries (`{"queries": [{"query": ...}]}`), or None for the questions
    over the bundled sample corpus."""
    if source is None:
        path = sample_queries()
    else:
        path = Path(source).expanduser()
        if not path.exists() and data_dir is not None and (Path(data_dir) / path).exists():
            path = Path(data_dir) / path
        if path.is_dir():
            path = path / "queries.jsonl"
        if not path.is_file():
            hint = (
                " (a data set name is looked up under --data DIR or RAYWEAVE_DATA, not given)"
                if data_dir is None and len(Path(source).parts) == 1
                else ""
            )
            raise SourceError(f"bench queries {path} do not exist{hint}", path=str(path))
    if path.suffix == ".jsonl":
        texts = list(load_queries(path).values())
    else:
        try:
            records = json.loads(path.read_text(encoding="utf-8"))["queries"]
            texts = [str(r["query"]) for r in records]
        except (ValueError, KeyError, TypeError) as exc:
            raise SourceError(
                f"{path}: expected {{'queries': [{{'query': ...}}]}} ({exc})", path=str(path)
            ) from exc
    texts = [t for t in texts if t.strip()]
    if not texts:
        raise SourceError(f"bench queries {path} hold no query text", path=str(path))
    return texts


def write_subset(corpus: Path, out: Path, limit: int | None) -> int:
    """Copy the first `limit` records of a BEIR `corpus.jsonl` into folder `out`; returns the
    count."""
    if not corpus.is_file():
        raise SourceError(f"BEIR corpus not found: {corpus}", path=str(corpus))
    if limit is not None and limit < 1:
        raise InputError(f"limit must be >= 1, got {limit}")
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    with corpus.open(encoding="utf-8") as src, (out / "corpus.jsonl").open("w") as dst:
        for line in src:
            if not line.strip():
                continue
            if limit is not None and n >= limit:
                break
            dst.write(line if line.endswith("\n") else line + "\n")
            n += 1
    if n == 0:
        raise SourceError(f"empty corpus: {corpus} has no records", path=str(corpus))
    return n
