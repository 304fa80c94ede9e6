"""Output-embedding quantization: what storing vectors as int8 or as bits costs in ranking quality.

This is separate from weight precision (`models.precision`): the encoder still produces float32
vectors; Qdrant's `quantization` setting (`int8` scalar or `binary`) compresses the stored copies
and rescored searches re-rank a shortlist with the originals. These functions reproduce those
schemes offline so `rayweave bench models` can report their nDCG@10 next to fp32:

- int8 (scalar): one affine map for the whole collection from the `quantile` range of all values
  (Qdrant's default quantile is 0.99), values clipped to it and rounded to 256 levels;
- binary: the sign of each dimension, packed 8 per byte; similarity is the number of agreeing
  signs (Hamming), optionally rescored: the best `oversampling x k` by bits, re-ranked in float.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True, kw_only=True)
class Int8Calibration:
    """The affine map float -> uint8 level: `level = round((x - low) / scale)`."""

    low: float
    scale: float

    @classmethod
    def fit(cls, vectors: np.ndarray, *, quantile: float = 0.99) -> Int8Calibration:
        if not 0.5 < quantile <= 1.0:
            raise ValueError(f"quantile must be in (0.5, 1], got {quantile}")
        values = np.asarray(vectors, dtype=np.float32).ravel()
        if values.size == 0:
            raise ValueError("cannot calibrate int8 quantization on no vectors")
        tail = (1.0 - quantile) / 2.0
        low, high = np.quantile(values, [tail, 1.0 - tail])
        scale = max(float(high - low), 1e-12) / 255.0
        return cls(low=float(low), scale=scale)

    def quantize(self, vectors: np.ndarray) -> np.ndarray:
        levels = np.rint((np.asarray(vectors, dtype=np.float32) - self.low) / self.scale)
        quantized: np.ndarray = np.clip(levels, 0, 255).astype(np.uint8)
        return quantized

    def dequantize(self, levels: np.ndarray) -> np.ndarray:
        values: np.ndarray = levels.astype(np.float32) * self.scale + self.low
        return values


def to_binary(vectors: np.ndarray) -> np.ndarray:
    """Sign bits (`x > 0`), packed 8 dimensions per byte."""
    return np.packbits(np.asarray(vectors) > 0, axis=-1)


_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def binary_similarity(queries: np.ndarray, docs: np.ndarray, *, dim: int) -> np.ndarray:
    """`dim - hamming distance` between packed sign vectors: higher is more similar."""
    xor = np.bitwise_xor(queries[:, None, :], docs[None, :, :])
    similarity: np.ndarray = dim - _POPCOUNT[xor].sum(axis=-1, dtype=np.int32)
    return similarity


def int8_scores(queries: np.ndarray, docs: np.ndarray, calibration: Int8Calibration) -> np.ndarray:
    """Inner products of float queries with int8-stored documents (as Qdrant scores them)."""
    stored = calibration.dequantize(calibration.quantize(docs))
    scores: np.ndarray = np.asarray(queries, dtype=np.float32) @ stored.T
    return scores


def binary_scores(
    queries: np.ndarray,
    docs: np.ndarray,
    *,
    rescore: bool = False,
    oversampling: float = 4.0,
    k: int = 10,
) -> np.ndarray:
    """Scores from sign bits; with `rescore`, the best `oversampling x k` per query by bits are
    re-ranked by their float inner product and everything else scores -inf."""
    dim = docs.shape[1]
    bits = binary_similarity(to_binary(queries), to_binary(docs), dim=dim).astype(np.float32)
    if not rescore:
        return bits
    shortlist = min(docs.shape[0], max(k, int(np.ceil(oversampling * k))))
    top = np.argpartition(-bits, shortlist - 1, axis=1)[:, :shortlist]
    out = np.full_like(bits, -np.inf)
    exact = np.einsum("qd,qkd->qk", queries, docs[top])
    np.put_along_axis(out, top, exact, axis=1)
    return out
