"""Where the bundled Ferry sample corpus lives (package data), for demos and end-to-end tests."""

from __future__ import annotations

from importlib.resources import as_file, files
from pathlib import Path

from rayweave.cluster.errors import SourceError


def sample_corpus() -> Path:
    """The folder of the sample corpus inside the installed package.

    `ingest/sample_corpus/README.md` describes it; `bench/sample_queries.json` holds
    questions with the files that answer them.
    """
    resource = files("rayweave.ingest") / "sample_corpus"
    with as_file(resource) as path:  # a real folder for regular and editable installs
        folder = Path(path)
    if not (folder / "docs").is_dir():
        raise SourceError(
            f"sample corpus missing at {folder} (package data not installed)", path=str(folder)
        )
    return folder
