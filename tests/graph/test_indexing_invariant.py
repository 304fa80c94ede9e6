"""The graph after any sequence of ingests, edits and deletes equals a fresh ingest of the
documents that remain: node for node, edge for edge, weights included.

Documents come from a seeded generator over a small vocabulary chosen so that updates reach
across documents: titles that other pages name (gazetteer bridges), a plural that merges into
its singular only while both exist, near-identical names for synonymy, shared keywords for
topics and co-occurrence. Each step goes through `update_entity_layer`, the product's
maintenance entry point, on the real embedded graph server.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from tests_support import graph_snapshot

from rayweave.cluster.settings import QdrantSettings
from rayweave.cluster.types import Chunk, ContentType, Document, Entity, Level
from rayweave.cluster.vectors.factory import open_vector_store
from rayweave.graph.indexing import index_batch, update_entity_layer
from rayweave.graph.store import GraphStore
from rayweave.graph.synonym_index import NameIndex, SynonymRule, names_collection

pytestmark = pytest.mark.integration

# Spelling variants combine into chains of close names (Kolor - Color - Colour), each name rare
# enough that updates make and remove it.
VARIANTS = [
    ("Harbor", "Harbour", "Harbur"),
    ("Color", "Colour", "Kolor"),
    ("Bridge", "Bridg"),
    ("Theory", "Theori"),
]
NAMES = [
    *(
        f"{a} {b}"
        for first in VARIANTS[:2]
        for a in first
        for second in VARIANTS[2:]
        for b in second
    ),
    "Arthur Magazine",
    "Godey Book",
    "Widget",
    "Widgets",
    "Widget Toolkit",
    "Widget Toolkits",
    "Ray Serve",
    "Starlette",
    "Lake Geneva",
    "Geneva Convention",
]
KEYWORDS = ["magazine", "toolkit", "serving", "harbor", "runtime", "lake"]
FILLER = ["was founded in", "merged into", "runs beside", "is documented with", "replaced"]


def trigram_vectors(names: list[str]) -> np.ndarray:
    """A deterministic name encoder (hashed character trigrams): close spellings are close."""
    out = np.zeros((len(names), 128), dtype=np.float32)
    for i, name in enumerate(names):
        text = f"  {name.casefold()}  "
        for j in range(len(text) - 2):
            out[i, hash_trigram(text[j : j + 3]) % 128] += 1.0
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.maximum(norms, 1e-9)


def hash_trigram(gram: str) -> int:
    return sum((k + 1) * ord(ch) for k, ch in enumerate(gram)) * 2654435761 % (2**32)


@dataclass(frozen=True)
class GeneratedDoc:
    document: Document
    chunks: tuple[Chunk, ...]
    mentions: dict[str, list[Entity]]


def generate(rng: random.Random, doc_id: str, version: int) -> GeneratedDoc:
    title = rng.choice(NAMES)
    d = Document(
        id=doc_id,
        source=f"{doc_id}.md",
        title=title,
        content_type=ContentType.MARKDOWN,
        text="",
    )
    chunks: list[Chunk] = []
    mentions: dict[str, list[Entity]] = {}
    for k in range(rng.randint(1, 3)):
        named = rng.sample(NAMES, rng.randint(2, 4))
        text = " ".join(f"{a} {rng.choice(FILLER)} {b}." for a, b in itertools.pairwise(named))
        heading = rng.choice([*NAMES, "Overview", f"Part {k}"])
        cid = f"{doc_id}-v{version}-s{k}"
        chunks.append(
            Chunk(
                id=cid,
                doc_id=doc_id,
                level=Level.SECTION,
                text=f"{title} {rng.choice(FILLER)} {named[0]}. {text}",
                title=title,
                section_path=(title, heading),
                keywords=tuple(rng.sample(KEYWORDS, 2)),
                position=k,
            )
        )
        if rng.random() < 0.3:
            mentions[cid] = [Entity(id="", name=rng.choice(NAMES), kind="product")]
    return GeneratedDoc(d, tuple(chunks), mentions)


def write(store: GraphStore, docs: list[GeneratedDoc]) -> None:
    index_batch(
        store,
        [c for g in docs for c in g.chunks],
        documents=[g.document for g in docs],
        mentions={cid: ents for g in docs for cid, ents in g.mentions.items()},
    )


# One partner each, over chains of spellings (Kolor - Color - Colour - Colour Theori): a name
# that arrives or goes changes its neighbours' choices, not only its own edges.
RULE = SynonymRule(threshold=0.8, max_per_entity=1, encoder="trigrams")


def name_index(folder: Path, namespace: str) -> NameIndex:
    collection = names_collection(namespace)
    return NameIndex(
        store=open_vector_store(QdrantSettings(), path=folder, collection=collection),
        collection=collection,
        encode=trigram_vectors,
        dense_dim=128,
        rule=RULE,
        full_fraction=1.0,  # every update takes the incremental path
    )


def fresh_snapshot(
    graph_store: GraphStore, folder: Path, name: str, docs: list[GeneratedDoc]
) -> object:
    fresh = graph_store.for_namespace(f"{graph_store.ns}-{name}")
    names = name_index(folder / name, fresh.ns)
    try:
        if docs:
            write(fresh, docs)
        update_entity_layer(fresh, names)
        return graph_snapshot(fresh)
    finally:
        names.store.close()
        fresh.drop_namespace()


@pytest.mark.parametrize("seed", [7, 8])
def test_random_updates_leave_the_graph_a_fresh_ingest_would_build(
    seed: int, graph_store: GraphStore, tmp_path: Path
) -> None:
    rng = random.Random(seed)
    names = name_index(tmp_path / "live", graph_store.ns)
    relinked = 0
    live: dict[str, GeneratedDoc] = {f"D{i}": generate(rng, f"D{i}", 0) for i in range(6)}
    write(graph_store, list(live.values()))
    update_entity_layer(graph_store, names)
    next_id, version = 6, 1
    for step in range(8):
        op = rng.choice(["add", "edit", "delete"]) if len(live) > 3 else "add"
        if op == "add":
            doc_id = f"D{next_id}"
            next_id += 1
            live[doc_id] = generate(rng, doc_id, version)
            write(graph_store, [live[doc_id]])
        else:
            doc_id = rng.choice(sorted(live))
            graph_store.delete_document(doc_id)
            if op == "edit":
                live[doc_id] = generate(rng, doc_id, version)
                write(graph_store, [live[doc_id]])
            else:
                del live[doc_id]
        version += 1
        update = update_entity_layer(graph_store, names)
        assert update.synonyms is not None
        assert not update.synonyms.full
        relinked += update.synonyms.relinked
        expected = fresh_snapshot(graph_store, tmp_path, f"fresh{step}", list(live.values()))
        got = graph_snapshot(graph_store)
        assert got == expected, (
            f"seed {seed}, step {step}: {op} {doc_id}: "
            f"only after updates {sorted(set(got[0]) - set(expected[0]))[:5]} "  # type: ignore[index]
            f"{sorted(set(got[1]) - set(expected[1]))[:5]}; "  # type: ignore[index]
            f"only fresh {sorted(set(expected[0]) - set(got[0]))[:5]} "  # type: ignore[index]
            f"{sorted(set(expected[1]) - set(got[1]))[:5]}"  # type: ignore[index]
        )
    # The repair path (every row rewritten, every name re-encoded) finds nothing to change.
    update_entity_layer(graph_store, names, full=True)
    assert graph_snapshot(graph_store) == expected
    names.store.close()
    entities, edges = graph_snapshot(graph_store)
    assert entities
    assert any(e[2] == "SYNONYM_OF" for e in edges)
    assert relinked > 0
