"""Build the configured models: what Ray Data actors and Serve replicas call once per process.

Each builder takes the `models` settings group and returns an object behind a protocol from
`models.protocols`. Builders cache per process on the settings that matter, so a replica asking
for the dense and the sparse encoder of one BGE-M3 gets one model (one forward serves both).

`sparse_kind='bge-m3'` takes its lexical weights from the dense BGE-M3 when `dense_kind` is also
'bge-m3' (one load); otherwise it loads the checkpoint named by `sparse`.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import TYPE_CHECKING

from rayweave.cluster.errors import ConfigError
from rayweave.cluster.settings import ModelSettings
from rayweave.models.bge_m3 import BgeM3Encoder, load_bge_m3
from rayweave.models.precision import RunOptions
from rayweave.models.protocols import (
    ChatModel,
    DenseEncoder,
    EntityExtractor,
    ImageEncoder,
    SparseEncoder,
)
from rayweave.models.tokens import TokenizerCounter, load_token_counter

if TYPE_CHECKING:
    from rayweave.models.llm import LocalCausalLM

log = logging.getLogger(__name__)

DENSE_KINDS = ("sentence-transformers", "bge-m3")
SPARSE_KINDS = ("splade", "bge-m3", "bm25")


def run_options(settings: ModelSettings) -> RunOptions:
    """Device, precision, runtime and batching limits for every model built from `settings`."""
    return RunOptions.from_settings(settings)


@lru_cache(maxsize=4)
def _bge_m3(ref: str, options: RunOptions) -> BgeM3Encoder:
    return load_bge_m3(ref, options)


@lru_cache(maxsize=4)
def _dense(settings: ModelSettings) -> DenseEncoder:
    options = run_options(settings)
    if settings.dense_kind == "bge-m3":
        return _bge_m3(settings.dense, options)
    if settings.dense_kind == "sentence-transformers":
        from rayweave.models.dense import load_sentence_transformer

        return load_sentence_transformer(settings.dense, options)
    raise ConfigError(
        f"unknown models.dense_kind {settings.dense_kind!r}; valid: {', '.join(DENSE_KINDS)}"
    )


def build_dense_encoder(settings: ModelSettings) -> DenseEncoder:
    """The dense encoder (`encode`, `dim`, `count_tokens`, `max_tokens`); BGE-M3 also offers
    `encode_multi`, `encode_all` and `maxsim`."""
    return _dense(settings)


@lru_cache(maxsize=4)
def _sparse(settings: ModelSettings) -> SparseEncoder:
    kind = settings.sparse_kind
    if kind == "bm25":
        from rayweave.models.sparse import Bm25Encoder

        return Bm25Encoder()
    options = run_options(settings)
    if kind == "bge-m3":
        ref = settings.dense if settings.dense_kind == "bge-m3" else settings.sparse
        return _bge_m3(ref, options).sparse
    if kind == "splade":
        from rayweave.models.sparse import load_splade

        return load_splade(settings.sparse, options)
    raise ConfigError(f"unknown models.sparse_kind {kind!r}; valid: {', '.join(SPARSE_KINDS)}")


def build_sparse_encoder(settings: ModelSettings) -> SparseEncoder:
    """The sparse encoder: SPLADE, BGE-M3 lexical weights, or BM25 term weights (no model)."""
    return _sparse(settings)


@lru_cache(maxsize=4)
def build_tokenizer(settings: ModelSettings) -> TokenizerCounter:
    """Token counting with the dense model's tokenizer and truncation length, without its weights
    (for chunking, which runs in actors of its own)."""
    return load_token_counter(settings)


@lru_cache(maxsize=4)
def build_entity_extractor(settings: ModelSettings) -> EntityExtractor:
    """spaCy NER + noun chunks (`models.ner`), or rules when `ner` is None."""
    from rayweave.models.entities import RuleEntityExtractor, load_spacy_extractor

    if settings.ner is None:
        return RuleEntityExtractor()
    return load_spacy_extractor(settings.ner)


@lru_cache(maxsize=2)
def build_causal_lm(ref: str, settings: ModelSettings) -> LocalCausalLM:
    """A local causal LM that scores text (query likelihood); `ref` as in `models.llm`."""
    from rayweave.models.llm import OPENAI_PREFIX, load_local_causal_lm

    if ref.startswith(OPENAI_PREFIX):
        raise ConfigError(
            f"likelihood scoring needs a local causal LM, not an endpoint ({ref!r}): it reads the "
            "log-probabilities of the prompt's own tokens, which chat APIs do not return"
        )
    return load_local_causal_lm(ref, run_options(settings).plan)


@lru_cache(maxsize=4)
def build_chat_model(settings: ModelSettings) -> ChatModel | None:
    """The chat LLM `models.llm` names, or None when it names none."""
    from rayweave.models.llm import (
        OPENAI_PREFIX,
        OpenAIChatModel,
        load_local_causal_lm,
        parse_openai_ref,
    )

    ref = settings.llm
    if ref is None:
        return None
    if ref.startswith(OPENAI_PREFIX):
        endpoint = parse_openai_ref(ref)
        key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
        return OpenAIChatModel(
            base_url=endpoint.base_url,
            model=endpoint.model,
            api_key=key,
            timeout_s=settings.llm_timeout_s,
        )
    return load_local_causal_lm(ref, run_options(settings).plan)


@lru_cache(maxsize=4)
def build_image_encoder(settings: ModelSettings) -> ImageEncoder | None:
    """The CLIP encoder `models.clip` names, or None when images are disabled."""
    from rayweave.models.clip import load_open_clip

    if settings.clip is None:
        return None
    options = run_options(settings)
    return load_open_clip(settings.clip, options.plan, batch_size=options.rows_per_forward)
