"""Jupyter notebooks as one plain v4 dict, whatever version was saved.

`nbformat` upgrades older notebooks (v3 keeps cells under `worksheets`, code under `input`,
headings as their own cell type; v1-v2 older still) to the v4 layout. Version 4 notebooks are
only parsed, not validated: nbformat's validator rejects files Jupyter itself opens (a missing
`nbformat` key, a stray non-cell in `cells`), and the renderer skips what it cannot use.
"""

from __future__ import annotations

import json
from typing import Any

from rayweave.cluster.errors import SourceError


def load_notebook(text: str) -> dict[str, Any]:
    """The notebook in `text` in v4 layout; SourceError naming the problem when it is none."""
    try:
        nb: object = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceError(
            f"invalid notebook JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    if not isinstance(nb, dict):
        raise SourceError("not a Jupyter notebook (no 'cells' list)")
    major = nb.get("nbformat")
    if (isinstance(major, int) and major < 4) or "worksheets" in nb:
        nb = _upgrade(text, nb.get("nbformat", 3))
    if not isinstance(nb.get("cells"), list):
        raise SourceError("not a Jupyter notebook (no 'cells' list)")
    return nb


def _upgrade(text: str, version: object) -> dict[str, Any]:
    from nbformat import convert, reader

    try:
        # reader.reads joins split-line sources the way each version stores them; no validation.
        upgraded = convert(reader.reads(text), 4)  # type: ignore[no-untyped-call]
    except Exception as exc:  # nbformat's converters raise whatever the bad input trips
        raise SourceError(
            f"cannot upgrade this nbformat {version} notebook to version 4: {exc}"
        ) from exc
    plain: dict[str, Any] = json.loads(json.dumps(upgraded))
    return plain
