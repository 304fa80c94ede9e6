"""Entity synonymy from the dense encoder (HippoRAG 2's synonym edges, without an LLM).

Names the encoder places close together ("U.S." and "United States", `get_user` and `GetUser`,
"NYC" and "New York City") become SYNONYM_OF edges, so a walk that reaches one reaches the
passages about the other. Two rules keep look-alikes apart: names whose numbers differ are never
synonyms (years, versions and error codes distinguish things: "1944 San Juan earthquake" and
"1894 San Juan earthquake" sit at cosine 0.81 under MiniLM), and each entity keeps only its
`max_per_entity` closest partners.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Sequence

import numpy as np

from rayweave.graph.schema import EdgeRow, EdgeSource, NodeLabel, NodeRef, RelType

_NUMBER = re.compile(r"\d+")


def numbers(name: str) -> tuple[str, ...]:
    return tuple(_NUMBER.findall(name))


def is_candidate(a: str, b: str) -> bool:
    """Two names may be synonyms: their numbers agree and they are not the same name."""
    return numbers(a) == numbers(b) and " ".join(a.casefold().split()) != " ".join(
        b.casefold().split()
    )


def top_partners(
    candidates: Iterable[tuple[float, int]], max_per_entity: int
) -> list[tuple[float, int]]:
    """A name's kept partners: the closest first, ties to the earlier index."""
    return sorted(candidates, key=lambda p: (-p[0], p[1]))[:max_per_entity]


def synonym_pairs(
    names: Sequence[str],
    vectors: np.ndarray,
    *,
    threshold: float,
    max_per_entity: int,
    block: int = 2048,
) -> list[tuple[int, int, float]]:
    """Pairs `(i, j, cosine)` with `i < j` among L2-normalised `vectors` at or above
    `threshold`, each index in at most `max_per_entity` kept pairs as its own best partners,
    numbers agreeing (see module docstring). Blocked, and each row keeps only its best
    partners as it goes, so memory stays `block x n` plus `n x max_per_entity` even when an
    encoder puts every name above the threshold (a random or collapsed one does). Cosines are
    rounded to 6 places before they are compared, so a pair scored one at a time
    (`graph/synonym_index.py`) decides the same way."""
    n = len(names)
    if n < 2:
        return []
    marks = _class_ids([numbers(x) for x in names])
    keys = _class_ids([" ".join(x.casefold().split()) for x in names])
    kept: dict[tuple[int, int], float] = {}
    for start in range(0, n, block):
        sims = np.round(vectors[start : start + block] @ vectors.T, 6)
        hits = sims >= threshold
        for r in np.flatnonzero(hits.any(axis=1)).tolist():
            i = start + r
            cand = np.flatnonzero(hits[r])
            cand = cand[(cand != i) & (marks[cand] == marks[i]) & (keys[cand] != keys[i])]
            # `top_partners`' order: the closest first, ties to the earlier index.
            for j in cand[np.lexsort((cand, -sims[r, cand]))[:max_per_entity]].tolist():
                kept[(min(i, j), max(i, j))] = round(float(sims[r, j]), 6)
    return sorted((i, j, s) for (i, j), s in kept.items())


def _class_ids(values: Sequence[Hashable]) -> np.ndarray:
    """One integer per distinct value, so that equality tests run over arrays."""
    table: dict[Hashable, int] = {}
    return np.array([table.setdefault(v, len(table)) for v in values], dtype=np.int64)


def synonym_edge(a: str, b: str, similarity: float) -> EdgeRow:
    """The SYNONYM_OF edge between entity ids `a` and `b`. Two names that encode alike give a
    float32 dot product a hair above 1 (1.000001 on musique-dev), which no edge may carry."""
    similarity = min(similarity, 1.0)
    return EdgeRow(
        rel=RelType.SYNONYM_OF,
        src=NodeRef(NodeLabel.ENTITY, a),
        dst=NodeRef(NodeLabel.ENTITY, b),
        weight=similarity,
        confidence=similarity,
        source=EdgeSource.SYNONYMY,
    )


def synonym_edges(
    entities: Sequence[tuple[str, str]],
    vectors: np.ndarray,
    *,
    threshold: float,
    max_per_entity: int,
) -> list[EdgeRow]:
    """SYNONYM_OF edges between `(id, name)` entities whose name vectors are close."""
    pairs = synonym_pairs(
        [name for _, name in entities],
        vectors,
        threshold=threshold,
        max_per_entity=max_per_entity,
    )
    return [synonym_edge(entities[i][0], entities[j][0], sim) for i, j, sim in pairs]
