"""Which kind of content a file or corpus record holds: extension first, then sniffing.

Extensions are trusted when they are specific (`.py`, `.md`); sniffing decides for text whose
name says nothing (BEIR records, `README`, `.txt` that is really Markdown) and checks that image
files really are images. Pure and cheap: regexes over the first few kilobytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath

from rayweave.cluster.types import ContentType

# Languages tree-sitter parses here (see `rayweave.ingest.code`), plus languages split by the
# brace/line fall-backs. Values are the language names chunks carry in `Chunk.language`.
CODE_EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".rs": "rust",
    ".go": "go",
    ".java": "java",
    ".move": "move",
    ".sol": "solidity",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".cs": "csharp",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".swift": "swift",
    ".scala": "scala",
    ".rb": "ruby",
    ".php": "php",
    ".sh": "shell",
    ".bash": "shell",
    ".sql": "sql",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
}

PROSE_EXTENSIONS: dict[str, ContentType] = {
    ".md": ContentType.MARKDOWN,
    ".markdown": ContentType.MARKDOWN,
    ".mdx": ContentType.MARKDOWN,
    ".rst": ContentType.RST,
    ".rest": ContentType.RST,
    ".html": ContentType.HTML,
    ".htm": ContentType.HTML,
    ".xhtml": ContentType.HTML,
    ".txt": ContentType.TEXT,
    ".text": ContentType.TEXT,
    ".ipynb": ContentType.NOTEBOOK,
}

IMAGE_EXTENSIONS: dict[str, str] = {".png": "png", ".jpg": "jpeg", ".jpeg": "jpeg"}

# Extension-less files that are documentation by convention.
_KNOWN_NAMES = {"readme", "changelog", "changes", "license", "contributing", "authors", "notice"}

_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_JPEG_MAGIC = b"\xff\xd8\xff"

_SNIFF_CHARS = 4096
_PY_LINE = re.compile(
    r"^(?:\s*(?:async\s+def|def|class)\s+\w+\s*[(:]|\s*(?:from\s+[\w.]+\s+import|import\s+[\w.]+)|\s*@\w+)",
    re.MULTILINE,
)
_JS_LINE = re.compile(
    r"^\s*(?:(?:export\s+)?(?:async\s+)?function\s+\w+\s*\(|(?:const|let|var)\s+\w+\s*=|import\s+.+\s+from\s+['\"])",
    re.MULTILINE,
)
_MD_SIGNAL = re.compile(r"^(?:#{1,6}\s+\S|```|\s*[-*]\s+\S.*\]\(|.*\]\([^)\s]+\))", re.MULTILINE)
_RST_UNDERLINE = re.compile(r"^(\S[^\n]*)\n([=\-~^\"'`#*+:._])\2{2,}\s*$", re.MULTILINE)
_RST_DIRECTIVE = re.compile(r"^\.\. [\w-]+::", re.MULTILINE)
_HTML_SIGNAL = re.compile(
    r"<(?:!doctype\s+html|html|head|body|div|p|h[1-6]|table|ul)\b", re.IGNORECASE
)


@dataclass(frozen=True, slots=True)
class Detected:
    """A detected content type; `language` is set for code (and `png`/`jpeg` for images)."""

    content_type: ContentType
    language: str | None = None


def from_extension(path: str | PurePath) -> Detected | None:
    """The content type a file name promises, or None when the name says nothing we ingest."""
    p = PurePath(path)
    suffix = p.suffix.lower()
    if suffix in PROSE_EXTENSIONS:
        return Detected(PROSE_EXTENSIONS[suffix])
    if suffix in CODE_EXTENSIONS:
        return Detected(ContentType.CODE, CODE_EXTENSIONS[suffix])
    if suffix in IMAGE_EXTENSIONS:
        return Detected(ContentType.IMAGE, IMAGE_EXTENSIONS[suffix])
    if not suffix and p.name.lower() in _KNOWN_NAMES:
        return Detected(ContentType.TEXT)
    return None


def image_format(head: bytes) -> str | None:
    """`png` or `jpeg` from the magic bytes, else None."""
    if head.startswith(_PNG_MAGIC):
        return "png"
    if head.startswith(_JPEG_MAGIC):
        return "jpeg"
    return None


def sniff_text(text: str) -> Detected:
    """Guess the content type of text that comes without a trustworthy name.

    Code wins when most of the first lines look like definitions or imports (the CoSQA corpus is
    bare Python functions with empty titles); then HTML, notebooks, RST and Markdown by their
    markers; plain text otherwise.
    """
    head = text[:_SNIFF_CHARS]
    stripped = head.lstrip()
    if not stripped:
        return Detected(ContentType.TEXT)
    if (
        stripped.startswith("{")
        and ('"cells"' in head or '"worksheets"' in head)  # v4, v3
        and '"nbformat"' in text
    ):
        return Detected(ContentType.NOTEBOOK)
    first = stripped.split("\n", 1)[0]
    if _PY_LINE.match(first) and (
        ":" in first or "(" in first or first.startswith(("import", "from", "@"))
    ):
        return Detected(ContentType.CODE, "python")
    if _JS_LINE.match(first):
        return Detected(ContentType.CODE, "javascript")
    if stripped[:1] == "<" and _HTML_SIGNAL.search(head):
        return Detected(ContentType.HTML)
    if _RST_DIRECTIVE.search(head) or (_RST_UNDERLINE.search(head) and not _MD_SIGNAL.search(head)):
        return Detected(ContentType.RST)
    if len(_MD_SIGNAL.findall(head)) >= 1:
        return Detected(ContentType.MARKDOWN)
    return Detected(ContentType.TEXT)
