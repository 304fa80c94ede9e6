"""Fixtures for the code chunker's tests: a file being split, as the layout code sees it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rayweave.ingest.code.parsing import Source
from rayweave.ingest.code.unit_builder import Ctx

from ..code_samples import COUNT

MakeCtx = Callable[..., Ctx]


@pytest.fixture
def make_ctx() -> MakeCtx:
    """`make_ctx(code, language, max_tokens=..., min_tokens=...)`: a file without a parser
    (the line-window and brace paths), counted by the word-piece estimate."""

    def build(
        code: str, language: str = "yaml", *, max_tokens: int = 40, min_tokens: int = 0
    ) -> Ctx:
        return Ctx(Source(code), language, None, None, COUNT, max_tokens, min_tokens)

    return build
