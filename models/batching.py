"""Length-sorted batches under a token budget.

A transformer pays for padded positions: a batch costs `rows x longest row`, and attention more.
Sorting texts by token length and cutting batches by a budget of padded tokens (not a row
count) keeps padding waste to a few percent, keeps memory per batch bounded whatever the length
mix (long documents get small batches, short queries large ones), and lets the caller put every
result back in input order through `Batch.indices`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True, kw_only=True)
class Batch:
    """Positions (into the caller's list) of the rows in one batch and its padded width."""

    indices: tuple[int, ...]
    width: int

    @property
    def padded_tokens(self) -> int:
        return len(self.indices) * self.width


def round_up(value: int, multiple: int) -> int:
    return value if multiple <= 1 else -(-value // multiple) * multiple


def plan_batches(
    lengths: Sequence[int],
    *,
    batch_tokens: int,
    max_batch_size: int,
    pad_to_multiple_of: int = 1,
    max_width: int | None = None,
) -> list[Batch]:
    """Group rows, longest first, so that `rows x padded width <= batch_tokens`.

    Longest first means the heaviest batch runs first: an out-of-memory problem shows up at once,
    not after an hour. A single row longer than the budget still gets a batch of its own (the
    caller truncates lengths beforehand). `pad_to_multiple_of` rounds the width up the way the
    padding will (8 on GPUs keeps tensor-core shapes), so the budget holds for the real tensors;
    `max_width` caps that rounding where the model has no positions beyond it.
    """
    if batch_tokens < 1:
        raise ValueError(f"batch_tokens must be >= 1, got {batch_tokens}")
    if max_batch_size < 1:
        raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
    if any(n < 0 for n in lengths):
        raise ValueError("lengths must be >= 0")
    # Stable sort: equal lengths keep input order, so plans are deterministic.
    order = np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")

    def width_of(n: int) -> int:
        width = round_up(max(n, 1), pad_to_multiple_of)
        return width if max_width is None else max(min(width, max_width), n)

    batches: list[Batch] = []
    current: list[int] = []
    width = 0
    for idx in order.tolist():
        if not current:
            current, width = [idx], width_of(int(lengths[idx]))
            continue
        # Rows arrive longest first, so the batch width never grows after its first row.
        if len(current) < max_batch_size and (len(current) + 1) * width <= batch_tokens:
            current.append(idx)
        else:
            batches.append(Batch(indices=tuple(current), width=width))
            current, width = [idx], width_of(int(lengths[idx]))
    if current:
        batches.append(Batch(indices=tuple(current), width=width))
    return batches


def padding_waste(lengths: Sequence[int], batches: Sequence[Batch]) -> float:
    """Fraction of padded positions that hold padding (0 = none wasted)."""
    padded = sum(b.padded_tokens for b in batches)
    real = sum(int(lengths[i]) for b in batches for i in b.indices)
    return 0.0 if padded == 0 else 1.0 - real / padded


def pad_batch(
    rows: Sequence[Sequence[int]], *, width: int, pad_id: int
) -> tuple[np.ndarray, np.ndarray]:
    """Right-pad token id rows to `width`: (input_ids, attention_mask), both int64."""
    ids = np.full((len(rows), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for r, row in enumerate(rows):
        n = min(len(row), width)
        ids[r, :n] = row[:n]
        mask[r, :n] = 1
    return ids, mask
