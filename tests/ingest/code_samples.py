"""Generated source files with known function spans, one generator per language; and the
check the code chunker's tests share (units tile the file exactly)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from rayweave.ingest.code import CodeUnit
from rayweave.models.tokens import WordPieceEstimate

COUNT = WordPieceEstimate().count_tokens


@dataclass(frozen=True)
class Generated:
    code: str
    functions: dict[str, tuple[int, int]]  # name -> (start, end) of the definition itself
    docs: dict[str, str]  # name -> docstring text


def _doc(name: str) -> str:
    return f"Compute the {name} value from both inputs"


# Per language: file head, (doc comment, signature, statement, return, close), file tail, indent.
_TEMPLATES: dict[str, dict[str, str]] = {
    "python": {
        "head": '"""Generated module."""\nimport os\nfrom pkg.helpers import helper\n\n',
        "doc": "",
        "sig": 'def {name}(a, b):\n    """{doc}."""\n',
        "stmt": "    x{j} = helper(a, b + {j})\n",
        "ret": "    return a\n",
        "close": "",
        "tail": "",
    },
    "javascript": {
        "head": 'import { helper } from "./helpers.js";\n\n',
        "doc": "/** {doc}. */\n",
        "sig": "function {name}(a, b) {{\n",
        "stmt": "  const x{j} = helper(a, b + {j});\n",
        "ret": "  return a;\n",
        "close": "}\n",
        "tail": "",
    },
    "typescript": {
        "head": 'import { helper } from "./helpers";\n\n',
        "doc": "/** {doc}. */\n",
        "sig": "export function {name}(a: number, b: number): number {{\n",
        "stmt": "  const x{j}: number = helper(a, b + {j});\n",
        "ret": "  return a;\n",
        "close": "}\n",
        "tail": "",
    },
    "tsx": {
        "head": 'import { helper } from "./helpers";\n\n',
        "doc": "/** {doc}. */\n",
        "sig": "export function {name}(a: number, b: number): number {{\n",
        "stmt": "  const x{j} = helper(a, b + {j});\n",
        "ret": "  return a;\n",
        "close": "}\n",
        "tail": "",
    },
    "rust": {
        "head": "use crate::helpers::helper;\n\n",
        "doc": "/// {doc}.\n",
        "sig": "pub fn {name}(a: i64, b: i64) -> i64 {{\n",
        "stmt": "    let x{j} = helper(a, b + {j});\n",
        "ret": "    a\n",
        "close": "}\n",
        "tail": "",
    },
    "go": {
        "head": 'package gen\n\nimport "example.com/helpers"\n\n',
        "doc": "// {name} does this: {doc}.\n",
        "sig": "func {name}(a int, b int) int {{\n",
        "stmt": "\tx{j} := helpers.Helper(a, b+{j})\n\t_ = x{j}\n",
        "ret": "\treturn a\n",
        "close": "}\n",
        "tail": "",
    },
    "java": {
        "head": "package gen;\n\nimport com.example.Helpers;\n\npublic class Gen {\n",
        "doc": "    /** {doc}. */\n",
        "sig": "    public int {name}(int a, int b) {{\n",
        "stmt": "        int x{j} = Helpers.helper(a, b + {j});\n",
        "ret": "        return a;\n",
        "close": "    }\n",
        "tail": "}\n",
    },
    "solidity": {
        "head": 'pragma solidity ^0.8.0;\nimport "./Helpers.sol";\n\ncontract Gen {\n',
        "doc": "    /// @notice {doc}.\n",
        "sig": "    function {name}(uint256 a, uint256 b) public pure returns (uint256) {{\n",
        "stmt": "        uint256 x{j} = helper(a, b + {j});\n",
        "ret": "        return a;\n",
        "close": "    }\n",
        "tail": "}\n",
    },
    "move": {
        "head": "module 0x1::gen {\n    use std::vector;\n\n",
        "doc": "    /// {doc}.\n",
        "sig": "    public fun {name}(a: u64, b: u64): u64 {{\n",
        "stmt": "        let x{j} = helper(a, b + {j});\n",
        "ret": "        a\n",
        "close": "    }\n",
        "tail": "}\n",
    },
    "c": {
        "head": '#include <stdio.h>\n#include "helpers.h"\n\n',
        "doc": "/* {doc}. */\n",
        "sig": "int {name}(int a, int b) {{\n",
        "stmt": "    int x{j} = helper(a, b + {j});\n",
        "ret": "    return a;\n",
        "close": "}\n",
        "tail": "",
    },
    "cpp": {
        "head": '#include "helpers.hpp"\n\nnamespace gen {\n\n',
        "doc": "/// {doc}.\n",
        "sig": "int {name}(int a, int b) {{\n",
        "stmt": "    auto x{j} = helpers::helper(a, b + {j});\n",
        "ret": "    return a;\n",
        "close": "}\n",
        "tail": "}  // namespace gen\n",
    },
    "csharp": {
        "head": "using Helpers;\n\nnamespace Gen\n{\n    public static class Ops\n    {\n",
        "doc": "        /// <summary>{doc}.</summary>\n",
        "sig": "        public static int {name}(int a, int b)\n        {{\n",
        "stmt": "            int x{j} = Helper.Run(a, b + {j});\n",
        "ret": "            return a;\n",
        "close": "        }\n",
        "tail": "    }\n}\n",
    },
    "kotlin": {
        "head": "package gen\n\nimport com.example.helpers.helper\n\n",
        "doc": "/** {doc}. */\n",
        "sig": "fun {name}(a: Int, b: Int): Int {{\n",
        "stmt": "    val x{j} = helper(a, b + {j})\n",
        "ret": "    return a\n",
        "close": "}\n",
        "tail": "",
    },
    "swift": {
        "head": "import Helpers\n\n",
        "doc": "/// {doc}.\n",
        "sig": "func {name}(a: Int, b: Int) -> Int {{\n",
        "stmt": "    let x{j} = helper(a, b + {j})\n",
        "ret": "    return a\n",
        "close": "}\n",
        "tail": "",
    },
    "scala": {
        "head": "package gen\n\nimport helpers.Helper\n\nobject Gen {\n",
        "doc": "  /** {doc}. */\n",
        "sig": "  def {name}(a: Int, b: Int): Int = {{\n",
        "stmt": "    val x{j} = Helper.run(a, b + {j})\n",
        "ret": "    a\n",
        "close": "  }\n",
        "tail": "}\n",
    },
    "php": {
        "head": "<?php\n\nnamespace Gen;\n\nuse Helpers\\Helper;\n\n",
        "doc": "/** {doc}. */\n",
        "sig": "function {name}(int $a, int $b): int\n{{\n",
        "stmt": "    $x{j} = Helper::run($a, $b + {j});\n",
        "ret": "    return $a;\n",
        "close": "}\n",
        "tail": "",
    },
}

LANGUAGES = tuple(_TEMPLATES)


def generate(language: str, sizes: Sequence[int]) -> Generated:
    """A file with one function per entry of `sizes` (its number of body statements)."""
    t = _TEMPLATES[language]
    parts = [t["head"]]
    pos = len(t["head"])
    functions: dict[str, tuple[int, int]] = {}
    docs: dict[str, str] = {}
    for i, k in enumerate(sizes):
        name = f"compute_{i}" if language in ("python", "rust", "move") else f"compute{i}"
        if language == "go":
            name = f"Compute{i}"
        doc = _doc(name)
        docs[name] = doc
        lead = t["doc"].format(name=name, doc=doc)
        body = t["sig"].format(name=name, doc=doc)
        body += "".join(t["stmt"].format(j=j) for j in range(k)) + t["ret"] + t["close"]
        parts.append(lead)
        pos += len(lead)
        start = pos + (len(body) - len(body.lstrip()))
        parts.append(body)
        pos += len(body)
        functions[name] = (start, pos - 1 if body.endswith("\n") else pos)
        parts.append("\n")
        pos += 1
    parts.append(t["tail"])
    return Generated("".join(parts), functions, docs)


def check_tiling(code: str, units: list[CodeUnit]) -> None:
    """Units are exact slices, in order, disjoint, covering every word character.

    (Bare braces closing a container that was split member by member belong to no unit.)
    """
    for u in units:
        assert u.text == code[u.start : u.end]
        assert u.text == u.text.strip()
    for a, b in itertools.pairwise(units):
        assert a.end <= b.start
    covered = "".join(u.text for u in units)
    assert re.sub(r"\W", "", covered) == re.sub(r"\W", "", code)
