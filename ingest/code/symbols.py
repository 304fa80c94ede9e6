"""Symbols of parsed code: the definitions in a run of syntax nodes, and what they call and use."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rayweave.ingest.code.identifiers import SELF, word_set
from rayweave.ingest.code.imports import FileIndex
from rayweave.ingest.code.languages import LanguageSpec
from rayweave.ingest.code.parsing import Source, walk
from rayweave.ingest.code.syntax import STRIP_ARGS, classify, go_receiver, kind_of, name_of, unwrap
from rayweave.ingest.code.units import CodeDefinition

_GENERIC_ARGS = re.compile(r"(?:::)?<[^()]*>")
_SEGMENTS = re.compile(r"[.:]+")
# Callees that are control flow, operators or the receiver itself, not calls to anything.
_KEYWORDS = word_set(
    "if for while return switch catch sizeof typeof new delete print assert require revert emit "
    "super self this cls true false none null nil undefined"
)
# Definition kinds whose functions are methods.
_CLASS_KINDS = word_set(
    "class interface impl trait contract library record enum struct object protocol extension"
)
# Type names every file uses: as references they would link everything to everything.
BUILTIN_TYPES = word_set(
    "int int8 int16 int32 int64 uint uint8 uint16 uint32 uint64 uintptr float32 float64 complex64 "
    "complex128 bool byte rune string error any str float bytes object list dict set tuple Self "
    "i8 i16 i32 i64 i128 isize u8 u16 u32 u64 u128 usize f32 f64 char void boolean double long "
    "short number bigint symbol unknown never address uint256 bytes32 Integer String Object "
    "Boolean"
)


def callee(node: Any, field_name: str, spec: LanguageSpec, src: Source) -> str:
    """The callee as written; `field_name` "" means the call's first named child (Kotlin, Swift)."""
    if field_name:
        target = node.child_by_field_name(field_name)
    else:
        target = node.named_children[0] if node.named_children else None
    if target is None:
        return ""
    text = src.node_text(target)
    receiver = spec.receivers.get(node.type) or (
        "object" if node.type == "method_invocation" else ""
    )
    obj = node.child_by_field_name(receiver) if receiver else None
    if obj is not None:
        text = f"{src.node_text(obj)}.{text}"
    text = STRIP_ARGS.sub("", text).replace("$", "").replace("?->", ".").replace("->", ".")
    text = _GENERIC_ARGS.sub("", text)  # `new Dictionary<string, int>()`, `make_shared<T>`
    if len(text) > 80 or "(" in text:
        # chained calls: keep the last segment only
        text = re.split(r"[.:]+", text.rstrip(")"))[-1].split("(")[0]
    return SELF.sub("", text).removesuffix("!")


@dataclass(slots=True)
class Uses:
    """What a run of syntax nodes defines, calls, references and depends on."""

    definitions: list[CodeDefinition]
    calls: list[str]
    references: list[str]
    dependencies: list[str]


def collect(
    nodes: Sequence[Any],
    spec: LanguageSpec,
    src: Source,
    index: FileIndex,
    prefix: tuple[str, ...],
    parent_kind: str = "",
) -> Uses:
    """Definitions inside `nodes` (qualified), calls, names used and the imports they come from."""
    definitions = _definitions(nodes, spec, src, prefix, parent_kind)
    own = {d.name for d in definitions}
    calls, refs, idents = _names_used(nodes, spec, src)
    for name in sorted(idents):
        if name in index.bound or name in index.top_names or (name.isupper() and len(name) > 1):
            refs.append(name)
    deps = []
    for name in sorted(idents | {_SEGMENTS.split(c)[0] for c in calls}):
        module = index.bound.get(name)
        if module:
            deps.append(module)
    if nodes:
        lo, hi = nodes[0].start_byte, nodes[-1].end_byte
        deps.extend(module for module, _names, offset in index.imports if lo <= offset < hi)
    references = [r for r in refs if r not in own or r in index.bound]
    return Uses(definitions, calls, references, deps)


def _definitions(
    nodes: Sequence[Any],
    spec: LanguageSpec,
    src: Source,
    prefix: tuple[str, ...],
    parent_kind: str,
) -> list[CodeDefinition]:
    """The named definitions in `nodes` and below, qualified by the definitions around them."""
    definitions: list[CodeDefinition] = []
    stack = [(n, prefix, parent_kind) for n in reversed(nodes)]
    while stack:
        cur, path, outer_kind = stack.pop()
        inner = unwrap(cur, spec)
        kind = classify(inner, spec)
        next_path, next_kind = path, outer_kind
        if kind != "other":
            next_kind = kind_of(inner, spec, kind)
            definition = _definition(inner, spec, src, path, next_kind, outer_kind)
            if definition is not None:
                definitions.append(definition)
                next_path, next_kind = (*path, definition.name), definition.kind
        for child in reversed(inner.named_children):
            if child.type not in spec.comments:
                stack.append((child, next_path, next_kind))
    return definitions


def _definition(
    node: Any, spec: LanguageSpec, src: Source, path: tuple[str, ...], kind: str, outer_kind: str
) -> CodeDefinition | None:
    name = name_of(node, spec, src)
    if not name:
        return None
    qual = ".".join((*path, name))
    if "::" in name and spec.name == "cpp":  # `void Resolver::lookup()` out of line
        qual = ".".join((*path, *name.split("::")))
        name = name.rsplit("::", 1)[-1]
        kind = "method" if kind == "function" else kind
    if kind == "function" and outer_kind in _CLASS_KINDS:
        kind = "method"
    if node.type == "method_declaration" and spec.name == "go":
        recv = node.child_by_field_name("receiver")
        rtype = go_receiver(recv, src) if recv is not None else ""
        qual = f"{rtype}.{name}" if rtype else qual
    return CodeDefinition(
        name=name,
        qualified_name=qual,
        kind=kind,
        start_line=node.start_point[0] + 1,
        end_line=node.end_point[0] + 1,
    )


def _names_used(
    nodes: Sequence[Any], spec: LanguageSpec, src: Source
) -> tuple[list[str], list[str], set[str]]:
    """(calls, referenced names, identifiers) in `nodes`, outside their imports."""
    call_fields = dict(spec.calls)
    calls: list[str] = []
    refs: list[str] = []
    idents: set[str] = set()
    for top in nodes:
        if top.type in spec.imports:
            continue
        for n in walk(top):
            t = n.type
            if t in call_fields:
                name = callee(n, call_fields[t], spec, src)
                if (
                    name
                    and name.split(".")[-1].lower() not in _KEYWORDS
                    and name not in BUILTIN_TYPES
                ):
                    calls.append(name)
                    refs.append(_SEGMENTS.split(name)[-1])
            elif t in spec.types:
                name = src.node_text(n)
                if name not in BUILTIN_TYPES:
                    refs.append(name)
            elif t in spec.identifiers:
                idents.add(src.node_text(n))
    return calls, refs, idents
