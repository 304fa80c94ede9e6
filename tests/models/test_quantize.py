import numpy as np
import pytest

from rayweave.models.postprocess import l2_normalize
from rayweave.models.quantize import (
    Int8Calibration,
    binary_scores,
    binary_similarity,
    int8_scores,
    to_binary,
)


def vectors(n: int, dim: int = 64, seed: int = 0) -> np.ndarray:
    return l2_normalize(np.random.default_rng(seed).normal(size=(n, dim)))


class TestInt8:
    def test_round_trip_error_is_one_level(self) -> None:
        docs = vectors(200)
        cal = Int8Calibration.fit(docs, quantile=1.0)
        levels = cal.quantize(docs)
        assert levels.dtype == np.uint8
        assert np.abs(cal.dequantize(levels) - docs).max() <= cal.scale / 2 + 1e-6

    def test_quantile_clips_outliers(self) -> None:
        docs = vectors(200)
        docs[0, 0] = 50.0
        cal = Int8Calibration.fit(docs, quantile=0.99)
        assert cal.low + 255 * cal.scale < 1.0
        assert cal.quantize(docs)[0, 0] == 255

    def test_scores_rank_like_float(self) -> None:
        docs, queries = vectors(300), vectors(20, seed=1)
        exact = queries @ docs.T
        approx = int8_scores(queries, docs, Int8Calibration.fit(docs))
        assert (exact.argmax(1) == approx.argmax(1)).mean() >= 0.9

    def test_bad_input(self) -> None:
        with pytest.raises(ValueError, match="quantile"):
            Int8Calibration.fit(vectors(3), quantile=0.2)
        with pytest.raises(ValueError, match="no vectors"):
            Int8Calibration.fit(np.zeros((0, 4)))


class TestBinary:
    def test_packing_and_hamming(self) -> None:
        a = np.array([[1.0, -1.0, 1.0, 1.0, -1, -1, -1, -1, 1.0]])
        packed = to_binary(a)
        assert packed.shape == (1, 2)
        assert binary_similarity(packed, packed, dim=9)[0, 0] == 9
        assert binary_similarity(packed, to_binary(-a), dim=9)[0, 0] == 0

    def test_rescore_recovers_exact_top1(self) -> None:
        docs, queries = vectors(500), vectors(30, seed=2)
        exact_top = (queries @ docs.T).argmax(1)
        bits_top = binary_scores(queries, docs).argmax(1)
        rescored = binary_scores(queries, docs, rescore=True, oversampling=10, k=10)
        assert (rescored.argmax(1) == exact_top).mean() >= (bits_top == exact_top).mean()
        assert (rescored.argmax(1) == exact_top).mean() >= 0.9
        assert np.isinf(rescored).sum(axis=1).min() == 500 - 100
