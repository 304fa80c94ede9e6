"""Ingestion as a Ray job:
`ray job submit --working-dir . -- python -m rayweave.ingest.job PATH...`.

The job's driver runs on the cluster, so `ray.init()` joins it through the address Ray's job
runner provides; configuration comes from the cluster's environment (`RAYWEAVE_*`) or `--config`.
Exit status: 0 when every document landed, 3 when some failed (listed), 2 for bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from rich.console import Console

from rayweave.cluster.errors import InputError, RayweaveError
from rayweave.cluster.logging_setup import configure_logging
from rayweave.cluster.settings import load_settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rayweave.ingest.job", description=__doc__)
    parser.add_argument(
        "paths", nargs="+", type=Path, help="files or folders (or one BEIR folder with --beir)"
    )
    parser.add_argument("--config", type=Path, default=None, help="rayweave.toml to read")
    parser.add_argument("--collection", default=None, help="namespace to ingest into")
    parser.add_argument("--beir", action="store_true", help="the path is a BEIR folder")
    parser.add_argument("--report", type=Path, default=None, help="write the summary as JSON here")
    args = parser.parse_args(argv)

    console = Console(stderr=True, force_terminal=False)
    try:
        settings = load_settings(args.config)
        configure_logging(settings.log_level, encoding=settings.log_encoding)
        from rayweave.cluster.services.runtime import apply_ray_environment

        apply_ray_environment(settings)
        import ray

        from rayweave.ingest.pipeline import run_ingest

        if (
            settings.ray.address is None
            and os.environ.get("RAY_ADDRESS")
            and not ray.is_initialized()
        ):
            # Inside `ray job submit` the job runner sets RAY_ADDRESS; run directly, the job
            # falls through to rayweave's own head (started if needed) like `rayweave ingest`.
            ray.init(namespace=settings.ray.namespace, log_to_driver=False)
        summary = run_ingest(
            settings, args.paths, beir=args.beir, console=console, collection=args.collection
        )
    except InputError as exc:
        console.print(f"error: {exc}", markup=False, highlight=False)
        return 2
    except RayweaveError as exc:
        console.print(f"error: {exc}", markup=False, highlight=False)
        return 1
    print(summary.render())
    if args.report:
        args.report.write_text(json.dumps(summary.to_dict(), indent=2))
    return 3 if summary.errors else 0


if __name__ == "__main__":
    sys.exit(main())
