"""Documents, chunks and a two-document graph the store tests write."""

from __future__ import annotations

from typing import Any

from rayweave.cluster.types import Chunk, ContentType, Document, Level
from rayweave.graph.schema import (
    EdgeRow,
    EdgeSource,
    EntityRow,
    GraphBatch,
    NodeLabel,
    NodeRef,
    RelType,
    TopicRow,
)
from rayweave.graph.store import GraphStore

D, S, P, E, T = (
    NodeLabel.DOCUMENT,
    NodeLabel.SECTION,
    NodeLabel.PROPOSITION,
    NodeLabel.ENTITY,
    NodeLabel.TOPIC,
)


def doc(doc_id: str, title: str = "") -> Document:
    return Document(
        id=doc_id,
        source=f"{doc_id}.md",
        title=title or doc_id,
        content_type=ContentType.MARKDOWN,
        text="...",
    )


def doc_chunks(doc_id: str, n_sections: int = 2) -> list[Chunk]:
    """A Level.DOCUMENT summary, `n_sections` sections in sequence, one proposition under the
    first."""
    sec = [f"{doc_id}-s{i}" for i in range(n_sections)]
    out = [
        Chunk(
            id=f"{doc_id}-sum",
            doc_id=doc_id,
            level=Level.DOCUMENT,
            text=f"{doc_id} summary",
            children_ids=tuple(sec),
        )
    ]
    for i, sid in enumerate(sec):
        out.append(
            Chunk(
                id=sid,
                doc_id=doc_id,
                level=Level.SECTION,
                text=f"{doc_id} section {i}",
                position=i,
                parent_id=f"{doc_id}-sum",
                prev_id=sec[i - 1] if i > 0 else None,
                next_id=sec[i + 1] if i + 1 < len(sec) else None,
                children_ids=(f"{doc_id}-p0",) if i == 0 else (),
                section_path=("Intro", f"Part {i}"),
                keywords=("alpha", "beta"),
            )
        )
    out.append(
        Chunk(
            id=f"{doc_id}-p0",
            doc_id=doc_id,
            level=Level.PROPOSITION,
            text=f"{doc_id} fact",
            parent_id=sec[0],
        )
    )
    return out


def entity(eid: str, name: str, kind: str = "concept", aliases: tuple[str, ...] = ()) -> EntityRow:
    return EntityRow(id=eid, name=name, kind=kind, aliases=aliases)


def edge(rel: RelType, src: NodeRef, dst: NodeRef, **kw: Any) -> EdgeRow:
    return EdgeRow(rel=rel, src=src, dst=dst, **kw)


def two_doc_edges() -> tuple[EdgeRow, ...]:
    a, a_p0 = NodeRef(D, "a"), NodeRef(P, "a-p0")
    a_s0, b_s1 = NodeRef(S, "a-s0"), NodeRef(S, "b-s1")
    shared, lonely = NodeRef(E, "shared"), NodeRef(E, "lonely")
    extractor, gazetteer = EdgeSource.EXTRACTOR, EdgeSource.GAZETTEER
    return (
        edge(RelType.MENTIONS, a_s0, shared, count=2, confidence=0.8, source=extractor),
        edge(RelType.MENTIONS, b_s1, shared, confidence=0.8, source=extractor),
        edge(RelType.MENTIONS, a_p0, lonely, confidence=0.9, source=gazetteer),
        edge(RelType.EXPLAINS, a, lonely, confidence=0.95, source=EdgeSource.TITLE),
        edge(RelType.BELONGS_TO, a, NodeRef(T, "t1"), confidence=0.5, source=EdgeSource.KEYWORDS),
        edge(
            RelType.RELATED_TO,
            shared,
            lonely,
            weight=0.4,
            confidence=0.4,
            source=EdgeSource.COOCCURRENCE,
        ),
    )


def write_mention_ends(store: GraphStore) -> tuple[NodeRef, NodeRef]:
    """Doc a's chunks and entity e1: the two ends of a MENTIONS edge a test writes over."""
    store.write_chunks(doc_chunks("a"))
    store.write_entities([entity("e1", "Thing")])
    return NodeRef(S, "a-s0"), NodeRef(E, "e1")


def write_two_docs(store: GraphStore) -> None:
    """Docs a and b both mention `shared`; only a mentions `lonely`; a alone belongs to topic t1."""
    store.write_documents([doc("a", "Alpha Doc"), doc("b", "Beta Doc")])
    store.write_chunks(doc_chunks("a") + doc_chunks("b"))
    store.write_batch(
        GraphBatch(
            entities=(
                entity("shared", "Ray Serve", aliases=("serve",)),
                entity("lonely", "Lonely Thing"),
            ),
            topics=(TopicRow(id="t1", name="alpha", keywords=("alpha",)),),
            edges=two_doc_edges(),
        )
    )
