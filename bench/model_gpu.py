"""The gpu block of `rayweave bench models`: tokens/s of BGE-M3's architecture in fp16.

A random-weight model of BGE-M3's size (XLM-R large + both heads): plain fp32 and fp16 torch loops
against our fp16 encoder. Random weights, because the figure is throughput, not quality.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from rayweave.bench.model_measure import PLAIN_BATCH, BarFactory, ModelRow, Variant, measure, no_bar
from rayweave.models.precision import RunOptions, plan_execution

if TYPE_CHECKING:
    from rayweave.cluster.settings import Settings


def bge_m3_config(*, small: bool = False) -> Any:
    """XLM-R large as BGE-M3 uses it (8194 positions), or a tiny stand-in with the same layout."""
    from transformers import XLMRobertaConfig

    if small:
        return XLMRobertaConfig(
            vocab_size=30522,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=514,
            type_vocab_size=1,
            pad_token_id=1,
        )
    return XLMRobertaConfig(
        vocab_size=250002,
        hidden_size=1024,
        num_hidden_layers=24,
        num_attention_heads=16,
        intermediate_size=4096,
        max_position_embeddings=8194,
        type_vocab_size=1,
        pad_token_id=1,
        layer_norm_eps=1e-5,
    )


def write_random_bge_m3(folder: Path, tokenizer: Path, *, small: bool = False) -> Path:
    """A BGE-M3-layout checkpoint with random weights in `folder`, loadable as
    `models.dense_kind = "bge-m3"`: for timing the whole ingest at BGE-M3's size where its
    weights cannot be fetched (the GPU ingest bench). `tokenizer` is any tokenizer folder whose
    ids fit XLM-R's vocabulary (a BERT one gives realistic lengths)."""
    from transformers import AutoTokenizer, XLMRobertaModel

    from rayweave.models.bge_m3 import COLBERT_HEAD_FILE, SPARSE_HEAD_FILE

    torch.manual_seed(0)
    config = bge_m3_config(small=small)
    XLMRobertaModel(config, add_pooling_layer=False).save_pretrained(str(folder))
    AutoTokenizer.from_pretrained(str(tokenizer)).save_pretrained(str(folder))
    hidden = config.hidden_size
    torch.save(torch.nn.Linear(hidden, 1).state_dict(), folder / SPARSE_HEAD_FILE)
    torch.save(torch.nn.Linear(hidden, hidden).state_dict(), folder / COLBERT_HEAD_FILE)
    return folder


def bge_m3_throughput_rows(
    texts: Sequence[str],
    tokenizer: Any,
    *,
    device: str,
    dataset: str,
    config: Any,
    settings: Settings,
    rounds: int,
    say: Callable[[str], None],
    bar: BarFactory = no_bar,
) -> list[ModelRow]:
    """Tokens/s of a random BGE-M3-architecture model: plain fp32 and fp16 torch loops (batches of
    32 in corpus order, padded to the longest) against our fp16 encoder (length buckets, token
    budget, widths padded to multiples of 8). `tokenizer` only supplies realistic lengths and
    in-vocabulary ids. On CPU (tests) the "fp16" rows run in fp32."""
    from transformers import XLMRobertaModel

    from rayweave.models.bge_m3 import BgeM3Core, bge_m3_from_core

    cuda = device.startswith("cuda")
    half = torch.float16 if cuda else torch.float32
    torch.manual_seed(0)
    hidden = config.hidden_size
    core = BgeM3Core(
        XLMRobertaModel(config, add_pooling_layer=False),
        torch.nn.Linear(hidden, 1),
        torch.nn.Linear(hidden, hidden),
    ).eval()
    max_length = min(settings.models.max_tokens, 512)
    texts = list(texts)
    tokens = sum(
        len(r) for r in tokenizer(texts, truncation=True, max_length=max_length)["input_ids"]
    )

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    def plain(model: torch.nn.Module) -> Callable[[Sequence[str]], Any]:
        def run(batch_texts: Sequence[str]) -> None:
            with torch.inference_mode():
                for i in range(0, len(batch_texts), PLAIN_BATCH):
                    enc = tokenizer(
                        list(batch_texts[i : i + PLAIN_BATCH]),
                        padding=True,
                        truncation=True,
                        max_length=max_length,
                        return_tensors="pt",
                        return_token_type_ids=False,
                    ).to(device)
                    for out in model(enc["input_ids"], enc["attention_mask"]):
                        out.cpu()

        return run

    fp32 = copy.deepcopy(core).to(device=device)
    fp16 = copy.deepcopy(core).to(device=device, dtype=half)
    options = dataclasses.replace(
        RunOptions.from_settings(settings.models),
        plan=plan_execution(device="cuda" if cuda else "cpu", precision="fp16" if cuda else "fp32"),
        max_tokens=max_length,
    )
    ours = bge_m3_from_core(core, tokenizer, name="bge-m3-random", options=options)
    label = "fp16" if cuda else "fp32"
    variants = [
        Variant(label="plain torch fp32", docs=plain(fp32), queries=plain(fp32), baseline=True),
        Variant(label=f"plain torch {label}", docs=plain(fp16), queries=plain(fp16)),
        Variant(label=f"rayweave {label} dense", docs=ours.encode, queries=ours.encode),
        Variant(
            label=f"rayweave {label} dense+sparse+colbert",
            docs=ours.encode_all,
            queries=ours.encode_all,
        ),
    ]
    rows = measure(
        section="gpu",
        model="BGE-M3 architecture (random weights)",
        ds=None,
        variants=variants,
        sample=texts,
        sample_tokens=tokens,
        score=None,
        rounds=rounds,
        say=say,
        after_pass=sync,
        bar=bar,
    )
    return [dataclasses.replace(r, dataset=dataset) for r in rows]
