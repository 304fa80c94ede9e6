"""From paths and BEIR corpora to `Document`s, with every problem reported by path and reason.

Three steps the Ray pipeline can distribute: `discover` walks the inputs once on the driver (cheap:
names and `stat` only), `read_document` turns one discovered file into a `Document` (or raises a
`SourceError` naming the file and the reason) and may run in read tasks; `read_documents` does
both in-process for small corpora and tests. The walk follows symlinked folders but remembers each
folder it entered, so a symlink loop is reported instead of walked forever; FIFOs and devices are
never opened (opening a FIFO blocks).

Bad input is explicit: a named path that does not exist raises `SourceError` at once (nothing is
read); files that cannot be used (binary, invalid UTF-8, too big, unreadable, broken links) become
`ReadError` records and the rest is ingested; a corpus that yields no document raises.
"""

from __future__ import annotations

import codecs
import errno
import os
import re
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

import pathspec

from rayweave.cluster.beir import BeirDocument, iter_corpus, parse_corpus_record
from rayweave.cluster.errors import SourceError
from rayweave.cluster.settings import IngestSettings
from rayweave.cluster.types import ContentType, Document, content_hash, stable_id
from rayweave.ingest.content_types import (
    Detected,
    from_extension,
    image_format,
    sniff_text,
)
from rayweave.ingest.notebooks import load_notebook
from rayweave.ingest.titles import code_title, guess_title

_BINARY_PROBE = 8192
_MB = 1024 * 1024
_CONTROL = re.compile(rb"[\x00-\x08\x0e-\x1a\x1c-\x1f]")


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadError:
    """One input that could not be used, and why. `line` is set for corpus records."""

    path: str
    reason: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.reason}"


@dataclass(frozen=True, slots=True, kw_only=True)
class DiscoveredFile:
    """A file found by `discover`: where it is, what it is called relative to its root."""

    path: str
    relative: str
    content_type: ContentType | None = None
    language: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Discovery:
    files: tuple[DiscoveredFile, ...]
    errors: tuple[ReadError, ...]
    skipped_types: Mapping[str, int] = field(default_factory=dict)
    """Files ignored while walking because their type is not ingested, by type (`file_type`)."""
    ignored: tuple[str, ...] = ()
    """Paths left out by `.gitignore` / `.rayweaveignore` rules or the include/exclude globs;
    a folder (ending in `/`) is one entry and was not walked."""

    @property
    def skipped(self) -> int:
        return sum(self.skipped_types.values())


def file_type(name: str) -> str:
    """A file's type as the ingest summary names it: its extension, lower-case (`.gif`), or
    `no extension`."""
    suffix = PurePath(name).suffix.lower()
    return suffix if suffix else "no extension"


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadResult:
    documents: list[Document] = field(default_factory=list)
    errors: list[ReadError] = field(default_factory=list)


# -- file selection ------------------------------------------------------------------------------

IGNORE_FILES = (".gitignore", ".rayweaveignore")
"""Read in every walked folder, in this order (a `.rayweaveignore` rule wins over `.gitignore`)."""


def _spec(lines: Sequence[str]) -> pathspec.GitIgnoreSpec | None:
    """Patterns with gitignore semantics (`pathspec`'s gitwildmatch), or None when there are
    none."""
    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    return spec if any(p.include is not None for p in spec.patterns) else None


@dataclass(frozen=True, slots=True)
class _Rules:
    """One ignore file (or the settings' globs): its patterns and the folder they are relative
    to."""

    spec: pathspec.GitIgnoreSpec
    base: str  # folder of the ignore file relative to the walk root, "" or ending in "/"

    def verdict(self, rel: str) -> bool | None:
        """True: ignored, False: re-included by a `!` rule, None: no rule here speaks of `rel`."""
        if not rel.startswith(self.base):
            return None
        return self.spec.check_file(rel[len(self.base) :]).include


def _ignored(rules: Sequence[_Rules], rel: str) -> bool:
    """Git's precedence: the deepest ignore file with a matching rule decides, later rules first."""
    ignored = False
    for r in rules:
        verdict = r.verdict(rel)
        if verdict is not None:
            ignored = verdict
    return ignored


# -- discovery -----------------------------------------------------------------------------------


def _os_reason(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "symlink loop (too many levels of symbolic links)"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if exc.errno == errno.ENOENT:
        return "broken symlink (target does not exist)"
    return exc.strerror or str(exc)


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def discover(paths: Sequence[str | os.PathLike[str]], settings: IngestSettings) -> Discovery:
    """Walk files and folders; a named path that does not exist raises `SourceError`.

    Files under folders are kept when their extension names a type we ingest, no ignore file
    (`.gitignore` unless `settings.respect_gitignore` is off, `.rayweaveignore`) in the folder or
    above it up to the walked one ignores them, and the globs allow them (`settings.include`,
    empty = all; `settings.exclude`); all patterns have gitignore semantics. A file named
    explicitly is kept whatever its extension (its content is sniffed) and whatever the rules.
    Output order is deterministic.
    """
    if not paths:
        raise SourceError("no input paths given")
    include = _spec(settings.include)
    exclude = _spec(settings.exclude)
    names = IGNORE_FILES if settings.respect_gitignore else IGNORE_FILES[1:]
    files: list[DiscoveredFile] = []
    errors: list[ReadError] = []
    ignored: list[str] = []
    seen: set[str] = set()
    skipped: dict[str, int] = {}

    def add(path: str, relative: str, detected: Detected | None) -> None:
        resolved = os.path.realpath(path)
        if resolved in seen:  # reached twice through symlinks: one document, one id
            return
        seen.add(resolved)
        files.append(
            DiscoveredFile(
                path=path,
                relative=relative,
                content_type=detected.content_type if detected else None,
                language=detected.language if detected else None,
            )
        )

    for raw in paths:
        top = Path(os.path.abspath(os.path.expanduser(os.fspath(raw))))
        if not os.path.lexists(top):
            raise SourceError(f"input path {top} does not exist", path=str(top))
        try:
            st = os.stat(top)
        except OSError as exc:
            errors.append(ReadError(path=str(top), reason=_os_reason(exc)))
            continue
        if stat.S_ISDIR(st.st_mode):
            _Walk(include, exclude, names, add, errors, ignored, skipped).run(top)
        elif stat.S_ISREG(st.st_mode):
            add(str(top), top.name, from_extension(top))
        else:
            errors.append(
                ReadError(path=str(top), reason=f"{_kind(st.st_mode)}, not a file or folder")
            )
    return Discovery(
        files=tuple(files), errors=tuple(errors), skipped_types=skipped, ignored=tuple(ignored)
    )


@dataclass(slots=True)
class _Walk:
    """One folder walk: the selection rules, where results go, and the folders already entered."""

    include: pathspec.GitIgnoreSpec | None
    exclude: pathspec.GitIgnoreSpec | None
    ignore_files: Sequence[str]
    add: Callable[[str, str, Detected | None], None]
    errors: list[ReadError]
    ignored: list[str]
    skipped: dict[str, int]  # files not ingested for their type, by type

    def run(self, root: Path) -> None:
        """Walk `root`."""
        visited: dict[tuple[int, int], str] = {}
        base: tuple[_Rules, ...] = (_Rules(self.exclude, ""),) if self.exclude else ()
        stack: list[tuple[str, str, tuple[_Rules, ...]]] = [(str(root), "", base)]
        while stack:
            folder, rel, rules = stack.pop()
            try:
                st = os.stat(folder)
            except OSError as exc:
                self.errors.append(ReadError(path=folder, reason=_os_reason(exc)))
                continue
            key = (st.st_dev, st.st_ino)
            if key in visited:
                self.errors.append(
                    ReadError(
                        path=folder,
                        reason=f"symlink loop: leads back to {visited[key]}, not walked again",
                    )
                )
                continue
            visited[key] = folder
            try:
                with os.scandir(folder) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError as exc:
                self.errors.append(
                    ReadError(path=folder, reason=f"cannot list folder: {_os_reason(exc)}")
                )
                continue
            rules = self._with_ignore_files(folder, rel, entries, rules)
            subfolders: list[tuple[str, str, tuple[_Rules, ...]]] = []
            for entry in entries:
                entry_rel = f"{rel}/{entry.name}" if rel else entry.name
                try:
                    is_dir = entry.is_dir()
                    is_file = not is_dir and entry.is_file()
                except OSError as exc:
                    self.errors.append(ReadError(path=entry.path, reason=_os_reason(exc)))
                    continue
                if is_dir:
                    if _ignored(rules, entry_rel + "/"):
                        self.ignored.append(entry.path + "/")
                    else:
                        subfolders.append((entry.path, entry_rel, rules))
                    continue
                if _ignored(rules, entry_rel) or (
                    self.include is not None and not self.include.match_file(entry_rel)
                ):
                    self.ignored.append(entry.path)
                    continue
                detected = from_extension(entry.name)
                if not is_file:
                    # Broken or looping symlinks and special files: report those that look like
                    # input.
                    if entry.is_symlink() or detected is not None:
                        try:
                            mode = os.stat(entry.path).st_mode
                            reason = _kind(mode)
                        except OSError as exc:
                            reason = _os_reason(exc)
                        self.errors.append(ReadError(path=entry.path, reason=reason))
                    continue
                if detected is None:
                    kind = file_type(entry.name)
                    self.skipped[kind] = self.skipped.get(kind, 0) + 1
                    continue
                self.add(entry.path, entry_rel, detected)
            stack.extend(reversed(subfolders))

    def _with_ignore_files(
        self, folder: str, rel: str, entries: Sequence[os.DirEntry[str]], rules: tuple[_Rules, ...]
    ) -> tuple[_Rules, ...]:
        """`rules` plus the ignore files of `folder`; they come before the globs (which win)."""
        present = {e.name for e in entries}
        found: list[_Rules] = []
        for name in self.ignore_files:
            if name not in present:
                continue
            path = os.path.join(folder, name)
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    spec = _spec(fh.read().splitlines())
            except OSError as exc:
                self.errors.append(ReadError(path=path, reason=f"cannot read: {_os_reason(exc)}"))
                continue
            if spec is not None:
                found.append(_Rules(spec, f"{rel}/" if rel else ""))
        if not found:
            return rules
        globs = rules[-1:] if self.exclude is not None else ()
        return (*rules[: len(rules) - len(globs)], *found, *globs)


# -- reading -------------------------------------------------------------------------------------


def _decode(data: bytes, path: str) -> str:
    """UTF-8 (BOM stripped) or BOM-marked UTF-16; binary and invalid UTF-8 raise with the place."""
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise SourceError(f"{path}: invalid UTF-16 at byte {exc.start}", path=path) from exc
    probe = data[:_BINARY_PROBE]
    if b"\x00" in probe:
        raise SourceError(f"{path}: binary content (NUL bytes), not text", path=path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise SourceError(
            f"{path}: invalid UTF-8 at byte {exc.start} (line {line}); re-encode the file as UTF-8",
            path=path,
        ) from exc
    if probe and len(_CONTROL.findall(probe)) > len(probe) // 20:
        raise SourceError(f"{path}: binary content (control characters), not text", path=path)
    return text


def _file_title(path: Path, text: str, detected: Detected) -> str:
    if detected.content_type == ContentType.CODE:
        return code_title(text, detected.language) or path.name
    if detected.content_type == ContentType.IMAGE:
        return path.stem.replace("_", " ").replace("-", " ")
    return guess_title(text, detected.content_type, detected.language) or path.stem


def read_document(
    file: DiscoveredFile | str | os.PathLike[str], settings: IngestSettings
) -> Document:
    """Read one file into a `Document`; every failure raises `SourceError` naming the file.

    `id` derives from the resolved path (stable across runs and symlinked views), `content_hash`
    from the bytes, so an unchanged file maps to an unchanged document.
    """
    if not isinstance(file, DiscoveredFile):
        p = os.path.abspath(os.fspath(file))
        det = from_extension(p)
        file = DiscoveredFile(
            path=p,
            relative=os.path.basename(p),
            content_type=det.content_type if det else None,
            language=det.language if det else None,
        )
    path = file.path
    try:
        st = os.stat(path)
    except OSError as exc:
        raise SourceError(f"{path}: {_os_reason(exc)}", path=path) from exc
    if not stat.S_ISREG(st.st_mode):
        raise SourceError(f"{path}: {_kind(st.st_mode)}", path=path)
    limit = settings.max_file_mb * _MB
    if st.st_size > limit:
        raise SourceError(
            f"{path}: {st.st_size / _MB:.1f} MB is above "
            f"ingest.max_file_mb={settings.max_file_mb:g}",
            path=path,
        )
    if st.st_size == 0:
        raise SourceError(f"{path}: empty file", path=path)
    try:
        with open(path, "rb") as fh:
            data = fh.read(int(limit) + 1)
    except OSError as exc:
        raise SourceError(f"{path}: cannot read: {_os_reason(exc)}", path=path) from exc
    if len(data) > limit:  # grew since stat
        raise SourceError(f"{path}: above ingest.max_file_mb={settings.max_file_mb:g}", path=path)

    resolved = os.path.realpath(path)
    base: dict[str, Any] = {
        "id": document_id_for(resolved),
        "source": resolved,
        "content_hash": content_hash(data),
        "metadata": {"path": file.relative, "bytes": len(data)},
    }
    name = Path(path)
    if file.content_type == ContentType.IMAGE:
        fmt = image_format(data[:16])
        if fmt is None:
            raise SourceError(f"{path}: not a PNG or JPEG image (unknown magic bytes)", path=path)
        detected = Detected(ContentType.IMAGE, fmt)
        title = _file_title(name, "", detected)
        return Document(
            title=title,
            content_type=ContentType.IMAGE,
            text=title,
            language=fmt,
            **base,
        )

    text = _decode(data, path).replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise SourceError(f"{path}: no text (only whitespace)", path=path)
    if file.content_type is None or file.content_type == ContentType.TEXT:
        sniffed = sniff_text(text)
        detected = (
            sniffed
            if file.content_type is None
            or sniffed.content_type
            in (
                ContentType.MARKDOWN,
                ContentType.RST,
            )
            else Detected(ContentType.TEXT)
        )
    else:
        detected = Detected(file.content_type, file.language)
    if detected.content_type == ContentType.NOTEBOOK:
        _check_notebook(text, path)
    return Document(
        title=_file_title(name, text, detected),
        content_type=detected.content_type,
        text=text,
        language=detected.language,
        **base,
    )


def _check_notebook(text: str, path: str) -> None:
    try:
        load_notebook(text)
    except SourceError as exc:
        raise SourceError(f"{path}: {exc}", path=path) from exc


def document_id_for(path: str | os.PathLike[str]) -> str:
    """The id `read_document` gives the file at `path` (also for a file already deleted)."""
    doc_id: str = stable_id("file", os.path.realpath(os.fspath(path)))
    return doc_id


def read_documents(paths: Sequence[str | os.PathLike[str]], settings: IngestSettings) -> ReadResult:
    """Discover and read everything in-process; raises `SourceError` when nothing is usable."""
    discovery = discover(paths, settings)
    result = ReadResult(errors=list(discovery.errors))
    for file in discovery.files:
        try:
            result.documents.append(read_document(file, settings))
        except SourceError as exc:
            result.errors.append(ReadError(path=file.path, reason=_reason(exc, file.path)))
    if not result.documents:
        raise empty_corpus_error(paths, result.errors, discovery.skipped, len(discovery.ignored))
    return result


def _reason(exc: SourceError, path: str) -> str:
    message = str(exc)
    prefix = f"{path}: "
    return message[len(prefix) :] if message.startswith(prefix) else message


def empty_corpus_error(
    paths: Sequence[str | os.PathLike[str]],
    errors: Sequence[ReadError],
    skipped: int = 0,
    ignored: int = 0,
) -> SourceError:
    """The error for inputs that yield no document, listing why (first few problems)."""
    names = ", ".join(os.fspath(p) for p in paths)
    detail = []
    if errors:
        shown = "; ".join(str(e) for e in errors[:5])
        more = f" (+{len(errors) - 5} more)" if len(errors) > 5 else ""
        detail.append(f"{len(errors)} unusable: {shown}{more}")
    if skipped:
        detail.append(f"{skipped} files of types that are not ingested")
    if ignored:
        detail.append(f"{ignored} paths ignored by .gitignore/.rayweaveignore or ingest globs")
    why = f": {'; '.join(detail)}" if detail else ""
    return SourceError(f"empty corpus: no ingestible documents in {names}{why}", path=names)


# -- BEIR ----------------------------------------------------------------------------------------


def read_beir_corpus(
    folder: str | os.PathLike[str], *, errors: list[ReadError] | None = None
) -> Iterator[Document]:
    """Documents of a BEIR `corpus.jsonl` (`_id`, `title`, `text`), `id` = `_id`, streamed.

    Records go through the shared parser (`cluster.beir.iter_corpus`). The content type is
    sniffed per record (CoSQA's records are bare Python functions with empty titles:
    CODE/python, titled by the function name). A bad record raises `SourceError` naming file and
    line, unless `errors` is given: then it is appended there and reading goes on. A missing file
    and a corpus without records always raise.
    """
    root = Path(folder).expanduser()
    corpus = root / "corpus.jsonl" if root.is_dir() else root
    if not corpus.exists():
        raise SourceError(f"BEIR corpus {corpus} does not exist", path=str(corpus))
    source = str(corpus.resolve())

    def bad(lineno: int, reason: str) -> None:
        if errors is None:
            raise SourceError(f"{source}:{lineno}: {reason}", path=source)
        errors.append(ReadError(path=source, line=lineno, reason=reason))

    count = 0
    for lineno, record in iter_corpus(source, on_error=bad if errors is not None else None):
        try:
            doc = beir_document(record, source=source, line=lineno)
        except SourceError as exc:
            bad(lineno, _reason(exc, f"{source}:{lineno}"))
            continue
        count += 1
        yield doc
    if count == 0:
        raise SourceError(f"empty corpus: {corpus} holds no valid records", path=str(corpus))


def beir_record_to_document(
    row: Mapping[str, Any], *, source: str | None = None, line: int | None = None
) -> Document:
    """One BEIR corpus record (`_id`, `title`, `text`) as a `Document` with `id` = `_id`.

    A bad record raises `SourceError` naming the source and line when given.
    """
    where = f"{source}:{line}" if source and line is not None else (source or "BEIR record")
    record = parse_corpus_record(row, where=where, path=source)
    return beir_document(record, source=source, line=line)


def beir_document(
    record: BeirDocument, *, source: str | None = None, line: int | None = None
) -> Document:
    """A parsed corpus record as a `Document`; its content type is sniffed from the text (CoSQA
    records are bare Python functions with empty titles: CODE/python, titled by the function
    name). Empty text raises `SourceError`."""
    where = f"{source}:{line}" if source and line is not None else (source or "BEIR record")
    text, title = record.text, record.title
    if not text.strip():
        raise SourceError(f"{where}: empty text for _id {record.id!r}", path=source)
    detected = sniff_text(text)
    if not title and detected.content_type == ContentType.CODE:
        title = _first_definition(text)
    return Document(
        id=record.id,
        source=f"{source}#{record.id}" if source else record.id,
        title=title,
        content_type=detected.content_type,
        text=text,
        language=detected.language,
        content_hash=content_hash(f"{title}\x1f{text}"),
        metadata={"corpus": Path(source).parent.name, "line": line} if source else {},
    )


_DEF_NAME = re.compile(r"\b(?:def|class|function|func|fn|fun)\s+([A-Za-z_$][\w$]*)")


def _first_definition(text: str) -> str:
    m = _DEF_NAME.search(text)
    return m.group(1) if m else ""
