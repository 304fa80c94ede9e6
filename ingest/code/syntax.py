"""Reading one grammar's syntax nodes through its `LanguageSpec`: roles, names, bodies, kinds."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from rayweave.ingest.code.languages import LanguageSpec
from rayweave.ingest.code.parsing import Source, walk

STRIP_ARGS = re.compile(r"\s+")


def name_of(node: Any, spec: LanguageSpec, src: Source) -> str:
    t = node.type
    if t == "impl_item":
        typ = node.child_by_field_name("type")  # `impl Trait for Type` is named by the type
        if typ is not None:
            return src.node_text(typ)
    if t in ("type_declaration", "const_declaration", "var_declaration"):
        for child in node.named_children:
            n = child.child_by_field_name("name")
            if n is not None:
                return src.node_text(n)
        return ""
    if t == "constructor_definition":
        return "constructor"
    if t in spec.fixed_names:
        return spec.fixed_names[t]
    if t in spec.declarators:
        for child in node.named_children:
            if child.type == "variable_declarator":
                n = child.child_by_field_name("name")
                if n is not None:
                    return src.node_text(n)
        return ""
    n = node.child_by_field_name("name")
    if n is not None:
        return src.node_text(n)
    declarator = node.child_by_field_name("declarator")
    if declarator is not None:  # C/C++: `int *f(void)`, `typedef struct {...} name_t`
        return declared_name(declarator, src)
    return ""


def declared_name(node: Any, src: Source) -> str:
    """The name inside a C declarator chain (pointer -> function -> identifier)."""
    for _ in range(16):
        inner = node.child_by_field_name("declarator")
        if inner is None and node.type.endswith("_declarator") and node.named_children:
            inner = node.named_children[-1]  # `&name` (reference_declarator) has no field
        if inner is None:
            break
        node = inner
    if node.type.endswith(("identifier", "_name")):
        return STRIP_ARGS.sub("", src.node_text(node))
    return ""


def body_of(node: Any, spec: LanguageSpec) -> Any | None:
    """A definition's body: the `body` field, or a child of a body type (Kotlin has no field)."""
    body = node.child_by_field_name("body")
    if body is None and spec.bodies:
        body = next((c for c in node.named_children if c.type in spec.bodies), None)
    return body


def expand(nodes: Sequence[Any], spec: LanguageSpec) -> list[Any]:
    """`nodes` with transparent wrappers (`#ifndef GUARD ... #endif`) replaced by their children."""
    if not spec.transparent:
        return list(nodes)
    out: list[Any] = []
    for node in nodes:
        if node.type in spec.transparent:
            out.extend(expand(node.children, spec))
        else:
            out.append(node)
    return out


def unwrap(node: Any, spec: LanguageSpec) -> Any:
    """The definition inside export/decorator wrappers, or the node itself."""
    seen = 0
    while node.type in spec.wrappers and seen < 4:
        inner = node.child_by_field_name("definition") or node.child_by_field_name("declaration")
        if inner is None:
            named = [c for c in node.named_children if c.type not in ("decorator", "comment")]
            inner = named[-1] if named else None
        if inner is None:
            break
        node = inner
        seen += 1
    return node


def is_function_declarator(node: Any, spec: LanguageSpec) -> bool:
    """`const f = () => ...` / `var f = function () {}` count as functions."""
    if node.type not in spec.declarators:
        return False
    for child in node.named_children:
        if child.type == "variable_declarator":
            value = child.child_by_field_name("value")
            if value is not None and value.type in (
                "arrow_function",
                "function_expression",
                "function",
                "generator_function",
            ):
                return True
    return False


def classify(node: Any, spec: LanguageSpec) -> str:
    """container | function | definition | other, for a node already unwrapped."""
    t = node.type
    if t in spec.bodied and (
        node.child_by_field_name("body") is None
        or (node.parent is not None and node.parent.type in spec.definitions)
    ):
        return "other"  # `struct s *p` names a type; `typedef struct {...} t` defines `t`
    if t in spec.containers:
        return "container"
    if t in spec.functions or is_function_declarator(node, spec):
        return "function"
    if t in spec.definitions:
        return "definition"
    return "other"


_KEYWORD_KINDS = {
    "class": "class",
    "interface": "interface",
    "struct": "struct",
    "enum": "enum",
    "extension": "extension",
    "actor": "class",
    "protocol": "protocol",
}


def kind_of(node: Any, spec: LanguageSpec, default: str) -> str:
    """The definition kind; one node type makes several in Swift and Kotlin (`struct`,
    `interface`)."""
    kind = spec.kind(node.type, default)
    if kind == "class":
        if _has_class_modifier(node, "enum"):  # Kotlin `enum class`
            return "enum"
        decl = node.child_by_field_name("declaration_kind")  # Swift
        keywords = [decl] if decl is not None else [c for c in node.children if not c.is_named]
        for k in keywords:
            if k.type in _KEYWORD_KINDS:
                return _KEYWORD_KINDS[k.type]
    return kind


def _has_class_modifier(node: Any, keyword: str) -> bool:
    return any(
        token.type == keyword
        for mods in node.children
        if mods.type == "modifiers"
        for modifier in mods.children
        if modifier.type == "class_modifier"
        for token in modifier.children
    )


def go_receiver(recv: Any, src: Source) -> str:
    for n in walk(recv):
        if n.type == "type_identifier":
            return src.node_text(n)
    return ""
