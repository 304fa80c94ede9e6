"""`extract_symbols`: what a whole file defines, imports and calls, in every language."""

from __future__ import annotations

import pytest

from rayweave.ingest.code import extract_symbols


class TestSymbols:
    def test_python(self) -> None:
        code = (
            "import os\nfrom ferry.errors import LeaseExpired as LE\n\n"
            "class Worker(Base):\n    def run(self, task: Task) -> None:\n"
            "        self.broker.ack(task.id)\n        raise LE(os.getpid())\n\n"
            "def main():\n    Worker().run(None)\n"
        )
        sym = extract_symbols(code, "python")
        assert [(d.qualified_name, d.kind) for d in sym.definitions] == [
            ("Worker", "class"),
            ("Worker.run", "method"),
            ("main", "function"),
        ]
        assert sym.imports == ("os", "ferry.errors")
        assert "broker.ack" in sym.calls
        assert "LE" in sym.calls
        assert "os.getpid" in sym.calls
        assert {"ack", "LE", "getpid", "os"} <= set(sym.references)

    @pytest.mark.parametrize(
        ("language", "code", "defs", "imports", "call"),
        [
            (
                "javascript",
                'import x from "lib";\nclass A { m() { x.go(); } }\nconst f = () => 1;\n',
                ["A", "A.m", "f"],
                ["lib"],
                "x.go",
            ),
            (
                "typescript",
                'import { Y } from "./y";\ninterface I { n(): void }\n'
                "function g(a: Y): number { return h(a); }\n",
                ["I", "g"],
                ["./y"],
                "h",
            ),
            (
                "rust",
                "use std::io::Read;\nstruct S;\nimpl S { fn new() -> S { make() } }\n",
                ["S", "S", "S.new"],
                ["std::io::Read"],
                "make",
            ),
            (
                "go",
                'package p\nimport "fmt"\ntype T struct{}\nfunc (t *T) Run() { fmt.Println(1) }\n',
                ["T", "T.Run"],
                ["fmt"],
                "fmt.Println",
            ),
            (
                "java",
                "import java.util.List;\nclass C { void m() { helper(); } }\n",
                ["C", "C.m"],
                ["java.util.List"],
                "helper",
            ),
            (
                "solidity",
                'import "./A.sol";\ncontract K { function f() public { g(); } }\n',
                ["K", "K.f"],
                ["./A.sol"],
                "g",
            ),
            (
                "c",
                "#include <stdio.h>\nstruct pt { int x; };\n"
                'int main(void) { return puts("hi"); }\n',
                ["pt", "main"],
                ["stdio.h"],
                "puts",
            ),
            (
                "cpp",
                "#include <vector>\nnamespace n { class A { void m() { go(); } }; }\n",
                ["n", "n.A", "n.A.m"],
                ["vector"],
                "go",
            ),
            (
                "csharp",
                'using System.IO;\nnamespace N { class C { void M() { File.Copy("x"); } } }\n',
                ["N", "N.C", "N.C.M"],
                ["System.IO"],
                "File.Copy",
            ),
            (
                "kotlin",
                "import a.b.C\nclass K {\n    fun m() = C.make()\n}\n",
                ["K", "K.m"],
                ["a.b.C"],
                "C.make",
            ),
            (
                "swift",
                "import Foundation\nstruct S {\n    func m() { run() }\n}\n",
                ["S", "S.m"],
                ["Foundation"],
                "run",
            ),
            (
                "scala",
                "import a.b.C\nobject O {\n  def m(): Unit = C.make()\n}\n",
                ["O", "O.m"],
                ["a.b.C"],
                "C.make",
            ),
            (
                "php",
                "<?php\nuse A\\B;\nclass P { function m() { B::make(); } }\n",
                ["P", "P.m"],
                ["A\\B"],
                "B.make",
            ),
            (
                "move",
                "module 0x1::coin {\n    use std::signer;\n"
                "    public fun mint(s: &signer) { transfer(s); }\n}\n",
                ["0x1::coin", "0x1::coin.mint"],
                ["std::signer"],
                "transfer",
            ),
        ],
    )
    def test_languages(
        self, language: str, code: str, defs: list[str], imports: list[str], call: str
    ) -> None:
        sym = extract_symbols(code, language)
        assert [d.qualified_name for d in sym.definitions] == defs
        assert list(sym.imports) == imports
        assert call in sym.calls
