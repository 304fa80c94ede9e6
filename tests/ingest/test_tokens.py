from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from rayweave.cluster.errors import ModelError
from rayweave.models.tokens import TokenizerCounter, WordPieceEstimate

from .conftest import beir_folder


class TestTokenizerCounter:
    @pytest.mark.parametrize("corpus", ["code-dev", "hotpotqa-dev"])
    def test_word_cache_is_exact_on_the_dev_corpora(
        self, corpus: str, minilm: TokenizerCounter, minilm_exact: TokenizerCounter
    ) -> None:
        lines = (beir_folder(corpus) / "corpus.jsonl").read_text().splitlines()
        texts = [json.loads(line)["text"] for line in lines[:1500]]
        assert minilm.count_tokens(texts) == minilm_exact.count_tokens(texts)

    def test_edge_cases(self, minilm: TokenizerCounter, minilm_exact: TokenizerCounter) -> None:
        texts = [
            "",
            " ",
            "naïve café – £1 5°C 中文字符 emoji 🚀",
            "a" * 300,
            "x_y.z(1, 2) -> {}",
            "Ünïcödé\u00a0spaces",
        ]
        assert minilm.count_tokens(texts) == minilm_exact.count_tokens(texts)
        assert minilm.count_tokens([]) == []

    def test_no_truncation_and_no_special_tokens(self, minilm_exact: TokenizerCounter) -> None:
        long = "word " * 1000
        assert minilm_exact.count_tokens([long]) == [1000]
        assert minilm_exact.count_tokens(["hello"]) == [1]

    def test_pickles_for_ray(self, minilm: TokenizerCounter) -> None:
        clone = pickle.loads(pickle.dumps(minilm))
        assert clone.count_tokens(["Ferry leases tasks."]) == minilm.count_tokens(
            ["Ferry leases tasks."]
        )

    def test_missing_model(self, tmp_path: Path) -> None:
        with pytest.raises(ModelError, match=r"no tokenizer\.json"):
            TokenizerCounter.from_model(tmp_path)
        with pytest.raises(ModelError, match="not installed"):
            TokenizerCounter.from_model("package:surely_not_installed_pkg/model")


def test_estimate_is_additive_over_whitespace() -> None:
    est = WordPieceEstimate()
    parts = ["Leases expire.", "Workers renew them every 10 s!", "x_y(z)"]
    assert sum(est.count_tokens(parts)) == est.count_tokens([" ".join(parts)])[0]
