"""The corpus pass's input, every stored chunk with what extractors kept on it, followed from
pass to pass through the change log.

Reading it whole costs about 1 s at 10k documents, whatever changed. A process that runs upkeep
after upkeep (the upkeep actor, `ingest/upkeep_host.py`) keeps the last pass's copy and re-reads
only the documents that a write has touched since: every write of a chunk or a document names
its node in the log, and a delete names the document's node and its chunks'
(`graph/store/change_log.py`). Keys that only the keeping pass's own entries name are not read
again: a pass writes no chunk's content, only edges and entities around it. Keys the copy does
not hold (a new document's, or entities') are looked up as chunk and document nodes. A full
entry, a log compacted past the copy or a namespace written anew: read whole. A file copy
would not pay: unpickling it costs what the read does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from rayweave.cluster.types import Chunk, Entity
from rayweave.graph.edges import chunk_ref
from rayweave.graph.extraction import Extraction
from rayweave.graph.schema import NodeLabel
from rayweave.graph.store import GraphStore
from rayweave.graph.store.change_log import StoreVersion

# Where a node of each label keeps the id of the document it belongs to.
_DOCUMENT_ID = {
    NodeLabel.DOCUMENT: "c.id",
    NodeLabel.SECTION: "c.doc_id",
    NodeLabel.PROPOSITION: "c.doc_id",
}


@dataclass(frozen=True, slots=True)
class DocumentContent:
    chunks: tuple[Chunk, ...]
    mentions: Mapping[str, Sequence[Entity]]
    extractions: Mapping[str, Extraction]
    keys: frozenset[str]  # its Document node's and its chunks' store keys


@dataclass(frozen=True, slots=True)
class CorpusContent:
    """Every document's stored content, true for every document no write after `at` names;
    `made`: the pass that kept it as its input ('' until kept), named alike in its edge memo."""

    at: StoreVersion
    documents: Mapping[str, DocumentContent]
    made: str = ""

    def flat(self) -> tuple[list[Chunk], dict[str, list[Entity]], dict[str, Extraction]]:
        """As `GraphStore.documents_content()` gives it: chunks by id, their mentions and
        extractions keyed in that order."""
        chunks = sorted((c for d in self.documents.values() for c in d.chunks), key=lambda c: c.id)
        mentions: dict[str, list[Entity]] = {}
        extractions: dict[str, Extraction] = {}
        for c in chunks:
            own = self.documents[c.doc_id]
            if (m := own.mentions.get(c.id)) is not None:
                mentions[c.id] = list(m)
            if (x := own.extractions.get(c.id)) is not None:
                extractions[c.id] = x
        return chunks, mentions, extractions


def read_content(
    store: GraphStore, held: CorpusContent | None
) -> tuple[CorpusContent, frozenset[str] | None]:
    """The stored content from `held` and the documents another writer than its pass logged
    since it, when the log allows, else read whole; and the ids of the documents read (None:
    all), those gone included."""
    if held is not None and held.at.stamp is not None:
        changes = store.changes_since(held.at.version, stamp=held.at.stamp, own=held.made)
        if not changes.full:
            touched = _documents_of(store, held, changes.foreign)
            documents = {d: c for d, c in held.documents.items() if d not in touched}
            if touched:
                documents.update(_by_document(store, *store.documents_content(sorted(touched))))
            return CorpusContent(at=changes.to, documents=documents), frozenset(touched)
    at = store.version()
    return CorpusContent(at=at, documents=_by_document(store, *store.documents_content())), None


def _documents_of(store: GraphStore, held: CorpusContent, keys: Iterable[str]) -> set[str]:
    """The ids of the documents whose Document or chunk nodes are among `keys`."""
    keys = set(keys)
    found = {d for d, content in held.documents.items() if not content.keys.isdisjoint(keys)}
    unknown = keys.difference(*(c.keys for c in held.documents.values()))
    if not unknown:
        return found
    for label, doc_id in _DOCUMENT_ID.items():
        rows = store.read_table_by_keys(
            f"MATCH (c:{label.value} {{key: k}})", {"d": doc_id}, sorted(unknown), op="content"
        )
        found.update(str(r["d"]) for r in rows)
    return found


def _by_document(
    store: GraphStore,
    chunks: Sequence[Chunk],
    mentions: Mapping[str, Sequence[Entity]],
    extractions: Mapping[str, Extraction],
) -> dict[str, DocumentContent]:
    return {
        doc_id: DocumentContent(
            chunks=tuple(own),
            mentions={c.id: mentions[c.id] for c in own if c.id in mentions},
            extractions={c.id: extractions[c.id] for c in own if c.id in extractions},
            keys=_keys(store, doc_id, own),
        )
        for doc_id, own in _grouped(chunks).items()
    }


def document_keys(store: GraphStore, chunks: Sequence[Chunk]) -> dict[str, frozenset[str]]:
    """Each document's node keys in the store: its Document's and its chunks'."""
    return {doc_id: _keys(store, doc_id, own) for doc_id, own in _grouped(chunks).items()}


def _grouped(chunks: Iterable[Chunk]) -> dict[str, list[Chunk]]:
    grouped: dict[str, list[Chunk]] = {}
    for c in chunks:
        grouped.setdefault(c.doc_id, []).append(c)
    return grouped


def _keys(store: GraphStore, doc_id: str, chunks: Iterable[Chunk]) -> frozenset[str]:
    return frozenset({store.key(doc_id), *(store.key(chunk_ref(c).id) for c in chunks)})
