"""The corpus pass share by share equals the pass over the whole corpus: every merge between
phases is order-free, so the cluster rebuild (many shares, many workers) builds the layer that
`build_graph` builds in one process."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest

from rayweave.cluster.settings import GraphSettings
from rayweave.cluster.types import Chunk, ContentType, Level
from rayweave.graph.builders import build_graph
from rayweave.graph.corpus_phases import build_in_shares
from rayweave.graph.extraction import Extraction, Statement
from rayweave.graph.schema import GraphBatch, RelType
from rayweave.graph.share import Share

from .generated_corpus import GeneratedDoc, generate


def code_doc(i: int, n: int) -> GeneratedDoc:
    """A module defining one function and calling another module's, with a link to a page."""
    base = generate(random.Random(i), f"code{i}", 0)
    chunk = Chunk(
        id=f"code{i}-c",
        doc_id=f"code{i}",
        level=Level.SECTION,
        text=f"def func_{i}(x):\n    return func_{(i + 1) % n}(x)  # raises ValueError",
        title=f"mod{i}.py",
        content_type=ContentType.CODE,
        defined_symbols=(f"func_{i}",),
        dependencies=(f"mod{(i + 1) % n}",),
        references=(f"d{i % 7}", f"code{(i + 2) % n}-c", f"src/mod{(i + 3) % n}.py"),
        source=f"src/mod{i}.py",
    )
    return GeneratedDoc(base.document, (chunk,), {})


def corpus(seed: int) -> tuple[list[GeneratedDoc], dict[str, Extraction]]:
    rng = random.Random(seed)
    docs = [generate(rng, f"d{i}", 0) for i in range(70)]
    docs += [code_doc(i, 6) for i in range(6)]
    extractions: dict[str, Extraction] = {}
    for g in rng.sample(docs[:70], 20):
        a, b = g.chunks[0].section_path[0], g.chunks[0].text.split(".")[1].split()[-1]
        predicate = rng.choice(["founded", "leads", "wrote"])
        st = Statement(subject=a, predicate=predicate, object=b, confidence=rng.random())
        extractions[g.chunks[0].id] = Extraction(statements=(st,))
    return docs, extractions


def canonical(batch: GraphBatch) -> tuple[set[Any], set[Any], set[Any]]:
    edges = {
        (e.rel, e.src, e.dst, e.weight, e.confidence, e.source, e.count, tuple(e.props.items()))
        for e in batch.edges
    }
    assert len(edges) == len(batch.edges)
    return edges, set(batch.entities), set(batch.topics)


def shares_of(
    docs: list[GeneratedDoc], extractions: dict[str, Extraction], k: int, rng: random.Random
) -> list[Share]:
    groups: list[list[GeneratedDoc]] = [[] for _ in range(k)]
    for g in docs:
        groups[rng.randrange(k)].append(g)
    return [
        Share(
            chunks=[c for g in group for c in g.chunks],
            mentions={cid: m for g in group for cid, m in g.mentions.items()},
            extractions={
                c.id: extractions[c.id] for g in group for c in g.chunks if c.id in extractions
            },
        )
        for group in groups
    ]


@pytest.mark.parametrize("sentence_links", [True, False])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_shares_merge_into_the_whole_corpus_layer(seed: int, sentence_links: bool) -> None:
    settings = GraphSettings(sentence_links=sentence_links, topic_min_npmi=0.0)
    docs, extractions = corpus(seed)
    chunks = sorted((c for g in docs for c in g.chunks), key=lambda c: c.id)
    mentions = {cid: m for g in docs for cid, m in g.mentions.items()}
    whole = canonical(build_graph(chunks, mentions, extractions=extractions, settings=settings))
    rels = {e[0] for e in whole[0]}
    assert len(rels) >= 7, rels  # the corpus exercises most rules
    assert whole[2], "no topics: the keyword rule is not exercised"
    rng = random.Random(seed)
    for k in (1, 2, 5):
        shares = shares_of(docs, extractions, k, rng)
        assert canonical(build_in_shares(shares, settings)) == whole, k


def test_a_share_order_does_not_change_the_layer() -> None:
    settings = GraphSettings()
    docs, extractions = corpus(4)
    shares = shares_of(docs, extractions, 4, random.Random(4))
    assert canonical(build_in_shares(shares, settings)) == canonical(
        build_in_shares(shares[::-1], settings)
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_co_occurrence_as_columns_is_the_same_layer(seed: int) -> None:
    # Statements name some co-occurring pairs too: those merge with them as rows, as before.
    settings = GraphSettings(topic_min_npmi=0.0)
    docs, extractions = corpus(seed)
    chunks = sorted((c for g in docs for c in g.chunks), key=lambda c: c.id)
    mentions = {cid: m for g in docs for cid, m in g.mentions.items()}
    rows = build_graph(chunks, mentions, extractions=extractions, settings=settings)
    cols = build_graph(chunks, mentions, extractions=extractions, settings=settings, columns=True)
    assert not rows.columns
    assert len(cols.columns[0]) > 20
    merged = [e for e in cols.edges if e.rel is RelType.RELATED_TO and e.count >= 2]
    assert merged
    assert all("predicate" in e.props for e in merged)
    as_rows = dataclasses.replace(cols, edges=cols.edge_rows(), columns=())
    assert canonical(as_rows) == canonical(rows)
