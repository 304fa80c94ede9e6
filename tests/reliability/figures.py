"""The reliability suite's figures: printed, and appended to `artifacts/reliability/figures.jsonl`
for the README and the issue notes."""

from __future__ import annotations

import json
from pathlib import Path

FIGURES = Path(__file__).resolve().parents[2] / "artifacts" / "reliability" / "figures.jsonl"


def record(**figures: object) -> None:
    print("reliability:", figures)
    FIGURES.parent.mkdir(parents=True, exist_ok=True)
    with FIGURES.open("a") as fh:
        fh.write(json.dumps(figures) + "\n")
