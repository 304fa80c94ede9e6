"""Read a BEIR-format data set folder: `corpus.jsonl`, `queries.jsonl`, `qrels/<split>.tsv`.

Only the files' documented fields are used (`_id`, `title`, `text`; `query-id`, `corpus-id`,
`score`). Every problem is reported as a `SourceError` naming the file (and line) at fault, so a
broken evaluation set fails loudly instead of quietly scoring against half the judgements. The
one loader of every bench and of `rayweave eval`; corpus records go through the ingest parser
(`rayweave.cluster.beir`).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rayweave.cluster.beir import BeirDocument, CorpusIndex, index_corpus, iter_corpus
from rayweave.cluster.errors import SourceError


@dataclass(frozen=True, slots=True, kw_only=True)
class BeirDataset:
    """One loaded data set. Queries without a judgement are dropped (they cannot be scored)."""

    name: str
    corpus: dict[str, BeirDocument]
    """Empty when loaded with `corpus=False` (the ids are in `index`)."""
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    index: CorpusIndex | None = None


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        handle = path.open(encoding="utf-8")
    except FileNotFoundError:
        raise SourceError(f"BEIR file {path} does not exist", path=str(path)) from None
    except OSError as exc:
        raise SourceError(f"BEIR file {path} cannot be read: {exc}", path=str(path)) from exc
    with handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SourceError(
                    f"{path}:{lineno}: invalid JSON: {exc.msg} at column {exc.colno}",
                    path=str(path),
                ) from exc
            if not isinstance(record, dict):
                raise SourceError(f"{path}:{lineno}: expected a JSON object", path=str(path))
            yield lineno, record


def _field(
    record: dict[str, Any], key: str, path: Path, lineno: int, *, required: bool = True
) -> str:
    value = record.get(key)
    if value is None:
        if required:
            raise SourceError(f"{path}:{lineno}: missing field {key!r}", path=str(path))
        return ""
    return str(value)


def load_corpus(path: Path) -> dict[str, BeirDocument]:
    """The whole corpus in memory (the model benches encode all of it)."""
    return {record.id: record for _lineno, record in iter_corpus(path)}


def load_queries(path: Path) -> dict[str, str]:
    queries: dict[str, str] = {}
    for lineno, record in _jsonl(path):
        queries[_field(record, "_id", path, lineno)] = _field(record, "text", path, lineno)
    if not queries:
        raise SourceError(f"BEIR queries {path} are empty", path=str(path))
    return queries


def load_qrels(path: Path) -> dict[str, dict[str, int]]:
    """`query-id`, `corpus-id`, `score` tab-separated; the header row is optional."""
    qrels: dict[str, dict[str, int]] = {}
    try:
        handle = path.open(encoding="utf-8", newline="")
    except FileNotFoundError:
        raise SourceError(f"BEIR qrels file {path} does not exist", path=str(path)) from None
    with handle:
        for lineno, row in enumerate(csv.reader(handle, delimiter="\t"), start=1):
            if not row or not "".join(row).strip():
                continue
            if lineno == 1 and row[0].strip() == "query-id":
                continue
            if len(row) < 3:
                raise SourceError(
                    f"{path}:{lineno}: expected 'query-id<TAB>corpus-id<TAB>score', got {row!r}",
                    path=str(path),
                )
            try:
                score = int(float(row[2]))
            except ValueError:
                raise SourceError(
                    f"{path}:{lineno}: score {row[2]!r} is not a number", path=str(path)
                ) from None
            qrels.setdefault(row[0].strip(), {})[row[1].strip()] = score
    if not qrels:
        raise SourceError(f"BEIR qrels file {path} holds no judgements", path=str(path))
    return qrels


def load_beir(folder: Path | str, *, split: str = "test", corpus: bool = True) -> BeirDataset:
    """Load a BEIR folder; judgements naming unknown queries or documents are errors.

    `corpus=False` streams the corpus for its ids only (`index`), for callers that score rankings
    of corpus ids without the texts: memory stays at the ids whatever the corpus size.
    """
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise SourceError(f"BEIR data set folder {root} does not exist", path=str(root))
    documents: dict[str, BeirDocument] = {}
    if corpus:
        documents = load_corpus(root / "corpus.jsonl")
        index = CorpusIndex(
            path=root / "corpus.jsonl", ids=frozenset(documents), lines=len(documents)
        )
    else:
        index = index_corpus(root / "corpus.jsonl")
    queries = load_queries(root / "queries.jsonl")
    qrels_path = root / "qrels" / f"{split}.tsv"
    qrels = load_qrels(qrels_path)
    for qid, judged in qrels.items():
        if qid not in queries:
            raise SourceError(
                f"{qrels_path}: query-id {qid!r} is not in queries.jsonl", path=str(qrels_path)
            )
        missing = [doc_id for doc_id in judged if doc_id not in index.ids]
        if missing:
            raise SourceError(
                f"{qrels_path}: corpus-id {missing[0]!r} (query {qid!r}) is not in corpus.jsonl",
                path=str(qrels_path),
            )
    judged_queries = {qid: text for qid, text in queries.items() if qid in qrels}
    return BeirDataset(
        name=root.name, corpus=documents, queries=judged_queries, qrels=qrels, index=index
    )
