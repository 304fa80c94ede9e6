"""Splitting a share into its documents, each with its own part of what phase 1 kept."""

from __future__ import annotations

from rayweave.cluster.types import Chunk, Level
from rayweave.graph.entities import CollectedNames
from rayweave.graph.share import Kept, Share, by_document


def chunk(cid: str, doc_id: str) -> Chunk:
    return Chunk(id=cid, doc_id=doc_id, level=Level.SECTION, text=cid)


def test_each_document_gets_its_chunks_names_and_keywords_in_first_seen_order() -> None:
    chunks = [chunk("b1", "B"), chunk("a1", "A"), chunk("b2", "B")]
    kept = Kept(
        names=CollectedNames(
            titles={"A": "alpha", "B": "beta", "T": "titled only"},
            headings={"b2": "part two", "a1": "intro"},
            definitions={"b1": [("beta", True)]},
        ),
        doc_keywords={"B": {"k"}},
    )
    split = list(by_document(Share(chunks, {"a1": []}), kept))
    assert [(d, [c.id for c in s.chunks]) for d, s, _ in split] == [
        ("B", ["b1", "b2"]),
        ("A", ["a1"]),
        ("T", []),  # a titled document without chunks still explains its title
    ]
    b = split[0][2]
    assert b.names == CollectedNames(
        titles={"B": "beta"}, headings={"b2": "part two"}, definitions={"b1": [("beta", True)]}
    )
    assert b.doc_keywords == {"B": {"k"}}
    assert split[1][2].doc_keywords == {}
    assert split[1][1].mentions == {"a1": []}
