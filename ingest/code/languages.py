"""The languages tree-sitter parses here: one table row per grammar, read by one walker.

Each row maps the grammar's node types to their role (container, function, definition) and to
the kind of definition they make; the other fields say where that grammar keeps imports, calls,
comments and names, since grammars differ in shape.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

_NONE: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class LanguageSpec:
    """One grammar's node types, by what the splitter and the symbol walker need of them."""

    name: str
    module: str  # the grammar's wheel
    grammar: str = "language"  # the wheel's function returning the grammar
    # node type -> definition kind, per role
    containers: Mapping[str, str] = field(default_factory=dict)
    functions: Mapping[str, str] = field(default_factory=dict)
    definitions: Mapping[str, str] = field(default_factory=dict)
    imports: frozenset[str] = _NONE
    calls: tuple[tuple[str, str], ...] = ()  # call type -> its callee field ("": first child)
    wrappers: frozenset[str] = _NONE
    comments: frozenset[str] = _NONE
    attributes: frozenset[str] = _NONE
    types: frozenset[str] = _NONE
    declarators: frozenset[str] = _NONE
    bodies: frozenset[str] = _NONE  # body node types where there is no `body` field
    receivers: Mapping[str, str] = field(default_factory=dict)  # call type -> receiver field
    transparent: frozenset[str] = _NONE  # wrappers laid out as their children (#ifdef)
    bodied: frozenset[str] = _NONE  # definitions only with a body (`struct s {...}`)
    fixed_names: Mapping[str, str] = field(default_factory=dict)  # nameless ones (`init`)
    identifiers: frozenset[str] = frozenset({"identifier", "type_identifier", "field_identifier"})

    def load(self) -> Any:
        """The grammar, from its wheel (raises whatever a broken wheel raises)."""
        return getattr(importlib.import_module(self.module), self.grammar)()

    def kind(self, node_type: str, default: str) -> str:
        """The definition kind a node type makes; `default` for types without a row."""
        for role in (self.containers, self.functions, self.definitions):
            if node_type in role:
                return role[node_type]
        return default


def _kinds(table: str) -> dict[str, str]:
    """`"node_type:kind ..."` as a mapping: one role's rows of a grammar, read as a line."""
    return {node: kind for node, _, kind in (row.partition(":") for row in table.split())}


def _js_spec(
    name: str,
    grammar: str,
    *,
    containers: Mapping[str, str],
    functions: Mapping[str, str] | None = None,
    definitions: Mapping[str, str] | None = None,
    types: frozenset[str] = _NONE,
) -> LanguageSpec:
    """JavaScript and its TypeScript dialects share statements, calls and imports."""
    return LanguageSpec(
        name,
        "tree_sitter_javascript" if name == "javascript" else "tree_sitter_typescript",
        grammar,
        containers=containers,
        functions={
            "function_declaration": "function",
            "generator_function_declaration": "function",
            "method_definition": "method",
            **(functions or {}),
        },
        definitions=definitions or {},
        imports=frozenset({"import_statement"}),
        calls=(("call_expression", "function"), ("new_expression", "constructor")),
        wrappers=frozenset({"export_statement"}),
        comments=frozenset({"comment"}),
        types=types,
        declarators=frozenset({"lexical_declaration", "variable_declaration"}),
    )


# C preprocessor conditionals hold whole definitions (header guards): lay out what is inside.
_PREPROC_BRANCHES = frozenset({"preproc_ifdef", "preproc_if", "preproc_else", "preproc_elif"})
_COMMENT = frozenset({"comment"})
_LINE_BLOCK_COMMENTS = frozenset({"line_comment", "block_comment"})
_TYPE_IDENTIFIER = frozenset({"type_identifier"})
_CALL = (("call_expression", "function"),)
_IMPORT_DECLARATION = frozenset({"import_declaration"})

_TYPESCRIPT = _js_spec(
    "typescript",
    "language_typescript",
    containers=_kinds(
        "class_declaration:class abstract_class_declaration:class interface_declaration:interface "
        "internal_module:namespace module:namespace"
    ),
    functions=_kinds("function_signature:function abstract_method_signature:function"),
    definitions=_kinds("type_alias_declaration:type enum_declaration:enum"),
    types=_TYPE_IDENTIFIER,
)

SPECS: dict[str, LanguageSpec] = {
    "python": LanguageSpec(
        "python",
        "tree_sitter_python",
        containers=_kinds("class_definition:class"),
        functions=_kinds("function_definition:function"),
        imports=frozenset({"import_statement", "import_from_statement", "future_import_statement"}),
        calls=(("call", "function"),),
        wrappers=frozenset({"decorated_definition"}),
        comments=_COMMENT,
    ),
    "javascript": _js_spec(
        "javascript", "language", containers=_kinds("class_declaration:class class:container")
    ),
    "typescript": _TYPESCRIPT,
    "tsx": replace(_TYPESCRIPT, name="tsx", grammar="language_tsx"),
    "rust": LanguageSpec(
        "rust",
        "tree_sitter_rust",
        containers=_kinds("impl_item:impl trait_item:trait mod_item:module"),
        functions=_kinds("function_item:function function_signature_item:function"),
        definitions=_kinds(
            "struct_item:struct enum_item:enum union_item:union type_item:type const_item:constant "
            "static_item:constant macro_definition:macro"
        ),
        imports=frozenset({"use_declaration", "extern_crate_declaration"}),
        calls=(("call_expression", "function"), ("macro_invocation", "macro")),
        comments=_LINE_BLOCK_COMMENTS,
        attributes=frozenset({"attribute_item"}),
        types=_TYPE_IDENTIFIER,
    ),
    "go": LanguageSpec(
        "go",
        "tree_sitter_go",
        functions=_kinds("function_declaration:function method_declaration:method"),
        definitions=_kinds(
            "type_declaration:type const_declaration:constant var_declaration:variable"
        ),
        imports=_IMPORT_DECLARATION,
        calls=_CALL,
        comments=_COMMENT,
        types=_TYPE_IDENTIFIER,
    ),
    "java": LanguageSpec(
        "java",
        "tree_sitter_java",
        containers=_kinds(
            "class_declaration:class interface_declaration:interface enum_declaration:enum "
            "record_declaration:record annotation_type_declaration:annotation"
        ),
        functions=_kinds(
            "method_declaration:method constructor_declaration:constructor "
            "compact_constructor_declaration:function"
        ),
        imports=_IMPORT_DECLARATION,
        calls=(("method_invocation", "name"), ("object_creation_expression", "type")),
        comments=_LINE_BLOCK_COMMENTS,
        types=_TYPE_IDENTIFIER,
    ),
    "solidity": LanguageSpec(
        "solidity",
        "tree_sitter_solidity",
        containers=_kinds(
            "contract_declaration:contract interface_declaration:interface "
            "library_declaration:library"
        ),
        functions=_kinds(
            "function_definition:function modifier_definition:modifier "
            "constructor_definition:constructor fallback_receive_definition:function"
        ),
        definitions=_kinds(
            "struct_declaration:struct enum_declaration:enum event_definition:event "
            "error_declaration:error user_defined_type_definition:definition"
        ),
        imports=frozenset({"import_directive"}),
        calls=_CALL,
        comments=_COMMENT,
        types=frozenset({"user_defined_type"}),
    ),
    "c": LanguageSpec(
        "c",
        "tree_sitter_c",
        functions=_kinds("function_definition:function"),
        definitions=_kinds(
            "struct_specifier:struct union_specifier:union enum_specifier:enum "
            "type_definition:type preproc_function_def:macro"
        ),
        imports=frozenset({"preproc_include"}),
        calls=_CALL,
        comments=_COMMENT,
        types=_TYPE_IDENTIFIER,
        transparent=_PREPROC_BRANCHES,
        bodied=frozenset({"struct_specifier", "union_specifier", "enum_specifier"}),
    ),
    "cpp": LanguageSpec(
        "cpp",
        "tree_sitter_cpp",
        containers=_kinds(
            "class_specifier:class struct_specifier:struct union_specifier:union "
            "namespace_definition:namespace"
        ),
        functions=_kinds("function_definition:function"),
        definitions=_kinds(
            "enum_specifier:enum type_definition:type alias_declaration:type "
            "preproc_function_def:macro"
        ),
        imports=frozenset({"preproc_include"}),
        calls=(("call_expression", "function"), ("new_expression", "type")),
        wrappers=frozenset({"template_declaration"}),
        comments=_COMMENT,
        attributes=frozenset({"attribute_declaration"}),
        types=_TYPE_IDENTIFIER,
        transparent=_PREPROC_BRANCHES | {"linkage_specification", "declaration_list"},
        bodied=frozenset(
            {"class_specifier", "struct_specifier", "union_specifier", "enum_specifier"}
        ),
    ),
    "csharp": LanguageSpec(
        "csharp",
        "tree_sitter_c_sharp",
        containers=_kinds(
            "class_declaration:class interface_declaration:interface struct_declaration:struct "
            "record_declaration:record namespace_declaration:namespace"
        ),
        functions=_kinds(
            "method_declaration:method constructor_declaration:constructor "
            "destructor_declaration:destructor operator_declaration:operator "
            "local_function_statement:function"
        ),
        definitions=_kinds(
            "enum_declaration:enum delegate_declaration:delegate "
            "file_scoped_namespace_declaration:namespace"
        ),
        imports=frozenset({"using_directive"}),
        calls=(("invocation_expression", "function"), ("object_creation_expression", "type")),
        comments=_COMMENT,
        attributes=frozenset({"attribute_list"}),
    ),
    "kotlin": LanguageSpec(
        "kotlin",
        "tree_sitter_kotlin",
        containers=_kinds(
            "class_declaration:class object_declaration:object companion_object:object"
        ),
        functions=_kinds("function_declaration:function secondary_constructor:constructor"),
        definitions=_kinds("type_alias:type"),
        imports=frozenset({"import"}),
        calls=(("call_expression", ""),),
        comments=_LINE_BLOCK_COMMENTS,
        bodies=frozenset({"class_body", "enum_class_body", "function_body"}),
        fixed_names={"secondary_constructor": "constructor", "companion_object": "Companion"},
    ),
    "swift": LanguageSpec(
        "swift",
        "tree_sitter_swift",
        containers=_kinds("class_declaration:class protocol_declaration:protocol"),
        functions=_kinds(
            "function_declaration:function protocol_function_declaration:function "
            "init_declaration:constructor deinit_declaration:destructor"
        ),
        definitions=_kinds("typealias_declaration:type"),
        imports=_IMPORT_DECLARATION,
        calls=(("call_expression", ""),),
        comments=frozenset({"comment", "multiline_comment"}),
        types=_TYPE_IDENTIFIER,
        fixed_names={"init_declaration": "init", "deinit_declaration": "deinit"},
        identifiers=frozenset({"simple_identifier", "type_identifier"}),
    ),
    "scala": LanguageSpec(
        "scala",
        "tree_sitter_scala",
        containers=_kinds(
            "class_definition:class object_definition:object trait_definition:trait "
            "enum_definition:enum"
        ),
        functions=_kinds("function_definition:function function_declaration:function"),
        definitions=_kinds("type_definition:type"),
        imports=_IMPORT_DECLARATION,
        calls=(("call_expression", "function"), ("instance_expression", "")),
        comments=frozenset({"comment", "block_comment"}),
        types=_TYPE_IDENTIFIER,
    ),
    "php": LanguageSpec(
        "php",
        "tree_sitter_php",
        "language_php",
        containers=_kinds(
            "class_declaration:class interface_declaration:interface trait_declaration:trait "
            "enum_declaration:enum"
        ),
        functions=_kinds("function_definition:function method_declaration:method"),
        definitions=_kinds("namespace_definition:namespace"),
        imports=frozenset({"namespace_use_declaration"}),
        calls=(
            ("function_call_expression", "function"),
            ("member_call_expression", "name"),
            ("nullsafe_member_call_expression", "name"),
            ("scoped_call_expression", "name"),
            ("object_creation_expression", ""),
        ),
        receivers={
            "member_call_expression": "object",
            "nullsafe_member_call_expression": "object",
            "scoped_call_expression": "scope",
        },
        comments=_COMMENT,
        attributes=frozenset({"attribute_list"}),
        types=frozenset({"named_type"}),
        identifiers=frozenset({"name"}),
    ),
}
ALIASES = {
    "py": "python",
    "js": "javascript",
    "jsx": "javascript",
    "ts": "typescript",
    "rs": "rust",
    "golang": "go",
    "sol": "solidity",
    "node": "javascript",
    "h": "c",
    "c++": "cpp",
    "cc": "cpp",
    "cxx": "cpp",
    "hpp": "cpp",
    "cs": "csharp",
    "c#": "csharp",
    "kt": "kotlin",
    "kts": "kotlin",
}

# Languages split by the brace scanner (C-like block syntax without a grammar here). A language
# of `SPECS` whose grammar fails to load falls back to it too.
BRACE_LANGUAGES = frozenset({"move"})


def normalize_language(language: str | None) -> str:
    lang = (language or "").strip().lower()
    return ALIASES.get(lang, lang)
