"""Generated documents for update tests: a seeded generator over a small vocabulary chosen so
that updates reach across documents (titles that other pages name, a plural that merges into
its singular only while both exist, chains of near spellings for synonymy, shared keywords for
topics and co-occurrence), and a deterministic name encoder."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rayweave.cluster.settings import QdrantSettings
from rayweave.cluster.types import Chunk, ContentType, Document, Entity, Level
from rayweave.cluster.vectors.factory import open_vector_store
from rayweave.graph.indexing import index_batch
from rayweave.graph.share import Share
from rayweave.graph.store import GraphStore
from rayweave.graph.synonym_index import NameIndex, SynonymRule, names_collection

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


def titled(doc_id: str, title: str, text: str) -> GeneratedDoc:
    """A one-section document titled `title`: its title is a name of its own."""
    document = Document(
        id=doc_id, source=f"{doc_id}.md", title=title, content_type=ContentType.MARKDOWN, text=""
    )
    chunk = Chunk(
        id=f"{doc_id}-s0",
        doc_id=doc_id,
        level=Level.SECTION,
        text=text,
        title=title,
        section_path=(title,),
        position=0,
    )
    return GeneratedDoc(document, (chunk,), {})


def random_change(
    rng: random.Random, store: GraphStore, live: dict[str, GeneratedDoc], n: int
) -> str:
    """Add, edit or delete one document of `live` (step `n`) in `store`; says which."""
    op = rng.choice(["add", "edit", "delete"]) if len(live) > 3 else "add"
    if op == "add":
        doc_id = f"D{100 + n}"
        live[doc_id] = generate(rng, doc_id, n)
        write(store, [live[doc_id]])
        return f"add {doc_id}"
    doc_id = rng.choice(sorted(live))
    store.delete_document(doc_id)
    if op == "edit":
        live[doc_id] = generate(rng, doc_id, n)
        write(store, [live[doc_id]])
    else:
        del live[doc_id]
    return f"{op} {doc_id}"


def share_of(docs: dict[str, GeneratedDoc]) -> Share:
    """The documents as one share, chunks in id order (as the store gives them)."""
    chunks: list[Chunk] = sorted((c for g in docs.values() for c in g.chunks), key=lambda c: c.id)
    mentions: dict[str, list[Entity]] = {
        cid: list(ents) for g in docs.values() for cid, ents in g.mentions.items()
    }
    return Share(chunks, mentions, {})


def change_some(
    rng: random.Random, docs: dict[str, GeneratedDoc], version: int, *, ids: int
) -> set[str]:
    """Add, edit or delete one to three documents of `docs` (ids D0 to D{ids - 1}) in place;
    returns the ids changed."""
    changed: set[str] = set()
    for _ in range(rng.randint(1, 3)):
        doc = f"D{rng.randrange(ids)}"
        if doc in docs and rng.random() < 0.4:
            del docs[doc]
        else:
            docs[doc] = generate(rng, doc, version)
        changed.add(doc)
    return changed
