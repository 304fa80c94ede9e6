"""BELONGS_TO kept by delta between upkeeps: the edges `topics_from_counts` gives, recomputed only
for the documents a change reaches and the topics it makes or dissolves.

A document's BELONGS_TO edge to a topic is a function of its keywords and the topic's keywords
alone, and a topic's id names its keywords (`stable_id` of them). So after a change, the edges
of a topic whose id survives differ only at the documents whose keywords changed; a new topic
has every edge anew, and a topic that went takes its edges with it. The topics themselves are
still found from the corpus's keyword counts each pass (a few thousand rows, written whole).

At 10k documents that is 48.5k edges: built as rows, merged and compared with the stored ones,
about 0.3 s of every one-document upkeep, where the delta is a few dozen.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from rayweave.graph.cooccurrence import belongs_edge, belongs_edges
from rayweave.graph.schema import EdgeRow, NodeLabel, NodeRef, RelType, RowsDelta, TopicRow


@dataclass(slots=True)
class BelongsState:
    """Each topic's BELONGS_TO edges by document, as the last pass made (and synced) them."""

    edges: dict[str, dict[str, EdgeRow]]  # topic id -> document id -> its edge
    topics_of: dict[str, set[str]]  # document id -> the topics it has an edge to

    @classmethod
    def of(cls, edges: Sequence[EdgeRow]) -> BelongsState:
        state = cls({}, {})
        for e in edges:
            state._put(e)
        return state

    def _put(self, e: EdgeRow) -> None:
        self.edges.setdefault(e.dst.id, {})[e.src.id] = e
        self.topics_of.setdefault(e.src.id, set()).add(e.dst.id)

    def _drop(self, doc: str, tid: str) -> None:
        del self.edges[tid][doc]
        held = self.topics_of[doc]
        held.discard(tid)
        if not held:
            del self.topics_of[doc]

    def update(
        self,
        topics: Sequence[TopicRow],
        doc_keywords: Mapping[str, AbstractSet[str]],
        changed: AbstractSet[str],
    ) -> tuple[list[EdgeRow], RowsDelta]:
        """The edges of `topics` that can differ from this state's, and which of its edges went;
        `changed`: every document whose keywords can differ from the last pass's (new, gone
        or rewritten). Keeps the state for `topics`."""
        now = {t.id: frozenset(t.keywords) for t in topics}
        gone: list[tuple[NodeRef, NodeRef]] = []
        for tid in [t for t in self.edges if t not in now]:
            for doc in list(self.edges[tid]):
                self._drop(doc, tid)
                gone.append(_ends(doc, tid))
            del self.edges[tid]
        new = [t for t in topics if t.id not in self.edges]
        made = belongs_edges(new, doc_keywords) if new else []
        for t in new:
            self.edges[t.id] = {}
        for e in made:
            self._put(e)
        fresh = {t.id for t in new}
        of_keyword: dict[str, list[str]] = {}
        for tid, members in now.items():
            if tid not in fresh:
                for kw in members:
                    of_keyword.setdefault(kw, []).append(tid)
        for doc in changed:
            keywords = doc_keywords.get(doc, frozenset())
            tids = {t for kw in keywords for t in of_keyword.get(kw, ())}
            tids.update(self.topics_of.get(doc, set()) - fresh)
            for tid in tids:
                edge = belongs_edge(tid, now[tid], doc, keywords)
                if edge is not None:
                    self._put(edge)
                    made.append(edge)
                elif doc in self.edges[tid]:
                    self._drop(doc, tid)
                    gone.append(_ends(doc, tid))
        return made, RowsDelta(rel=RelType.BELONGS_TO, gone=gone)

    def all_edges(self) -> list[EdgeRow]:
        return [e for by_doc in self.edges.values() for e in by_doc.values()]


def _ends(doc: str, tid: str) -> tuple[NodeRef, NodeRef]:
    return NodeRef(NodeLabel.DOCUMENT, doc), NodeRef(NodeLabel.TOPIC, tid)
