"""Chunks to graph properties and back: pure functions, so the round trip is testable alone.

A `Level.DOCUMENT` chunk lives on its Document node; the other levels are Section and
Proposition nodes. The graph keeps no sibling or child ids on a node: those are edges.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from rayweave.cluster.types import Chunk, ContentType, Entity, Level

__all__ = [
    "chunk_from_props",
    "chunk_row",
    "decode_mentions",
    "encode_mentions",
    "structure_links",
    "unique_rows",
]


def encode_mentions(entities: Sequence[Entity]) -> str:
    """JSON, because a Cypher property holds lists of scalars only. A chunk without entities
    keeps '[]': a missing property marks a chunk written before they were kept."""
    return json.dumps([[e.name, e.kind, list(e.aliases)] for e in entities], ensure_ascii=False)


def decode_mentions(text: object) -> list[Entity]:
    return [
        Entity(id="", name=str(name), kind=str(kind), aliases=tuple(aliases))
        for name, kind, aliases in json.loads(str(text))
    ]


def chunk_row(
    c: Chunk,
    *,
    ns: str,
    key: Callable[[str], str],
    mentions: Sequence[Entity],
    extraction: str | None = None,
) -> dict[str, Any]:
    """The UNWIND row `write_chunks` merges for one chunk (`key` maps ids to node keys);
    `extraction` is an extractor's JSON (`graph.extraction.encode_extraction`) when it read one."""
    row: dict[str, Any] = {
        "key": key(c.id),
        "dkey": key(c.doc_id),
        "doc_id": c.doc_id,
        "props": {
            "ns": ns,
            "id": c.id,
            "doc_id": c.doc_id,
            "dkey": key(c.doc_id),
            "level": c.level.value,
            "text": c.text,
            "position": c.position,
            "parent_id": c.parent_id,
            "section_path": list(c.section_path),
            "source": c.source,
            "content_type": c.content_type.value,
            "language": c.language,
            "token_count": c.token_count,
            "keywords": list(c.keywords),
            "error_codes": list(c.error_codes),
            "defined_symbols": list(c.defined_symbols),
            "references": list(c.references),
            "dependencies": list(c.dependencies),
            "mentions": encode_mentions(mentions),
        },
        "title": c.title or None,
    }
    if extraction is not None:
        row["props"]["extraction"] = extraction
    return row


def structure_links(
    c: Chunk, key: Callable[[str], str]
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """HAS_CHILD and NEXT rows (`a` -> `b` keys) from both directions' fields of one chunk, so
    an edge is written from whichever end arrives second."""
    ckey = key(c.id)
    child_rows = [{"a": key(c.parent_id), "b": ckey}] if c.parent_id else []
    child_rows.extend({"a": ckey, "b": key(k)} for k in c.children_ids)
    next_rows = [{"a": key(c.prev_id), "b": ckey}] if c.prev_id else []
    if c.next_id:
        next_rows.append({"a": ckey, "b": key(c.next_id)})
    return child_rows, next_rows


def unique_rows(rows: Iterable[dict[str, str]]) -> list[dict[str, str]]:
    seen: dict[tuple[str, str], dict[str, str]] = {}
    for r in rows:
        seen.setdefault((r["a"], r["b"]), r)
    return list(seen.values())


def chunk_from_props(p: Mapping[str, Any], *, level: Level) -> Chunk:
    return Chunk(
        id=str(p["id"]),
        doc_id=str(p["doc_id"]),
        level=level,
        text=str(p.get("text") or ""),
        position=int(p.get("position") or 0),
        parent_id=p.get("parent_id"),
        section_path=tuple(p.get("section_path") or ()),
        title=str(p.get("title") or ""),
        source=str(p.get("source") or ""),
        content_type=ContentType(p.get("content_type") or "text"),
        language=p.get("language"),
        token_count=int(p.get("token_count") or 0),
        references=tuple(p.get("references") or ()),
        defined_symbols=tuple(p.get("defined_symbols") or ()),
        dependencies=tuple(p.get("dependencies") or ()),
        error_codes=tuple(p.get("error_codes") or ()),
        keywords=tuple(p.get("keywords") or ()),
    )
