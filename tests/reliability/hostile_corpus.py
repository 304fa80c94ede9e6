"""A generated corpus of hostile files, plus a few good ones with unique facts to search for."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

INJECTIONS = (
    "'}) DETACH DELETE n //",
    "MATCH (n) DETACH DELETE n",
    '{"$where": "1 == 1", "__proto__": {"admin": true}}',
    "Robert'); DROP TABLE documents;--",
)
GOOD_FACTS = {
    "good-zorblax.md": (
        "zorblax coefficient",
        "# Zorblax\n\nThe zorblax coefficient of Ferry is 7131.\n",
    ),
    "good-quenton.md": (
        "quenton valve",
        "# Quenton valve\n\nThe quenton valve opens at 42 kilopascals.\n",
    ),
    "good-mirth.rst": (
        "mirthline protocol",
        "Mirthline\n=========\n\nThe mirthline protocol retries nine times.\n",
    ),
    "good-vesper.txt": ("vesper lantern", "The vesper lantern burns blue oil in the west tower.\n"),
    "good-code.py": (
        "frobnicate the widgets",
        'def frobnicate(widgets):\n    """Frobnicate the widgets in reverse order."""\n'
        "    return widgets[::-1]\n",
    ),
}


@dataclass
class HostileCorpus:
    root: Path
    hostile: list[Path] = field(default_factory=list)
    good: dict[Path, str] = field(default_factory=dict)  # path -> distinctive query

    @property
    def files_tried(self) -> int:
        return len(self.hostile) + len(self.good)


def write_hostile_corpus(root: Path) -> HostileCorpus:
    corpus = HostileCorpus(root=root)
    root.mkdir(parents=True, exist_ok=True)

    def put(name: str, data: bytes | str) -> Path:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        corpus.hostile.append(path)
        return path

    put("empty.md", b"")
    put("whitespace.md", " \n\t\n" * 100)
    put("binary.md", bytes(range(256)) * 64)
    put("binary.py", b"\x7fELF\x02\x01\x01\x00" + os.urandom(4096))
    put("invalid-utf8.md", b"# Title\n\nvalid then \xff\xfe\xfa invalid \xc3\x28 bytes\n")
    put("utf16.txt", "Hello in UTF-16 with a BOM".encode("utf-16"))
    put("one-line-50mb.txt", b"a" * (50 * 1024 * 1024))
    put("hashes.md", b"#" * (64 * 1024))  # one 64 KB token run
    put(
        "ten-thousand-headings.md", "".join(f"# Heading {i}\n\ntext {i}\n\n" for i in range(10_000))
    )
    put("nested-lists.md", "".join("  " * i + f"- level {i}\n" for i in range(500)))
    put("broken.ipynb", '{"cells": [{"cell_type": "markdown", "source": ["# half')
    put("wrong-schema.ipynb", json.dumps({"cells": "not a list", "nbformat": 4}))
    put("huge.py", "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(20_000)))
    put("syntax-error.py", "def broken(:\n    return ???\n" * 50)
    put("deep.json.md", "[" * 5000 + "]" * 5000)
    put("zero-width.md", "# Z\u200bero\u200d width \u202eRTL\u202c text\n\nbody \ufeff here\n")
    put("control-chars.md", "# Bell\x07 and NUL\x00 inside\n\ntext\x1b[31m red\n")
    put(
        "html-script.html",
        "<html><script>alert(1)</script><h1>x</h1><p>" + "<div>" * 3000 + "</p></html>",
    )
    put("unclosed-fence.md", "# Code\n\n```python\nprint('never closed')\n" * 200)
    put("long-heading.md", "# " + "very long heading " * 5000 + "\n\nbody\n")
    put("only-frontmatter.md", "---\ntitle: [unclosed\n---\n")
    put("tabs.rst", "Title\n=====\n\n\t\t\t" * 500)
    put("name with\nnewline.md", "# Newline name\n\nA file whose name has a newline.\n")
    put("ünïcödé-名前-🚀.md", "# Unicode name\n\nThe rocket file.\n")
    for i, text in enumerate(INJECTIONS):
        put(
            f"injection-{i}.md",
            f"# {text}\n\n## {text} Heading\n\nThe {text} entity calls `{text}`.\n\n"
            f"See [{text}]({text}) and {text}.\n",
        )
    # Not readable as regular files (we run as root, so permissions alone would not stop a read).
    fifo = root / "pipe.md"
    os.mkfifo(fifo)
    corpus.hostile.append(fifo)
    (root / "dir.md").mkdir()  # a folder with a file's name is walked like any folder
    put("dir.md/inner.md", b"\x00\x01binary inside a folder named like a file")
    loop_a, loop_b = root / "loop-a.md", root / "loop-b.md"
    loop_a.symlink_to(loop_b)
    loop_b.symlink_to(loop_a)
    corpus.hostile += [loop_a, loop_b]
    (root / "dangling.md").symlink_to(root / "does-not-exist.md")
    corpus.hostile.append(root / "dangling.md")

    for name, (query, text) in GOOD_FACTS.items():
        path = root / "good" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        corpus.good[path] = query
    return corpus
