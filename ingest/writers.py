"""Write whole documents to both stores so that search never sees half of one.

Order per batch of documents:
1. upsert every chunk's vectors with `visible=False` (unchanged chunks keep their ids);
2. write the graph (the old structure of a document stored before, changed or left half-written
   by an interrupted run, is replaced);
3. delete the document's stale points (ids that the new version no longer has);
4. flip `visible=True` on the document's points; the document-level point carries the content
   hash, so the visible document points are also the registry of what is fully ingested.

A crash anywhere before step 4 leaves the previous version (or nothing) visible, and the next run
redoes the document because its visible hash is not the new one. Retrievers filter on `visible`.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from rayweave.cluster.errors import NotFoundError
from rayweave.cluster.services.telemetry import ingest_metrics
from rayweave.cluster.settings import Settings
from rayweave.cluster.types import Chunk, Document, Level
from rayweave.cluster.vectors.store import CollectionSpec, VectorPoint, VectorStore
from rayweave.ingest.report import DocumentOutcome

if TYPE_CHECKING:
    from rayweave.graph.store import GraphStore
    from rayweave.ingest.stages import DocWork

VISIBLE = "visible"


def chunk_payload(chunk: Chunk, document: Document) -> dict[str, Any]:
    """The payload stored with a chunk's vectors: what a search result shows and filters use."""
    payload: dict[str, Any] = chunk.to_row()
    payload["chunk_id"] = payload.pop("id")
    payload[VISIBLE] = False
    if chunk.level is Level.DOCUMENT:
        payload["content_hash"] = document.content_hash
    return payload


def visible_document_hashes(store: VectorStore) -> dict[str, str]:
    """doc_id -> content hash of every fully ingested document (empty if the collection is new)."""
    hashes: dict[str, str] = {}
    offset: str | None = None
    try:
        while True:
            points, offset = store.scroll(
                filter={"level": Level.DOCUMENT.value, VISIBLE: True}, limit=1024, offset=offset
            )
            for p in points:
                hashes[str(p.payload["doc_id"])] = str(p.payload.get("content_hash", ""))
            if offset is None:
                return hashes
    except NotFoundError:  # a new collection: nothing ingested yet
        return {}


def document_ids_under(store: VectorStore, folders: Sequence[str]) -> list[str]:
    """Ids of the stored documents whose source lies inside one of `folders` (resolved paths): a
    folder, or a checkout already removed from disk, is deleted by its documents' sources."""
    prefixes = tuple(f.rstrip(os.sep) + os.sep for f in folders)
    found: list[str] = []
    if not prefixes:
        return found
    offset: str | None = None
    try:
        while True:
            points, offset = store.scroll(
                filter={"level": Level.DOCUMENT.value}, limit=1024, offset=offset
            )
            found += [
                str(p.payload["doc_id"])
                for p in points
                if str(p.payload.get("source", "")).startswith(prefixes)
            ]
            if offset is None:
                return found
    except NotFoundError:
        return []


def _stored_points(store: VectorStore, doc_ids: Sequence[str]) -> dict[str, str]:
    """point id -> doc_id of every point the documents have, visible or not."""
    found: dict[str, str] = {}
    offset: str | None = None
    while True:
        points, offset = store.scroll(filter={"doc_id": list(doc_ids)}, limit=1024, offset=offset)
        found.update((p.id, str(p.payload["doc_id"])) for p in points)
        if offset is None:
            return found


class DocumentWriter:
    def __init__(
        self, *, settings: Settings, vectors: VectorStore, graph: GraphStore | None, collection: str
    ) -> None:
        self.settings = settings
        self.collection = collection
        self.vectors = vectors
        self.graph = graph
        self._collection_ready = False

    @classmethod
    def open(cls, settings: Settings, *, collection: str, shared: bool) -> DocumentWriter:
        from rayweave.cluster.vectors.service import vector_store_for
        from rayweave.graph.store import open_graph_store

        vectors = vector_store_for(settings, collection, shared=shared)
        graph = open_graph_store(settings, namespace=collection)
        return cls(settings=settings, vectors=vectors, graph=graph, collection=collection)

    def close(self) -> None:
        if self.graph is not None:
            self.graph.close()

    def _ensure(self, works: Sequence[DocWork]) -> None:
        if self._collection_ready:
            return
        dim = next(w.dense.shape[1] for w in works if w.dense is not None)
        image_dim = next((len(v) for w in works for v in w.image.values()), None)
        self.vectors.ensure_collection(
            CollectionSpec(name=self.collection, dense_dim=int(dim), image_dim=image_dim)
        )
        self._collection_ready = True

    def write(self, works: Iterable[DocWork]) -> list[DocumentOutcome]:
        works = list(works)
        active = [w for w in works if w.active and w.dense is not None]
        outcomes = {id(w): self._passive_outcome(w) for w in works if w not in active}
        if active:
            try:
                outcomes.update(
                    {id(w): o for w, o in zip(active, self._write_active(active), strict=True)}
                )
            except Exception:  # noqa: BLE001 - retried one by one below
                # Isolate the document at fault: retry one by one so the rest still lands.
                for w in active:
                    try:
                        outcomes[id(w)] = self._write_active([w])[0]
                    except Exception as exc:  # noqa: BLE001 - the document fails alone, reported
                        w.fail(exc)
                        outcomes[id(w)] = self._passive_outcome(w)
        ordered = [outcomes[id(w)] for w in works]
        ingest_metrics().written(
            collection=self.collection,
            statuses=Counter(o.status for o in ordered),
            chunks=sum(o.chunks for o in ordered if o.status in ("inserted", "updated")),
        )
        return ordered

    @staticmethod
    def _passive_outcome(w: DocWork) -> DocumentOutcome:
        doc_id = w.document.id if w.document is not None else ""
        if w.error is not None:
            return DocumentOutcome(doc_id=doc_id, source=w.source, status="failed", error=w.error)
        return DocumentOutcome(doc_id=doc_id, source=w.source, status="skipped")

    def _write_active(self, works: Sequence[DocWork]) -> list[DocumentOutcome]:
        self._ensure(works)
        doc_ids = [w.document.id for w in works if w.document is not None]
        # Not only updated documents have points: a run killed before step 4 leaves invisible
        # ones (and a graph) behind, which this run replaces as if the document had changed.
        previous = _stored_points(self.vectors, doc_ids)

        points = [self._point(w, i) for w in works for i in range(len(w.chunks))]
        step = self.settings.qdrant.upsert_batch
        for start in range(0, len(points), step):
            self.vectors.upsert(points[start : start + step])

        if self.graph is not None:
            self._write_graph(works, sorted(set(previous.values())))

        stale = previous.keys() - {p.id for p in points}
        if stale:
            self.vectors.delete({"chunk_id": sorted(stale)})
        self.vectors.set_payload({"doc_id": doc_ids}, {VISIBLE: True})

        return [
            DocumentOutcome(
                doc_id=w.document.id if w.document is not None else "",
                source=w.source,
                status=w.status,
                chunks=len(w.chunks),
                vectors=len(w.chunks),
                extraction=w.extraction if w.extraction.chunks else None,
            )
            for w in works
        ]

    def _write_graph(self, works: Sequence[DocWork], replaced: Sequence[str]) -> None:
        """Replace the structure of documents stored before, then write this batch's documents and
        chunks (the entity layer is the corpus pass's, `ingest.pipeline.finalize`)."""
        from rayweave.graph.indexing import index_batch

        assert self.graph is not None
        self._delete_graph(replaced)
        chunks = [c for w in works for c in w.chunks]
        mentions = {
            c.id: ents
            for w in works
            if w.entities is not None
            for c, ents in zip(w.chunks, w.entities, strict=True)
            if ents
        }
        index_batch(
            self.graph,
            chunks,
            documents=[w.document for w in works if w.document is not None],
            mentions=mentions,
            extractions={cid: x for w in works for cid, x in w.extractions.items()},
        )

    @staticmethod
    def _point(w: DocWork, i: int) -> VectorPoint:
        assert w.document is not None
        assert w.dense is not None
        chunk = w.chunks[i]
        return VectorPoint(
            id=chunk.id,
            payload=chunk_payload(chunk, w.document),
            dense=w.dense[i],
            sparse=w.sparse[i] if w.sparse is not None else None,
            image=w.image.get(i),
        )

    def delete(self, doc_ids: Sequence[str]) -> int:
        """Remove documents from both stores; returns how many had vectors."""
        if not doc_ids:
            return 0
        present = {
            str(p.payload["doc_id"])
            for p in self.vectors.scroll(
                filter={"doc_id": list(doc_ids), "level": Level.DOCUMENT.value},
                limit=len(doc_ids) + 1,
            )[0]
        }
        self.vectors.delete({"doc_id": list(doc_ids)})
        self._delete_graph(doc_ids)
        return len(present)

    def _delete_graph(self, doc_ids: Sequence[str]) -> None:
        if self.graph is None:
            return
        for doc_id in doc_ids:
            # Absent from the graph: vectors without graph after an earlier crash, or an id
            # that never existed. Either way there is nothing to remove.
            with contextlib.suppress(NotFoundError):
                self.graph.delete_document(doc_id)
