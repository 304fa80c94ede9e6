"""Read a BEIR-format data set folder: `corpus.jsonl`, `queries.jsonl`, `qrels/<split>.tsv`.

Only the files' documented fields are used (`_id`, `title`, `text`; `query-id`, `corpus-id`,
`score`). Every problem is reported as a `SourceError` naming the file (and line) at fault, so a
broken evaluation set fails loudly instead of quietly scoring against half the judgements.

`parse_corpus_line` is the one corpus record parser: `rayweave ingest --beir` runs it in its read
tasks, `iter_corpus` streams a file through it (the ingest benches, `readers.read_beir_corpus`,
`load_corpus`), and `index_corpus` keeps only the ids, which is all `rayweave eval` needs to check
its judgements (the corpus itself is read by the ingest pipeline, not held in the driver).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rayweave.cluster.errors import SourceError


@dataclass(frozen=True, slots=True, kw_only=True)
class BeirDocument:
    id: str
    title: str
    text: str

    def full_text(self, sep: str = " ") -> str:
        """Title and body as BEIR's dense baselines embed them (`title + sep + text`, stripped)."""
        return f"{self.title}{sep}{self.text}".strip() if self.title else self.text.strip()


@dataclass(frozen=True, slots=True, kw_only=True)
class BeirDataset:
    """One loaded data set. Queries without a judgement are dropped (they cannot be scored)."""

    name: str
    corpus: dict[str, BeirDocument]
    """Empty when loaded with `corpus=False` (the ids are in `index`)."""
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    index: CorpusIndex | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CorpusIndex:
    """What one streaming pass over `corpus.jsonl` keeps: the ids and the record lines."""

    path: Path
    ids: frozenset[str] = field(repr=False)
    lines: int
    """Non-blank lines: the rows a pipeline reading the file will see (bad ones included)."""


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


# -- corpus.jsonl --------------------------------------------------------------------------------


def parse_corpus_record(row: object, *, where: str, path: str | None = None) -> BeirDocument:
    """One corpus record (`_id` string or number, `text` string, optional `title` string)."""
    if not isinstance(row, Mapping):
        raise SourceError(f"{where}: record is not a JSON object", path=path)
    doc_id = row.get("_id")
    if isinstance(doc_id, bool) or not isinstance(doc_id, str | int) or str(doc_id) == "":
        raise SourceError(f"{where}: missing or invalid '_id'", path=path)
    text = row.get("text")
    title = row.get("title") or ""
    if text is None:
        raise SourceError(f"{where}: missing field 'text' for _id {str(doc_id)!r}", path=path)
    if not isinstance(text, str) or not isinstance(title, str):
        raise SourceError(f"{where}: 'text' and 'title' must be strings", path=path)
    return BeirDocument(id=str(doc_id), title=title, text=text)


def parse_corpus_line(line: str, *, where: str, path: str | None = None) -> BeirDocument:
    """One line of `corpus.jsonl`; a problem raises `SourceError` prefixed with `where`."""
    try:
        row = json.loads(line.lstrip("\ufeff"))
    except json.JSONDecodeError as exc:
        raise SourceError(
            f"{where}: invalid JSON: {exc.msg} at column {exc.colno}", path=path
        ) from exc
    return parse_corpus_record(row, where=where, path=path)


OnError = Callable[[int, str], None]
"""Called with (line number, reason) for a bad record; reading goes on."""


def iter_corpus(
    path: Path | str, *, on_error: OnError | None = None
) -> Iterator[tuple[int, BeirDocument]]:
    """(line number, record) for each record of a `corpus.jsonl`, streamed, duplicates refused.

    A bad line raises `SourceError` naming file and line, unless `on_error` takes it. A missing
    file and a corpus without a valid record always raise.
    """
    corpus = Path(path)
    source = str(corpus)
    try:
        handle = corpus.open("rb")
    except FileNotFoundError:
        raise SourceError(f"BEIR corpus {corpus} does not exist", path=source) from None
    except OSError as exc:
        raise SourceError(f"BEIR corpus {corpus} cannot be read: {exc}", path=source) from exc
    seen: set[str] = set()
    with handle:
        for lineno, raw in enumerate(handle, 1):
            where = f"{source}:{lineno}"
            try:
                try:
                    line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
                except UnicodeDecodeError as exc:
                    raise SourceError(
                        f"{where}: invalid UTF-8 at byte {exc.start} of the line", path=source
                    ) from exc
                if not line.strip():
                    continue
                record = parse_corpus_line(line, where=where, path=source)
                if record.id in seen:
                    raise SourceError(f"{where}: duplicate _id {record.id!r}", path=source)
            except SourceError as exc:
                if on_error is None:
                    raise
                on_error(lineno, str(exc).removeprefix(f"{where}: "))
                continue
            seen.add(record.id)
            yield lineno, record
    if not seen:
        raise SourceError(f"empty corpus: {corpus} holds no valid records", path=source)


def index_corpus(path: Path | str, *, on_error: OnError | None = None) -> CorpusIndex:
    """The ids and record lines of a `corpus.jsonl` in one streaming pass (texts are dropped)."""
    lines = 0

    def bad(lineno: int, reason: str) -> None:
        nonlocal lines
        lines += 1
        if on_error is not None:
            on_error(lineno, reason)

    ids: set[str] = set()
    for _lineno, record in iter_corpus(path, on_error=bad if on_error is not None else None):
        ids.add(record.id)
        lines += 1
    return CorpusIndex(path=Path(path), ids=frozenset(ids), lines=lines)


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
