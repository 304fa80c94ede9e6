"""What a core's forward takes: the example batch ONNX export traces, and the keyword arguments
of the wrapped Hugging Face model."""

from __future__ import annotations

from typing import Any

import torch

_FEATURES = ("input_ids", "attention_mask", "token_type_ids")


def example_features(tokenizer: Any) -> dict[str, torch.Tensor]:
    """A two-row padded batch with the inputs the tokenizer produces (input_ids, attention_mask and
    token_type_ids when it has them): the sample that ONNX export traces."""
    enc = tokenizer(
        ["an example query", "an example passage with a few more words in it"],
        padding=True,
        return_tensors="pt",
    )
    names = [n for n in _FEATURES if n != "token_type_ids" or n in tokenizer.model_input_names]
    return {
        name: enc[name] if name in enc else torch.zeros_like(enc["input_ids"]) for name in names
    }


def model_inputs(
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    token_type_ids: torch.Tensor | None = None,
) -> dict[str, torch.Tensor]:
    """A core's forward arguments as the wrapped Hugging Face model takes them: token types only
    when the tokenizer makes them."""
    features = {"input_ids": input_ids, "attention_mask": attention_mask}
    if token_type_ids is not None:
        features["token_type_ids"] = token_type_ids
    return features


class FeatureCore(torch.nn.Module):
    """A core over a Hugging Face model: the `forward(ids, mask[, types])` signature that export
    traces and runners feed, handing `head` the model's keyword arguments."""

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        return self.head(model_inputs(input_ids, attention_mask, token_type_ids))

    def head(self, features: dict[str, torch.Tensor]) -> torch.Tensor:
        raise NotImplementedError
