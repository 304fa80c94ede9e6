"""Validate custom resources offline against their CustomResourceDefinition schemas.

A CRD's `openAPIV3Schema` is a *structural* OpenAPI v3 schema with Kubernetes extensions; the
API server enforces it when an object is created. No cluster runs here, so this module converts
that schema to JSON Schema (draft 2020-12) and validates with `jsonschema`, strictly, the way
`kubectl apply` (server-side field validation "Strict", the default since Kubernetes 1.27) would:

- an unknown field is an error wherever the schema lists `properties` and does not set
  `x-kubernetes-preserve-unknown-fields` (the API server would reject it, not silently prune it);
- `x-kubernetes-int-or-string` accepts an integer or a string;
- `null` is accepted only where the schema says `nullable: true` (the API server drops other nulls,
  but in a manifest they are always a mistake, e.g. a YAML key left without a value);
- `format: int32`/`int64` become numeric bounds, `x-kubernetes-list-type: set` requires unique
  items and `map` unique `x-kubernetes-list-map-keys`;
- the top-level `metadata` is checked against Kubernetes' strict ObjectMeta schema when one is
  given (the API server validates it as ObjectMeta; the CRD only says `type: object`).

CEL rules (`x-kubernetes-validations`) are not evaluated; `CrdValidator.cel_guarded_paths` lists
the fields of an object that carry them so a caller can insist that none are set.

A schema keyword this converter does not know raises `ValueError`: a newer CRD must not be
validated less strictly without anyone noticing.

Usage: `CrdValidator.from_files(Path("crds").glob("*.yaml")).errors(obj)` returns a list of
`"<path>: <message>"` strings, empty when the object is valid.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from referencing import Registry, Resource

__all__ = ["CrdValidator", "openapi_to_json_schema"]

_INT_BOUNDS = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}

# Keywords copied unchanged (value constraints that mean the same in both dialects).
_PLAIN = frozenset(
    {
        "enum",
        "pattern",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
        "minProperties",
        "maxProperties",
        "uniqueItems",
        "multipleOf",
        "required",
        "default",
    }
)
# Keywords that only annotate or only matter to the API server's pruning and defaulting.
_IGNORED = frozenset(
    {
        "description",
        "example",
        "externalDocs",
        "title",
        "x-kubernetes-map-type",
        "x-kubernetes-validations",
    }
)
_HANDLED = frozenset(
    {
        "type",
        "format",
        "properties",
        "additionalProperties",
        "items",
        "nullable",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "x-kubernetes-int-or-string",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys",
    }
)
_LIST_MAP_KEYS = "x-rayweave-list-map-keys"
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def openapi_to_json_schema(
    node: Mapping[str, Any], *, path: str = "", object_meta_ref: str | None = None
) -> dict[str, Any]:
    """Convert one structural-schema node (and everything below it) to strict JSON Schema.

    `object_meta_ref`, when given, is a `$ref` used for the root's `metadata` property.
    """
    unknown = set(node) - _PLAIN - _IGNORED - _HANDLED
    if unknown:
        raise ValueError(f"unsupported CRD schema keyword(s) {sorted(unknown)} at {path or '/'}")

    out: dict[str, Any] = {k: node[k] for k in _PLAIN if k in node}
    _convert_type(node, out)
    _convert_object(node, out, path=path, object_meta_ref=object_meta_ref)
    _convert_subschemas(node, out, path=path)
    _convert_list_type(node, out, path=path)
    return out


def _convert_type(node: Mapping[str, Any], out: dict[str, Any]) -> None:
    """`type` (int-or-string, nullable) and the bounds an integer `format` implies."""
    if node.get("x-kubernetes-int-or-string"):
        # The CRD spells this as anyOf[integer, string]; a type list says the same more simply.
        out["type"] = ["integer", "string"]
    elif "type" in node:
        out["type"] = node["type"]
    if bool(node.get("nullable", False)) and "type" in out:
        types = out["type"] if isinstance(out["type"], list) else [out["type"]]
        out["type"] = [*types, "null"]

    fmt = node.get("format")
    if fmt in _INT_BOUNDS and node.get("type") == "integer":
        low, high = _INT_BOUNDS[fmt]
        out.setdefault("minimum", low)
        out.setdefault("maximum", high)


def _convert_object(
    node: Mapping[str, Any], out: dict[str, Any], *, path: str, object_meta_ref: str | None
) -> None:
    """`properties` (an embedded resource's apiVersion, kind and metadata included) and
    `additionalProperties`, strict unless the schema preserves unknown fields."""
    properties = dict(node.get("properties", {}))
    if node.get("x-kubernetes-embedded-resource"):
        for key in ("apiVersion", "kind"):
            properties.setdefault(key, {"type": "string"})
        properties.setdefault(
            "metadata", {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        )
    if properties:
        out["properties"] = {
            name: (
                {"$ref": object_meta_ref}
                if object_meta_ref is not None and path == "" and name == "metadata"
                else openapi_to_json_schema(sub, path=f"{path}/{name}")
            )
            for name, sub in properties.items()
        }

    additional = node.get("additionalProperties")
    if isinstance(additional, Mapping):
        out["additionalProperties"] = openapi_to_json_schema(additional, path=f"{path}/*")
    elif isinstance(additional, bool):
        out["additionalProperties"] = additional
    elif node.get("type") == "object" and not node.get("x-kubernetes-preserve-unknown-fields"):
        # Strict: a field the schema does not name is rejected. An object schema with neither
        # properties nor additionalProperties accepts only `{}` (everything else would be pruned).
        out["additionalProperties"] = False


def _convert_subschemas(node: Mapping[str, Any], out: dict[str, Any], *, path: str) -> None:
    if "items" in node:
        out["items"] = openapi_to_json_schema(node["items"], path=f"{path}[]")
    for key in ("allOf", "anyOf", "oneOf"):
        if key in node and not node.get("x-kubernetes-int-or-string"):
            out[key] = [
                openapi_to_json_schema(sub, path=f"{path}/{key}{i}")
                for i, sub in enumerate(node[key])
            ]
    if "not" in node:
        out["not"] = openapi_to_json_schema(node["not"], path=f"{path}/not")


def _convert_list_type(node: Mapping[str, Any], out: dict[str, Any], *, path: str) -> None:
    list_type = node.get("x-kubernetes-list-type")
    if list_type == "set":
        out["uniqueItems"] = True
    elif list_type == "map":
        out[_LIST_MAP_KEYS] = list(node.get("x-kubernetes-list-map-keys", []))
    elif list_type not in (None, "atomic"):
        raise ValueError(f"unsupported x-kubernetes-list-type {list_type!r} at {path or '/'}")


def _list_map_keys(
    validator: Any, keys: list[str], instance: Any, schema: Mapping[str, Any]
) -> Iterator[jsonschema.ValidationError]:
    """Items of a list-map must be unique by their key fields (the API server merges by them)."""
    if not isinstance(instance, list) or not keys:
        return
    fields = (schema.get("items") or {}).get("properties") or {}
    defaults = {k: (fields.get(k) or {}).get("default") for k in keys}
    seen: dict[tuple[Any, ...], int] = {}
    for index, item in enumerate(instance):
        if not isinstance(item, Mapping):
            continue
        # A missing key field counts as its default (a port's protocol defaults to TCP).
        key = tuple(item.get(k, defaults[k]) for k in keys)
        if key in seen:
            shown = ", ".join(f"{k}={v!r}" for k, v in zip(keys, key, strict=True))
            yield jsonschema.ValidationError(
                f"duplicate entry ({shown}) at indexes {seen[key]} and {index}"
            )
        else:
            seen[key] = index


_StrictValidator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator, {_LIST_MAP_KEYS: _list_map_keys}
)


@dataclass(frozen=True, kw_only=True)
class _Version:
    schema: dict[str, Any]
    cel_paths: tuple[tuple[str, ...], ...]


def _cel_paths(node: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    if node.get("x-kubernetes-validations"):
        yield prefix
    for name, sub in node.get("properties", {}).items():
        yield from _cel_paths(sub, (*prefix, name))
    if isinstance(node.get("items"), Mapping):
        yield from _cel_paths(node["items"], (*prefix, "[]"))
    if isinstance(node.get("additionalProperties"), Mapping):
        yield from _cel_paths(node["additionalProperties"], (*prefix, "*"))


class CrdValidator:
    """Strict offline validation of custom resources, keyed by (apiVersion, kind)."""

    def __init__(
        self,
        crds: Iterable[Mapping[str, Any]],
        *,
        object_meta_definitions: Mapping[str, Any] | None = None,
    ) -> None:
        """`object_meta_definitions`: a JSON Schema document whose `$defs` hold Kubernetes'
        `io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta` and what it references (e.g.
        kubernetes-validate's strict `_definitions.json`); without it `metadata` is only
        checked to be an object."""
        self._registry: Registry[Any] = Registry()
        meta_ref = None
        if object_meta_definitions is not None:
            uri = str(object_meta_definitions.get("$id", "urn:rayweave:k8s-definitions"))
            if _OBJECT_META not in object_meta_definitions.get("$defs", {}):
                raise ValueError(f"the definitions document {uri} has no $defs/{_OBJECT_META}")
            self._registry = Resource.from_contents(dict(object_meta_definitions)) @ self._registry
            meta_ref = f"{uri}#/$defs/{_OBJECT_META}"
        self._versions: dict[tuple[str, str], _Version] = {}
        for crd in crds:
            if crd.get("kind") != "CustomResourceDefinition":
                raise ValueError(f"not a CustomResourceDefinition: {crd.get('kind')!r}")
            group = crd["spec"]["group"]
            kind = crd["spec"]["names"]["kind"]
            for version in crd["spec"]["versions"]:
                openapi = version["schema"]["openAPIV3Schema"]
                schema = openapi_to_json_schema(openapi, object_meta_ref=meta_ref)
                schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
                self._versions[(f"{group}/{version['name']}", kind)] = _Version(
                    schema=schema, cel_paths=tuple(_cel_paths(openapi))
                )

    @classmethod
    def from_files(
        cls, paths: Iterable[Path], *, object_meta_definitions: Mapping[str, Any] | None = None
    ) -> CrdValidator:
        """Load every CustomResourceDefinition found in the given YAML files."""
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the CRDs are megabytes of YAML
        crds: list[Mapping[str, Any]] = []
        for path in sorted(paths):
            with path.open(encoding="utf-8") as handle:
                crds.extend(
                    doc
                    for doc in yaml.load_all(handle, Loader=loader)
                    if isinstance(doc, Mapping) and doc.get("kind") == "CustomResourceDefinition"
                )
        if not crds:
            raise ValueError(f"no CustomResourceDefinition in {[str(p) for p in paths]}")
        return cls(crds, object_meta_definitions=object_meta_definitions)

    @property
    def kinds(self) -> frozenset[tuple[str, str]]:
        """(apiVersion, kind) pairs this validator knows."""
        return frozenset(self._versions)

    def knows(self, obj: Mapping[str, Any]) -> bool:
        return (obj.get("apiVersion"), obj.get("kind")) in self._versions

    def schema(self, api_version: str, kind: str) -> dict[str, Any]:
        """The converted JSON Schema of one kind (for inspection and tests)."""
        return self._version(api_version, kind).schema

    def errors(self, obj: Mapping[str, Any]) -> list[str]:
        """Every schema violation of `obj` as `"<path>: <message>"`, sorted; empty when valid."""
        version = self._version(str(obj.get("apiVersion")), str(obj.get("kind")))
        validator = _StrictValidator(version.schema, registry=self._registry)
        found = []
        for error in validator.iter_errors(obj):
            where = "/".join(str(p) for p in error.absolute_path) or "/"
            found.append(f"{where}: {error.message}")
        return sorted(found)

    def cel_guarded_paths(self, obj: Mapping[str, Any]) -> list[str]:
        """Paths set in `obj` whose schema carries CEL rules that `errors` did not evaluate."""
        version = self._version(str(obj.get("apiVersion")), str(obj.get("kind")))
        hits: list[str] = []
        for pattern in version.cel_paths:
            hits.extend(_match(obj, pattern, ()))
        return sorted(hits)

    def _version(self, api_version: str, kind: str) -> _Version:
        try:
            return self._versions[(api_version, kind)]
        except KeyError:
            known = ", ".join(f"{a} {k}" for a, k in sorted(self._versions))
            raise ValueError(f"no CRD schema for {api_version} {kind}; known: {known}") from None


def _match(node: Any, pattern: tuple[str, ...], at: tuple[str, ...]) -> Iterator[str]:
    if not pattern:
        yield "/".join(at) or "/"
        return
    head, rest = pattern[0], pattern[1:]
    if head == "[]" and isinstance(node, list):
        for index, item in enumerate(node):
            yield from _match(item, rest, (*at, str(index)))
    elif head == "*" and isinstance(node, Mapping):
        for key, value in node.items():
            yield from _match(value, rest, (*at, str(key)))
    elif isinstance(node, Mapping) and head in node:
        yield from _match(node[head], rest, (*at, head))
