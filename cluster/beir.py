"""The BEIR corpus record format: `corpus.jsonl` lines with `_id`, `title` and `text`.

Only the documented fields are used. Every problem is reported as a `SourceError` naming the file
(and line) at fault, so a broken corpus fails loudly instead of being half read.

`parse_corpus_line` is the one corpus record parser: `rayweave ingest --beir` runs it in its read
tasks, `iter_corpus` streams a file through it (`readers.read_beir_corpus`, the benches' data set
loader in `rayweave.bench.evaluation.beir`), and `index_corpus` keeps only the ids, which is all
`rayweave eval` needs to check its judgements (the corpus itself is read by the ingest pipeline,
not held in the driver).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

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
class CorpusIndex:
    """What one streaming pass over `corpus.jsonl` keeps: the ids and the record lines."""

    path: Path
    ids: frozenset[str] = field(repr=False)
    lines: int
    """Non-blank lines: the rows a pipeline reading the file will see (bad ones included)."""


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
