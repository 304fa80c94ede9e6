"""The configuration reference, `docs/configuration.md`, generated from the settings schema.

`rayweave config-docs --output docs/configuration.md` (or `python -m
rayweave.cluster.config_reference docs/configuration.md`) writes it. `tests/test_docs.py` fails
while the committed file differs from what `render_reference()` returns, and checks every setting
name and `RAYWEAVE_...` variable the docs mention against `setting_paths()`.
"""

from __future__ import annotations

import inspect
import json
import sys
import types
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from rayweave.cluster.settings import Settings

REFERENCE_PATH = Path("docs/configuration.md")
REGENERATE = "rayweave config-docs --output docs/configuration.md"

_PRIMITIVES: dict[Any, str] = {
    str: "str",
    int: "int",
    float: "float",
    bool: "bool",
    Path: "path",
    SecretStr: "secret",
    type(None): "None",
}


@dataclass(frozen=True, slots=True)
class SettingDoc:
    """One leaf setting: its dotted path, rendered type and default, and its description."""

    path: tuple[str, ...]
    type: str
    default: str
    description: str

    @property
    def name(self) -> str:
        return ".".join(self.path)

    @property
    def env(self) -> str:
        return env_name(self.path)


@dataclass(frozen=True, slots=True)
class GroupDoc:
    """One settings group (a TOML table): its path, what its class says, and its leaf settings."""

    path: tuple[str, ...]
    description: str
    settings: tuple[SettingDoc, ...]

    @property
    def name(self) -> str:
        return ".".join(self.path)


def env_name(path: Sequence[str]) -> str:
    """The environment variable of a setting or group path: `RAYWEAVE_SERVE__RETRIEVAL__REFINER`."""
    prefix = str(Settings.model_config.get("env_prefix", ""))
    delimiter = str(Settings.model_config.get("env_nested_delimiter", "__"))
    return prefix + delimiter.join(part.upper() for part in path)


def _group_model(annotation: Any) -> type[BaseModel] | None:
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return annotation
    return None


def groups(model: type[BaseModel] = Settings, path: tuple[str, ...] = ()) -> Iterator[GroupDoc]:
    """Every group under `model`, depth first, each with its leaf settings in declaration order."""
    leaves: list[SettingDoc] = []
    nested: list[tuple[str, type[BaseModel]]] = []
    for name, field in model.model_fields.items():
        sub = _group_model(field.annotation)
        if sub is not None:
            nested.append((name, sub))
            continue
        leaves.append(
            SettingDoc(
                path=(*path, name),
                type=type_name(field.annotation),
                default=default_text(field),
                description=" ".join((field.description or "").split()),
            )
        )
    doc = inspect.cleandoc(model.__doc__ or "")
    yield GroupDoc(path=path, description=doc, settings=tuple(leaves))
    for name, sub in nested:
        yield from groups(sub, (*path, name))


def setting_paths() -> frozenset[tuple[str, ...]]:
    """Every group path and leaf setting path of the schema."""
    found: set[tuple[str, ...]] = set()
    for group in groups():
        if group.path:
            found.add(group.path)
        found.update(setting.path for setting in group.settings)
    return frozenset(found)


def type_name(annotation: Any) -> str:
    """A short, TOML-minded name of a field's type: `int | None`, `"auto" | "cpu"`, `list[str]`."""
    if annotation in _PRIMITIVES:
        return _PRIMITIVES[annotation]
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Literal:
        return " | ".join(json.dumps(arg) for arg in args)
    if origin in (Union, types.UnionType):
        return " | ".join(type_name(arg) for arg in args)
    if origin in (tuple, list) and args:
        return f"list[{type_name(args[0])}]"
    return getattr(annotation, "__name__", str(annotation))


def _value_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Path):
        home = Path.home()
        shown = f"~/{value.relative_to(home)}" if value.is_relative_to(home) else str(value)
        return json.dumps(shown)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_value_text(item) for item in value) + "]"
    if isinstance(value, SecretStr):
        return '"**********"'
    return repr(value)


def default_text(field: FieldInfo) -> str:
    """The default as it would be written in rayweave.toml; `unset` for None."""
    if field.default is PydanticUndefined and field.default_factory is None:
        return "required"
    value = field.get_default(call_default_factory=True, validated_data={})
    if value is None:
        return "unset"
    return f"`{_value_text(value)}`"


def _cell(text: str, *, code: bool = False) -> str:
    """Text for a Markdown table cell: pipes escaped, and `<...>` outside code spans shown as
    written rather than read as HTML."""
    if code:
        return "`" + text.replace("|", "\\|") + "`"
    parts = text.split("`")
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts).replace("|", "\\|")


_PREAMBLE = """\
# Configuration reference

<!-- Generated from cluster/settings.py by `{regenerate}`; do not edit by hand. -->

Every setting of rayweave, generated from the typed settings schema (`cluster/settings.py`,
pydantic-settings). Regenerate this file with `{regenerate}`;
`tests/test_docs.py` fails while it is stale.

Where values come from, highest precedence first:

1. keyword arguments: the CLI's flags (`--collection`, `--host`, `--port`), a Serve app's `args`;
2. environment variables: `{prefix}` and the path in capitals, `{delimiter}` between groups
   (the variable is named under each setting below; lists are JSON, e.g.
   `{api_keys}='["key-a"]'`);
3. a TOML file: the one given with `--config FILE`, else `./rayweave.toml` when present;
4. the defaults below.

In TOML a group is a table (`[serve.retrieval]`) and a setting a key in it. Unknown keys are errors,
not ignored. A complete production file is
[examples/rayweave.production.toml](examples/rayweave.production.toml). Values shown as
`unset` are None: the setting is off, or rayweave picks a value as the description says.
"""


def render_reference() -> str:
    """The whole of docs/configuration.md."""
    lines = [
        _PREAMBLE.format(
            regenerate=REGENERATE,
            prefix=env_name(()),
            delimiter=Settings.model_config.get("env_nested_delimiter", "__"),
            api_keys=env_name(("serve", "api_keys")),
        )
    ]
    for group in groups():
        if group.path:
            lines.append(f"## `{group.name}`\n")
            lines.append(
                f"TOML table `[{group.name}]`; environment variables `{env_name(group.path)}__...`."
            )
            if group.description:
                lines.append("")
                lines.append(" ".join(group.description.split()))
        else:
            lines.append("## Top level\n")
            lines.append("Keys at the top of the file, before any table.")
        lines.append("")
        lines.append("| setting | type | default | description |")
        lines.append("| --- | --- | --- | --- |")
        for setting in group.settings:
            name = f"`{setting.path[-1]}`<br>`{setting.env}`"
            lines.append(
                f"| {name} | {_cell(setting.type, code=True)} | {_cell(setting.default)} "
                f"| {_cell(setting.description)} |"
            )
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m rayweave.cluster.config_reference [OUTPUT]`: write or print the reference."""
    args = list(sys.argv[1:] if argv is None else argv)
    text = render_reference()
    if args:
        Path(args[0]).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
