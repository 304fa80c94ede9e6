"""Fixtures of the bench tests: the tiny random models of tests/models/conftest.py, which the
models bench encodes with (imported, so both folders build them the same way)."""

from __future__ import annotations

from tests.models.conftest import bert_mlm_dir, bert_tokenizer_dir, onnx_cache, tiny_st_dir

__all__ = ["bert_mlm_dir", "bert_tokenizer_dir", "onnx_cache", "tiny_st_dir"]
