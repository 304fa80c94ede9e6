"""The builders Ray actors and Serve replicas call, on default settings and on each kind."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rayweave.cluster.errors import ConfigError
from rayweave.cluster.settings import ModelSettings
from rayweave.models.bge_m3 import BgeM3Encoder, BgeM3SparseEncoder
from rayweave.models.entities import RuleEntityExtractor, SpacyEntityExtractor
from rayweave.models.factory import (
    build_chat_model,
    build_dense_encoder,
    build_entity_extractor,
    build_image_encoder,
    build_sparse_encoder,
    build_tokenizer,
)
from rayweave.models.llm import OpenAIChatModel
from rayweave.models.protocols import (
    DenseEncoder,
    EntityExtractor,
    ImageEncoder,
    SparseEncoder,
    TokenCounter,
)
from rayweave.models.sparse import Bm25Encoder, SpladeEncoder

TEXTS = ["Ray Serve deploys models.", "A " * 600, "", "Qdrant stores vectors."]


class TestDefaults:
    def test_default_models_build_and_agree_on_tokens(self, onnx_cache: Path) -> None:
        settings = ModelSettings(cache_dir=onnx_cache)
        dense = build_dense_encoder(settings)
        assert isinstance(dense, DenseEncoder)
        assert build_dense_encoder(settings) is dense  # once per process
        assert dense.encode(["hello"]).shape == (1, 384)
        sparse = build_sparse_encoder(settings)
        assert isinstance(sparse, SpladeEncoder)
        assert len(sparse.encode(["hello"])[0].indices) > 0
        counter = build_tokenizer(settings)
        assert isinstance(counter, TokenCounter)
        assert counter.count_tokens(TEXTS) == dense.count_tokens(TEXTS)
        assert counter.max_tokens == dense.max_tokens == 254
        entities = build_entity_extractor(settings)
        assert isinstance(entities, SpacyEntityExtractor)
        assert isinstance(entities, EntityExtractor)
        assert build_chat_model(settings) is None
        assert build_image_encoder(settings) is None

    def test_tokenizer_counter_honours_prompts(self, tiny_st_dir: Path, onnx_cache: Path) -> None:
        settings = ModelSettings(dense=str(tiny_st_dir), precision="fp32", cache_dir=onnx_cache)
        counter = build_tokenizer(settings)
        dense = build_dense_encoder(settings)
        assert counter.max_tokens == dense.max_tokens  # type: ignore[attr-defined]
        assert counter.count_tokens(TEXTS) == dense.count_tokens(TEXTS)


class TestKinds:
    def test_bge_m3_dense_and_sparse_share_one_model(
        self, bge_m3_dir: Path, onnx_cache: Path
    ) -> None:
        settings = ModelSettings(
            dense=str(bge_m3_dir),
            dense_kind="bge-m3",
            sparse_kind="bge-m3",
            precision="fp32",
            cache_dir=onnx_cache,
        )
        dense = build_dense_encoder(settings)
        sparse = build_sparse_encoder(settings)
        assert isinstance(dense, BgeM3Encoder)
        assert isinstance(sparse, BgeM3SparseEncoder)
        assert sparse.model is dense
        assert isinstance(sparse, SparseEncoder)
        counter = build_tokenizer(settings)
        assert counter.max_tokens == dense.max_tokens
        assert counter.count_tokens(TEXTS) == dense.count_tokens(TEXTS)

    def test_bm25_and_rules(self) -> None:
        settings = ModelSettings(sparse_kind="bm25", ner=None)
        assert isinstance(build_sparse_encoder(settings), Bm25Encoder)
        assert isinstance(build_entity_extractor(settings), RuleEntityExtractor)

    def test_chat_and_image(self, tiny_clip_config: Path) -> None:
        settings = ModelSettings(
            llm="openai:http://127.0.0.1:9/v1#m", llm_api_key="k", clip=str(tiny_clip_config)
        )
        chat = build_chat_model(settings)
        assert isinstance(chat, OpenAIChatModel)
        image = build_image_encoder(settings)
        assert isinstance(image, ImageEncoder)
        vec = image.encode_texts(["a diagram"])
        assert vec.shape == (1, image.dim)
        assert np.isclose(np.linalg.norm(vec), 1.0, atol=1e-5)

    def test_bad_llm_reference(self) -> None:
        with pytest.raises(ConfigError, match="openai:"):
            build_chat_model(ModelSettings(llm="openai:not-a-url"))
