"""Array post-processing shared by the encoders: normalisation and sparse-vector building."""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from rayweave.cluster.types import SparseVector


def l2_normalize(x: np.ndarray, *, axis: int = -1) -> np.ndarray:
    """Unit rows (float32); an all-zero row stays zero instead of becoming NaN."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=axis, keepdims=True)
    unit: np.ndarray = x / np.maximum(norms, 1e-12)
    return unit


def row_to_sparse(row: np.ndarray, *, min_weight: float = 0.0) -> SparseVector:
    """Indices (ascending) and weights of the entries of a vocabulary-sized row above
    `min_weight`."""
    idx = np.flatnonzero(row > min_weight)
    return SparseVector(
        indices=tuple(int(i) for i in idx), values=tuple(float(v) for v in row[idx])
    )


def token_weights_to_sparse(
    input_ids: np.ndarray,
    weights: np.ndarray,
    attention_mask: np.ndarray,
    *,
    skip_ids: Collection[int] = (),
) -> SparseVector:
    """One text's per-position weights to one weight per token id, the maximum over its positions.

    This is BGE-M3's lexical-weight rule: padding, the ids in `skip_ids` (its special tokens) and
    non-positive weights are dropped; a token that occurs several times keeps its largest weight.
    """
    keep = (attention_mask > 0) & (weights > 0)
    if skip_ids:
        keep &= ~np.isin(input_ids, np.fromiter(skip_ids, dtype=np.int64))
    ids = input_ids[keep].astype(np.int64)
    w = weights[keep].astype(np.float32)
    if ids.size == 0:
        return SparseVector(indices=(), values=())
    order = np.lexsort((-w, ids))  # by id, largest weight first within an id
    ids, w = ids[order], w[order]
    first = np.ones(ids.size, dtype=bool)
    first[1:] = ids[1:] != ids[:-1]
    return SparseVector(
        indices=tuple(int(i) for i in ids[first]), values=tuple(float(v) for v in w[first])
    )
