"""Notebooks of every saved version reach the renderer in the v4 layout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rayweave.cluster.errors import SourceError
from rayweave.cluster.settings import IngestSettings
from rayweave.cluster.types import ContentType
from rayweave.ingest.content_types import sniff_text
from rayweave.ingest.notebooks import load_notebook
from rayweave.ingest.readers import read_document
from rayweave.ingest.structure import notebook_to_markdown

# An IPython 2 (nbformat 3) notebook: cells under worksheets, code under `input`, a heading cell,
# `pyout`/`pyerr` outputs.
V3 = {
    "nbformat": 3,
    "nbformat_minor": 0,
    "metadata": {"name": "retries"},
    "worksheets": [
        {
            "cells": [
                {"cell_type": "heading", "level": 1, "source": ["Retrying tasks"], "metadata": {}},
                {
                    "cell_type": "markdown",
                    "source": ["A task retries\n", "with backoff."],
                    "metadata": {},
                },
                {
                    "cell_type": "code",
                    "language": "python",
                    "input": ["delay = backoff(3)\n", "delay"],
                    "collapsed": False,
                    "metadata": {},
                    "prompt_number": 1,
                    "outputs": [
                        {
                            "output_type": "pyout",
                            "text": ["8.0"],
                            "prompt_number": 1,
                            "metadata": {},
                        },
                        {"output_type": "stream", "stream": "stdout", "text": ["retrying\n"]},
                        {
                            "output_type": "pyerr",
                            "ename": "RetryError",
                            "evalue": "gave up",
                            "traceback": ["RetryError: gave up"],
                        },
                    ],
                },
            ],
            "metadata": {},
        }
    ],
}


class TestLoadNotebook:
    def test_v3_is_upgraded(self) -> None:
        nb = load_notebook(json.dumps(V3))
        assert [c["cell_type"] for c in nb["cells"]] == ["markdown", "markdown", "code"]
        assert nb["cells"][2]["source"] == "delay = backoff(3)\ndelay"

    def test_v3_renders_like_v4(self) -> None:
        text, lang = notebook_to_markdown(json.dumps(V3))
        assert lang == "python"
        assert text.startswith("# Retrying tasks\n\nA task retries\nwith backoff.\n\n")
        assert "```python\ndelay = backoff(3)\ndelay\n```" in text
        assert "```output\n8.0\n```" in text
        assert "retrying" in text
        assert "RetryError: gave up" in text

    def test_v4_is_read_leniently(self) -> None:
        nb = load_notebook(json.dumps({"cells": [{"cell_type": "markdown", "source": "x"}, 1]}))
        assert len(nb["cells"]) == 2

    def test_bad_input_names_the_problem(self) -> None:
        with pytest.raises(SourceError, match="invalid notebook JSON"):
            load_notebook('{"worksheets": [')
        with pytest.raises(SourceError, match="nbformat 3 notebook"):
            load_notebook(json.dumps({"nbformat": 3, "worksheets": "not a list"}))
        with pytest.raises(SourceError, match="no 'cells' list"):
            load_notebook(json.dumps({"nbformat": 4, "cells": "not a list"}))

    def test_v3_file_is_read_titled_and_sniffed(
        self, tmp_path: Path, settings: IngestSettings
    ) -> None:
        path = tmp_path / "retries.ipynb"
        path.write_text(json.dumps(V3, indent=1))
        doc = read_document(path, settings)
        assert doc.content_type == ContentType.NOTEBOOK
        assert doc.title == "Retrying tasks"
        assert sniff_text(path.read_text()).content_type == ContentType.NOTEBOOK
