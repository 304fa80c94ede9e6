"""HippoRAG's OpenIE results as an extractor: reuse triples someone already paid an LLM for.

HippoRAG writes `{"docs": [{"idx", "passage", "extracted_entities", "extracted_triples"}, ...],
"avg_ent_chars", "avg_ent_words"}` (`openie_results_ner_<llm>.json`). HippoRAG 2 keys `idx` by
the passage's md5 and its passages are usually `"<title>\\n<text>"`; HippoRAG 1 rows are corpus
rows (`idx`, `title`, `text`) plus `passage = title + "\\n" + text`. A bare list of such rows
is accepted too. Rows need a `passage` or a `text`; the two extracted lists may be absent.

Our chunks are not HippoRAG's passages, so each chunk is matched to passages by text, on a key
with whitespace collapsed and case folded. The first rule that gives an answer wins:

1. exact: the chunk is a passage;
2. title: the chunk is a passage give or take a leading title line (the passage's `title`
   field, or a short first line of either text), when exactly one passage fits;
3. contained: the chunk (5+ words) lies inside exactly one passage, as when a chunker split
   it; only the triples with an argument the chunk mentions, and the entities it mentions, go
   with it, so the pieces of one passage do not all repeat all of its facts;
4. merged: one or more passages (5+ words each) lie inside the chunk, as when a chunker joined
   them: their extractions together, in file order.

Rows with the same passage text count once (the first row wins). Lookups go through a word
index and a passage-prefix index, never a scan of every passage per chunk. A chunk that matches
nothing gets an empty `Extraction`, not an error: the file may cover only part of a corpus, and
`FileExtractor.report()` says how much was used.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rayweave.cluster.atomic_file import write_atomically
from rayweave.cluster.errors import ConfigError, reraised_as
from rayweave.cluster.types import Entity
from rayweave.graph.extraction import Extraction, Statement
from rayweave.graph.names import entity_id, normalize_name

MIN_CONTAINED_WORDS = 5  # shorter texts turn up inside other texts by chance
_PREFIX_WORDS = 6  # passage-prefix index key length (shorter passages use all their words)
_MAX_TITLE_WORDS = 12
_UNUSED_SAMPLE = 20
_NON_WORD = re.compile(r"[^\w]+")

Triple = tuple[str, str, str]


def text_key(text: str) -> str:
    """The matching key of a passage or chunk: whitespace collapsed, case folded."""
    return " ".join(text.split()).casefold()


def _mention_form(text: str) -> str:
    """Words only, space-padded, so `" paris "` in a form means the word is there."""
    return f" {_NON_WORD.sub(' ', text.casefold()).strip()} "


def split_title_line(text: str) -> tuple[str, str] | None:
    """`("Title", "body")` when `text` has a short first line and more after it, else None.
    A long first line is a paragraph, not a title: dropping it would drop its facts' text."""
    head, sep, rest = text.strip().partition("\n")
    if not sep or not head.strip() or not rest.strip():
        return None
    if len(head.split()) > _MAX_TITLE_WORDS:
        return None
    return head.strip(), rest


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenIEPassage:
    """One distinct passage of the file with what was extracted from it."""

    position: int  # row number in the file
    idx: str | None
    title: str | None
    text: str  # the `passage` (or `text`) as stored
    entities: tuple[str, ...]
    triples: tuple[Triple, ...]

    @property
    def label(self) -> str:
        """How reports name the passage: its idx, else its title, else its row number."""
        return self.idx or self.title or f"#{self.position}"


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenIEFile:
    """A parsed OpenIE file: distinct passages and what was dropped reading it."""

    path: str
    passages: tuple[OpenIEPassage, ...]
    duplicate_rows: int = 0
    triples_dropped: int = 0
    entities_dropped: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class FileExtractionReport:
    """How a `FileExtractor` used its file so far; `unused_sample` names a few unused passages."""

    path: str
    passages: int
    chunks_matched: int
    chunks_unmatched: int
    matched_exact: int
    matched_title: int
    matched_contained: int
    matched_merged: int
    passages_unused: int
    unused_sample: tuple[str, ...]
    duplicate_rows: int
    triples_dropped: int
    entities_dropped: int


# ---------------------------------------------------------------------------------- reading


def _fail(path: str, why: str) -> ConfigError:
    return ConfigError(f"OpenIE file {path}: {why}")


def _part(value: object) -> str | None:
    """A triple part or entity as text; numbers are accepted (LLMs write years as numbers)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def parse_triples(raw: Iterable[object]) -> tuple[tuple[Triple, ...], int]:
    """Valid `(s, p, o)` triples in order, without repeats, and how many were dropped
    (wrong arity, an empty or non-text part)."""
    out: dict[Triple, None] = {}
    dropped = 0
    for item in raw:
        parts = [_part(p) for p in item] if isinstance(item, list | tuple) else []
        if len(parts) != 3 or None in parts:
            dropped += 1
            continue
        s, p, o = (str(x) for x in parts)
        out.setdefault((s, p, o), None)
    return tuple(out), dropped


def parse_entities(raw: Iterable[object]) -> tuple[tuple[str, ...], int]:
    """Entity names in order, without repeats, and how many were dropped (empty, not text)."""
    out: dict[str, None] = {}
    dropped = 0
    for item in raw:
        name = _part(item)
        if name is None:
            dropped += 1
        else:
            out.setdefault(name, None)
    return tuple(out), dropped


def _rows(path: str, data: object) -> list[object]:
    if isinstance(data, Mapping):
        rows = data.get("docs")
        if not isinstance(rows, list):
            raise _fail(path, 'expected an object with a "docs" list (HippoRAG OpenIE results)')
        return rows
    if isinstance(data, list):
        return data
    raise _fail(path, f'expected an object with a "docs" list, got {type(data).__name__}')


def _optional_str(row: Mapping[str, Any], key: str) -> str | None:
    value = row.get(key)
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _list_field(path: str, row: Mapping[str, Any], key: str, position: int) -> list[object]:
    value = row.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _fail(path, f"docs[{position}].{key} must be a list, got {type(value).__name__}")
    return value


def parse_openie(data: object, *, path: str = "<data>") -> OpenIEFile:
    """Passages of an already-decoded OpenIE document (see module docstring for the shapes)."""
    passages: list[OpenIEPassage] = []
    seen: set[str] = set()
    duplicates = triples_dropped = entities_dropped = 0
    for position, row in enumerate(_rows(path, data)):
        if not isinstance(row, Mapping):
            raise _fail(path, f"docs[{position}] must be an object, got {type(row).__name__}")
        text = row.get("passage")
        if not isinstance(text, str) or not text.strip():
            text = row.get("text")
        if not isinstance(text, str) or not text.strip():
            raise _fail(path, f'docs[{position}] has no "passage" or "text"')
        triples, dropped_t = parse_triples(_list_field(path, row, "extracted_triples", position))
        entities, dropped_e = parse_entities(_list_field(path, row, "extracted_entities", position))
        triples_dropped += dropped_t
        entities_dropped += dropped_e
        key = text_key(text)
        if key in seen:
            duplicates += 1
            continue
        seen.add(key)
        passages.append(
            OpenIEPassage(
                position=position,
                idx=_optional_str(row, "idx"),
                title=_optional_str(row, "title"),
                text=text,
                entities=entities,
                triples=triples,
            )
        )
    return OpenIEFile(
        path=path,
        passages=tuple(passages),
        duplicate_rows=duplicates,
        triples_dropped=triples_dropped,
        entities_dropped=entities_dropped,
    )


def read_openie(path: str | os.PathLike[str]) -> OpenIEFile:
    """Load and parse an OpenIE file; a missing, unreadable or malformed file is a ConfigError
    naming it, since the file is configured, not ingested."""
    name = str(path)
    try:
        raw = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise _fail(name, "no such file") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(name, f"cannot read it: {exc}") from exc
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise _fail(name, f"not valid JSON: {exc}") from exc
    return parse_openie(data, path=name)


# --------------------------------------------------------------------------------- matching


def passage_extraction(passage: OpenIEPassage) -> Extraction:
    """Entities (listed ones, then triple arguments) and statements of one passage."""
    return _build(passage.entities, passage.triples)


def _build(names: Iterable[str], triples: Sequence[Triple]) -> Extraction:
    entities: dict[str, Entity] = {}
    for name in [*names, *(x for s, _, o in triples for x in (s, o))]:
        norm = normalize_name(name)
        if norm:
            eid = entity_id(norm)
            entities.setdefault(eid, Entity(id=eid, name=name, kind="concept"))
    statements = tuple(Statement(subject=s, predicate=p, object=o) for s, p, o in triples)
    return Extraction(entities=tuple(entities.values()), statements=statements)


def _mentioned_part(passage: OpenIEPassage, chunk: str) -> Extraction:
    """The part of a passage's extraction a piece of it mentions (rule 3)."""
    form = _mention_form(chunk)

    def said(name: str) -> bool:
        probe = _mention_form(name)
        return probe.strip() != "" and probe in form

    triples = [t for t in passage.triples if said(t[0]) or said(t[2])]
    return _build([e for e in passage.entities if said(e)], triples)


def _merged(passages: Sequence[OpenIEPassage]) -> Extraction:
    names = [e for p in passages for e in p.entities]
    triples = list(dict.fromkeys(t for p in passages for t in p.triples))
    return _build(names, triples)


def _alternate_keys(passage: OpenIEPassage) -> list[str]:
    """The passage's keys give or take a title line (rule 2)."""
    keys: list[str] = []
    split = split_title_line(passage.text)
    if split is not None:
        keys.append(text_key(split[1]))
    if passage.title and (split is None or text_key(split[0]) != text_key(passage.title)):
        keys.append(text_key(f"{passage.title}\n{passage.text}"))
    primary = text_key(passage.text)
    return [k for k in dict.fromkeys(keys) if k and k != primary]


class PassageIndex:
    """Finds the passages a chunk stands for, by the rules of the module docstring."""

    def __init__(self, passages: Sequence[OpenIEPassage]) -> None:
        self.passages = tuple(passages)
        self._keys = [text_key(p.text) for p in self.passages]
        self._exact = {k: i for i, k in enumerate(self._keys)}
        self._alternate: dict[str, list[int]] = {}
        self._words: dict[str, set[int]] = {}
        self._prefixes: dict[str, list[tuple[int, str]]] = {}
        for i, p in enumerate(self.passages):
            forms = [self._keys[i]]
            for k in _alternate_keys(p):
                self._alternate.setdefault(k, []).append(i)
                forms.append(k)
            for word in set(self._keys[i].split(" ")):
                self._words.setdefault(word, set()).add(i)
            for form in dict.fromkeys(forms):
                words = form.split(" ")
                if len(words) >= MIN_CONTAINED_WORDS:
                    prefix = " ".join(words[:_PREFIX_WORDS])
                    self._prefixes.setdefault(prefix, []).append((i, form))
        self._prefix_lengths = sorted({len(k.split(" ")) for k in self._prefixes})

    def match(self, chunk: str) -> tuple[str, list[int]]:
        """(rule name, passage positions); `("none", [])` when nothing matches."""
        key = text_key(chunk)
        if not key:
            return "none", []
        if key in self._exact:
            return "exact", [self._exact[key]]
        found = self._by_title(key, chunk)
        if found is not None:
            return "title", [found]
        inside = self._containing(key)
        if inside is not None:
            return "contained", [inside]
        merged = self._contained_in(key)
        if merged:
            return "merged", merged
        return "none", []

    def _unique_alternate(self, key: str) -> int | None:
        hits = self._alternate.get(key, [])
        return hits[0] if len(set(hits)) == 1 else None

    def _by_title(self, key: str, chunk: str) -> int | None:
        found = self._unique_alternate(key)
        if found is not None:
            return found
        split = split_title_line(chunk)
        if split is None:
            return None
        body = text_key(split[1])
        if body in self._exact:
            return self._exact[body]
        return self._unique_alternate(body)

    def _containing(self, key: str) -> int | None:
        """The one passage the chunk lies inside. Its first and last words may be cut
        mid-word by a chunker, so only the inner words narrow the candidates."""
        words = key.split(" ")
        if len(words) < MIN_CONTAINED_WORDS:
            return None
        inner = sorted(set(words[1:-1]), key=lambda w: len(self._words.get(w, ())))
        candidates: set[int] | None = None
        for word in inner:
            posting = self._words.get(word)
            if not posting:
                return None
            candidates = set(posting) if candidates is None else candidates & posting
            if len(candidates) <= 1:
                break
        if not candidates:
            return None
        hits = sorted(i for i in candidates if key in self._keys[i])
        return hits[0] if len(hits) == 1 else None

    def _contained_in(self, key: str) -> list[int]:
        """Passages lying inside the chunk, found by their first words at each chunk word."""
        words = key.split(" ")
        hits: set[int] = set()
        for start in range(len(words)):
            for length in self._prefix_lengths:
                if start + length > len(words):
                    break
                for i, form in self._prefixes.get(" ".join(words[start : start + length]), ()):
                    if i not in hits and form in key:
                        hits.add(i)
        return sorted(hits)


class FileExtractor:
    """A `GraphExtractor` that reads answers from a HippoRAG OpenIE file instead of a model.

    The file is read once, here; `extract` is pure lookup, and `report()` counts what matched.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)
        self.file = read_openie(path)
        self._index = PassageIndex(self.file.passages)
        self._extractions = [passage_extraction(p) for p in self.file.passages]
        self._used: set[int] = set()
        self._counts = {"exact": 0, "title": 0, "contained": 0, "merged": 0, "none": 0}

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        if isinstance(texts, str):
            raise TypeError("expected a sequence of texts, got one string; wrap it in a list")
        return [self._extract_one(t) for t in texts]

    def _extract_one(self, text: str) -> Extraction:
        rule, hits = self._index.match(text)
        self._counts[rule] += 1
        self._used.update(hits)
        if not hits:
            return Extraction()
        if rule == "contained":
            return _mentioned_part(self.file.passages[hits[0]], text)
        if len(hits) == 1:
            return self._extractions[hits[0]]
        return _merged([self.file.passages[i] for i in hits])

    def report(self) -> FileExtractionReport:
        unused = [p.label for i, p in enumerate(self.file.passages) if i not in self._used]
        c = self._counts
        return FileExtractionReport(
            path=self.path,
            passages=len(self.file.passages),
            chunks_matched=c["exact"] + c["title"] + c["contained"] + c["merged"],
            chunks_unmatched=c["none"],
            matched_exact=c["exact"],
            matched_title=c["title"],
            matched_contained=c["contained"],
            matched_merged=c["merged"],
            passages_unused=len(unused),
            unused_sample=tuple(unused[:_UNUSED_SAMPLE]),
            duplicate_rows=self.file.duplicate_rows,
            triples_dropped=self.file.triples_dropped,
            entities_dropped=self.file.entities_dropped,
        )


# ---------------------------------------------------------------------------------- writing


def passage_id(text: str) -> str:
    """HippoRAG 2's row id for a passage (`compute_mdhash_id(text, "chunk-")`), so HippoRAG
    recognises rows we export as already extracted."""
    return "chunk-" + hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest()


def openie_document(rows: Iterable[tuple[str, Extraction]]) -> dict[str, Any]:
    """The HippoRAG 2 document for (text, extraction) pairs. Failed extractions are left out
    (an empty row would later read as "extracted, nothing found"); so are repeated texts.
    Confidence, topic and entity kinds have no place in the format and are lost."""
    docs: list[dict[str, Any]] = []
    seen: set[str] = set()
    for text, extraction in rows:
        if extraction.error is not None or text_key(text) in seen or not text.strip():
            continue
        seen.add(text_key(text))
        docs.append(
            {
                "idx": passage_id(text),
                "passage": text,
                "extracted_entities": list(dict.fromkeys(e.name for e in extraction.entities)),
                "extracted_triples": [
                    [s.subject, s.predicate, s.object] for s in extraction.statements
                ],
            }
        )
    names = [e for d in docs for e in d["extracted_entities"]]
    return {
        "docs": docs,
        "avg_ent_chars": round(sum(len(n) for n in names) / len(names), 4) if names else 0,
        "avg_ent_words": round(sum(len(n.split()) for n in names) / len(names), 4) if names else 0,
    }


def write_openie(path: str | os.PathLike[str], rows: Iterable[tuple[str, Extraction]]) -> int:
    """Write (text, extraction) pairs as a HippoRAG OpenIE file (atomically: a reader never sees
    half a file); returns the number of passages written."""
    target = Path(path)
    document = openie_document(rows)
    with reraised_as(ConfigError, f"OpenIE file {target}: cannot write it"):
        write_atomically(target, lambda f: json.dump(document, f, ensure_ascii=False))
    return len(document["docs"])
