"""Symbols of code without a parser: definitions, imports and calls found by regular expressions.

Used for languages without a grammar here and for slices of a function cut between lines,
which no longer parse on their own.
"""

from __future__ import annotations

import re

from rayweave.ingest.code.identifiers import SELF, word_set
from rayweave.ingest.code.units import CodeDefinition, CodeSymbols, dedupe

_RX_IMPORT = re.compile(
    r"^\s*(?:use\s+([\w:]+(?:::\{[^}]*\})?)|import\s+(?:static\s+)?([\w.]+)"
    r"|#include\s*[<\"]([^>\"]+)[>\"]"
    r"|from\s+([\w.]+)\s+import|require(?:_once)?\s*\(?\s*['\"]([^'\"]+)['\"])",
    re.MULTILINE,
)
_RX_DEF = re.compile(
    r"^[ \t]*(?:(?:public(?:\([\w:]+\))?|private|protected|internal|external|entry|native|inline"
    r"|static|pub(?:\([\w:]+\))?|export|async|abstract|final|override|open|virtual|extern|const"
    r"|unsafe|friend|data|sealed|suspend|fun\s+interface)\s+)*"
    r"(module|contract|interface|library|class|struct|enum|trait|impl|namespace|object|script|spec|"
    r"fun|fn|function|func|def|void|int|bool)\s+((?:0x[0-9A-Fa-f]+::)?[A-Za-z_][\w:]*)",
    re.MULTILINE,
)
_RX_CALL = re.compile(r"\b([A-Za-z_][\w]*(?:(?:\.|::)[A-Za-z_]\w*)*)\s*(?:<[^<>()]*>)?\s*\(")
_RX_DEFINED_BEFORE = re.compile(r"\b(?:fun|fn|function|func|def)\s*$")
# The definition kind a declaring keyword makes (the brace scanner's keywords too).
DEF_KINDS = {
    **{w: w for w in word_set("module contract interface library class struct enum trait impl")},
    "namespace": "namespace",
    "object": "class",
    "script": "module",
    "spec": "spec",
    **dict.fromkeys(word_set("fun fn function func def void int bool"), "function"),
}
_RX_NOT_CALLS = word_set(
    "if for while switch return catch sizeof typeof assert fun fn function func def module "
    "struct spec move_to borrow_global borrow_global_mut exists"
)


def regex_symbols(code: str, lang: str, prefix: tuple[str, ...] = ()) -> CodeSymbols:
    defs = []
    for m in _RX_DEF.finditer(code):
        name = m.group(2)
        line = code.count("\n", 0, m.start()) + 1
        defs.append(
            CodeDefinition(
                name=name.split("::")[-1],
                qualified_name=".".join((*prefix, name)),
                kind=DEF_KINDS[m.group(1)],
                start_line=line,
                end_line=line,
            )
        )
    imports = [next(g for g in m.groups() if g) for m in _RX_IMPORT.finditer(code)]
    def_names = {d.name for d in defs}
    calls = []
    for m in _RX_CALL.finditer(code):
        callee = m.group(1)
        if callee.split(".")[-1].split("::")[-1].lower() in _RX_NOT_CALLS:
            continue
        head = code[max(0, m.start() - 12) : m.start()]
        if _RX_DEFINED_BEFORE.search(head):
            continue  # a definition, not a call
        calls.append(SELF.sub("", callee))
    refs = [re.split(r"[.:]+", c)[-1] for c in calls]
    refs = [r for r in refs if r not in def_names]
    return CodeSymbols(
        language=lang,
        definitions=tuple(defs),
        imports=dedupe(imports),
        calls=dedupe(calls),
        references=dedupe(refs),
    )
