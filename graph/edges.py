"""Edges the rules make between chunks and entities, and the accumulator that merges them.

Every inferred edge carries a confidence in [0, 1] and the rule (`EdgeSource`) that made it: a
title, heading or definition EXPLAINS its entity; code DEFINES and USES symbols and REFERENCES
other chunks; a chunk that explains a fix SOLVES the error it names; the LLM hook's statements
relate their subject and object.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from rayweave.cluster.types import Chunk, ContentType, Document, Level
from rayweave.graph.entities import CollectedNames, Resolves, error_names
from rayweave.graph.extraction import Extraction
from rayweave.graph.names import is_code_name, normalize_name
from rayweave.graph.schema import EdgeRow, EdgeSource, NodeLabel, NodeRef, PropertyValue, RelType

CONF_TITLE = 0.95
CONF_HEADING = 0.8
CONF_DEFINITION_FIRST = 0.75
CONF_DEFINITION = 0.6
CONF_DEFINES = 0.95
CONF_USES_DEPENDENCY = 0.9
CONF_USES_REFERENCE = 0.7
CONF_REFERENCE_LINK = 0.9
CONF_SOLVES = 0.8
CONF_ERROR_MENTION = 0.7

_FIX_CUES = re.compile(
    r"\b(?:fix(?:e[sd])?|solution|solve[sd]?|resolve[sd]?|workaround|to avoid|make sure|ensure|"
    r"instead|upgrade|downgrade|try|reinstall|set\s+\S+\s+to)\b",
    re.IGNORECASE,
)


def chunk_ref(chunk: Chunk) -> NodeRef:
    """The node a chunk is stored as (a `Level.DOCUMENT` chunk lives on its Document node)."""
    if chunk.level is Level.DOCUMENT:
        return NodeRef(NodeLabel.DOCUMENT, chunk.doc_id)
    label = NodeLabel.SECTION if chunk.level is Level.SECTION else NodeLabel.PROPOSITION
    return NodeRef(label, chunk.id)


def entity_ref(eid: str) -> NodeRef:
    return NodeRef(NodeLabel.ENTITY, eid)


def explains_fix(text: str) -> bool:
    return bool(_FIX_CUES.search(text))


def stronger_source(
    new: EdgeSource, new_conf: float, old: EdgeSource, old_conf: float
) -> EdgeSource:
    """The rule an edge is labelled with when two agree: the more confident one, except that a
    gazetteer match never takes the label from a rule that introduces the entity, and always
    yields it (orphan deletion keeps entities that something other than the gazetteer names)."""
    if (new is EdgeSource.GAZETTEER) != (old is EdgeSource.GAZETTEER):
        return old if new is EdgeSource.GAZETTEER else new
    return new if new_conf > old_conf else old


@dataclass(slots=True)
class EdgeAccumulator:
    """Merges candidate edges per (rel, src, dst): one rule repeated keeps its highest confidence,
    different rules combine by noisy-OR; the edge is credited to its most confident rule (see
    `stronger_source`) and keeps the largest count any rule saw."""

    rows: dict[tuple[RelType, NodeRef, NodeRef], EdgeRow] = field(default_factory=dict)

    def add(
        self,
        rel: RelType,
        src: NodeRef,
        dst: NodeRef,
        *,
        confidence: float,
        source: EdgeSource,
        weight: float | None = None,
        count: int = 1,
        props: Mapping[str, PropertyValue] | None = None,
    ) -> None:
        if src.id == dst.id and src == dst:  # ids differ almost always: no `__eq__` call
            return
        key = (rel, src, dst)
        old = self.rows.get(key)
        if old is None:
            conf = max(confidence, 0.0)
            w = weight if weight is not None else conf
            rule, kept = source, props or {}
        else:
            if old.source is source:
                conf = max(confidence, old.confidence)
            else:
                # Two independent rules agreeing are stronger than either (noisy-OR).
                conf = 1.0 - (1.0 - confidence) * (1.0 - old.confidence)
            w = max(weight if weight is not None else conf, old.weight)
            rule = stronger_source(source, confidence, old.source, old.confidence)
            count, kept = max(count, old.count), props or old.props
        self.rows[key] = EdgeRow(
            rel=rel,
            src=src,
            dst=dst,
            weight=_stored(w),
            confidence=_stored(conf),
            source=rule,
            count=max(count, 0),
            props=dict(kept),
        )

    def add_row(self, row: EdgeRow) -> None:
        """`add` with a made row's values. A row with nothing to merge and final values is kept
        as it is: `add` would build the same row again (250k co-occurrence edges at 10k docs)."""
        src, dst = row.src, row.dst
        if (
            row.count >= 0
            and _final(row.weight, row.confidence)
            and (src.id != dst.id or src != dst)  # ids differ almost always: no `__eq__` call
            and self.rows.setdefault((row.rel, src, dst), row) is row  # one hash of the key
        ):
            return
        self.add(
            row.rel,
            row.src,
            row.dst,
            confidence=row.confidence,
            source=row.source,
            weight=row.weight,
            count=row.count,
            props=row.props,
        )

    def link(
        self,
        rel: RelType,
        src: NodeRef,
        eids: Iterable[str],
        *,
        confidence: float,
        source: EdgeSource,
    ) -> None:
        """`src -rel-> entity` for each of `eids`, all made by one rule."""
        for eid in eids:
            self.add(rel, src, entity_ref(eid), confidence=confidence, source=source)


def _stored(value: float) -> float:
    """A weight or confidence as `EdgeAccumulator` stores it: at most 1, six decimals."""
    return round(min(1.0, value), 6)


def _final(weight: float, confidence: float) -> bool:
    """Whether `EdgeAccumulator.add` would store these values unchanged."""
    return weight == _stored(weight) and confidence == _stored(confidence)


def explains_edges(
    acc: EdgeAccumulator,
    resolver: Resolves,
    chunks: Sequence[Chunk],
    names: CollectedNames,
) -> None:
    """EXPLAINS from titles, headings and definitions."""
    explained = [(chunk_ref(c), *rule) for c in chunks for rule in _explained_by(c, names)]
    # Documents without a Level.DOCUMENT chunk still explain their title.
    explained += [
        (NodeRef(NodeLabel.DOCUMENT, doc_id), norm, CONF_TITLE, EdgeSource.TITLE)
        for doc_id, norm in names.titles.items()
    ]
    for ref, norm, conf, source in explained:
        acc.link(RelType.EXPLAINS, ref, resolver.resolve(norm), confidence=conf, source=source)


def _explained_by(chunk: Chunk, names: CollectedNames) -> Iterator[tuple[str, float, EdgeSource]]:
    """(name, confidence, rule) for each name `chunk` explains: its document's title (on the
    document's own chunk), its heading, and its definitions."""
    if chunk.level is Level.DOCUMENT and chunk.doc_id in names.titles:
        yield names.titles[chunk.doc_id], CONF_TITLE, EdgeSource.TITLE
    if chunk.id in names.headings:
        yield names.headings[chunk.id], CONF_HEADING, EdgeSource.HEADING
    for norm, first in names.definitions.get(chunk.id, ()):
        yield norm, CONF_DEFINITION_FIRST if first else CONF_DEFINITION, EdgeSource.DEFINITION


def code_edges(
    acc: EdgeAccumulator,
    resolver: Resolves,
    chunks: Sequence[Chunk],
    refs: Mapping[str, NodeRef],
    symbol_uses: Mapping[str, Iterable[str]],
) -> None:
    """DEFINES, USES and REFERENCES from code chunks' fields; `refs` maps reference targets to
    nodes (`reference_targets`), `symbol_uses` a code chunk's id to the symbol entities its text
    names (from the gazetteer pass)."""
    for c in chunks:
        ref = chunk_ref(c)
        defined: set[str] = set()
        for sym in c.defined_symbols:
            eids = resolver.resolve(normalize_name(sym))
            defined.update(eids)
            acc.link(RelType.DEFINES, ref, eids, confidence=CONF_DEFINES, source=EdgeSource.CODE)
        for dep in c.dependencies:
            acc.link(
                RelType.USES,
                ref,
                resolver.resolve(normalize_name(dep)),
                confidence=CONF_USES_DEPENDENCY,
                source=EdgeSource.CODE,
            )
        used: list[str] = []
        for target in c.references:
            hit = refs.get(target) or refs.get(_file_name(target))
            if hit is not None and hit != ref:
                acc.add(
                    RelType.REFERENCES,
                    ref,
                    hit,
                    confidence=CONF_REFERENCE_LINK,
                    source=EdgeSource.LINK,
                )
            elif is_code_name(target):
                used.extend(resolver.resolve(normalize_name(target)))
        if c.content_type is ContentType.CODE:
            used.extend(symbol_uses.get(c.id, ()))
        acc.link(
            RelType.USES,
            ref,
            (eid for eid in used if eid not in defined),
            confidence=CONF_USES_REFERENCE,
            source=EdgeSource.CODE,
        )


def error_edges(acc: EdgeAccumulator, resolver: Resolves, chunks: Sequence[Chunk]) -> None:
    """SOLVES where the chunk explains a fix, else MENTIONS."""
    for c in chunks:
        names = error_names(c)
        if not names:
            continue
        # Code that catches an error does not explain how to fix it; prose with fix cues does.
        fix = c.content_type is not ContentType.CODE and explains_fix(c.text)
        for err in names:
            acc.link(
                RelType.SOLVES if fix else RelType.MENTIONS,
                chunk_ref(c),
                resolver.resolve(normalize_name(err)),
                confidence=CONF_SOLVES if fix else CONF_ERROR_MENTION,
                source=EdgeSource.ERROR,
            )


Statement = tuple[str, int, EdgeRow]  # (chunk id, position in it, edge)


def statement_rows(
    resolver: Resolves, chunks: Sequence[Chunk], extractions: Mapping[str, Extraction]
) -> list[Statement]:
    """An extractor's statements: RELATED_TO from subject to object, the predicate kept on the
    edge (the walk follows the relation both ways). Rows of one pair from several chunks merge
    across the corpus (`add_statements`), so each keeps where it came from."""
    out: list[Statement] = []
    for c in chunks:
        ext = extractions.get(c.id)
        if ext is None:
            continue
        for st in ext.statements:
            for s in resolver.resolve(normalize_name(st.subject)):
                for o in resolver.resolve(normalize_name(st.object)):
                    if s == o:
                        continue
                    conf = max(0.0, min(1.0, st.confidence))
                    row = EdgeRow(
                        rel=RelType.RELATED_TO,
                        src=entity_ref(s),
                        dst=entity_ref(o),
                        weight=conf,
                        confidence=conf,
                        source=EdgeSource.LLM,
                        props={"predicate": st.predicate},
                    )
                    out.append((c.id, len(out), row))
    return out


def add_statements(acc: EdgeAccumulator, statements: Iterable[Statement]) -> None:
    """Merge statement rows in chunk order (the last chunk's predicate names a repeated pair)."""
    for _, _, row in sorted(statements, key=lambda s: (s[0], s[1])):
        acc.add_row(row)


TargetRank = tuple[int, str, int]  # what wins when several nodes claim a reference target


def reference_targets(
    chunks: Sequence[Chunk], documents: Sequence[Document], wanted: AbstractSet[str]
) -> dict[str, tuple[TargetRank, NodeRef]]:
    """What each `wanted` reference target can point at, ranked: a chunk id, else a document
    given by id or source, else the first chunk (by id) whose document has that id, source or
    file name. Candidates from shares of a corpus merge by keeping the lowest rank."""
    out: dict[str, tuple[TargetRank, NodeRef]] = {}

    def offer(key: str, rank: TargetRank, ref: NodeRef) -> None:
        if key in wanted and (key not in out or rank < out[key][0]):
            out[key] = (rank, ref)

    for i, d in enumerate(documents):
        ref = NodeRef(NodeLabel.DOCUMENT, d.id)
        for k, key in enumerate((d.id, *_source_keys(d.source))):
            offer(key, (1, f"{i:012d}", k), ref)
    sources: dict[str, tuple[str, ...]] = {}  # a document's chunks share its source
    for c in chunks:
        if c.id in wanted:  # a ref is made only for a wanted key: most keys are not
            offer(c.id, (0, "", 0), chunk_ref(c))
        keys = sources.get(c.source)
        if keys is None:
            keys = sources[c.source] = _source_keys(c.source)
        for k, key in enumerate((c.doc_id, *keys)):
            if key in wanted:
                offer(key, (2, c.id, k), NodeRef(NodeLabel.DOCUMENT, c.doc_id))
    return out


def reference_keys(chunks: Iterable[Chunk]) -> set[str]:
    """The targets the chunks' references may resolve to (each as written, and its file name)."""
    return {key for c in chunks for t in c.references for key in (t, _file_name(t))}


def _source_keys(source: str) -> tuple[str, ...]:
    return (source, _file_name(source)) if source else ()


def _file_name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]
