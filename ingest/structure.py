"""Document text -> canonical text plus typed blocks (headings, paragraphs, code, tables).

Markdown is parsed with markdown-it-py (its source line maps give exact offsets); RST and plain
text with a line scanner (underlined headings, `::` and `.. code-block::` literal blocks, grid
and simple tables, list items); HTML and notebooks are first rendered to Markdown (headings,
fenced `pre`/code cells, `[text](href)` links kept for reference extraction, scripts, styles and
navigation dropped) and then parsed as Markdown. Block offsets index `Structured.text`, which
every chunk's `start_char`/`end_char` refer to.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from rayweave.cluster.errors import SourceError
from rayweave.ingest.notebooks import load_notebook
from rayweave.ingest.text_spans import trimmed
from rayweave.ingest.titles import split_front_matter

BlockKind = Literal["heading", "paragraph", "code", "table", "other"]


@dataclass(frozen=True, slots=True)
class Block:
    kind: BlockKind
    start: int
    end: int
    level: int = 0
    """Heading level (1 = top) for headings."""
    lang: str | None = None
    """Language of a code block (fence info, notebook kernel), when known."""
    heading: str = ""
    """The heading's text without markup, for headings."""


@dataclass(frozen=True, slots=True)
class Structured:
    text: str
    blocks: list[Block] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)


# -- shared helpers ------------------------------------------------------------------------------


def _line_starts(text: str) -> list[int]:
    starts = [0]
    pos = text.find("\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = text.find("\n", pos + 1)
    return starts


def _fill_gaps(text: str, blocks: list[Block]) -> list[Block]:
    """Sort, drop overlaps and turn uncovered text with words into `other` blocks.

    Markup-only gaps (thematic breaks such as `---`) are no content and become no block.
    """
    out: list[Block] = []
    cursor = 0
    for b in sorted(blocks, key=lambda b: (b.start, -b.end)):
        if b.start < cursor:
            continue  # nested in a block we already have
        a, e = trimmed(text, cursor, b.start)
        if a < e and _WORDS.search(text, a, e):
            out.append(Block("other", a, e))
        out.append(b)
        cursor = b.end
    a, e = trimmed(text, cursor, len(text))
    if a < e and _WORDS.search(text, a, e):
        out.append(Block("other", a, e))
    return out


_WORDS = re.compile(r"\w")


_HEADING_MARKUP = re.compile(r"^\s*#{1,6}\s+|\s+#+\s*$|[*_`]+")
_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")


def heading_text(raw: str) -> str:
    first = raw.strip().split("\n", 1)[0]
    first = _MD_LINK.sub(r"\1", first)
    return " ".join(_HEADING_MARKUP.sub("", first).split())


# -- Markdown ------------------------------------------------------------------------------------

_md_parser: Any = None


def _markdown_it() -> Any:
    global _md_parser
    if _md_parser is None:
        from markdown_it import MarkdownIt

        _md_parser = MarkdownIt("commonmark").enable("table")
    return _md_parser


def parse_markdown(text: str) -> Structured:
    front, body = split_front_matter(text)
    metadata: dict[str, Any] = {"front_matter": front} if front else {}
    starts = _line_starts(body)
    n_lines = len(starts)

    def span(lines: list[int]) -> tuple[int, int]:
        a = starts[lines[0]]
        b = starts[lines[1]] if lines[1] < n_lines else len(body)
        return trimmed(body, a, b)

    blocks: list[Block] = []
    tokens = _markdown_it().parse(body)
    for i, tok in enumerate(tokens):
        if tok.map is None:
            continue
        kind: BlockKind
        if tok.type == "heading_open":
            a, b = span(tok.map)
            inline = tokens[i + 1].content if i + 1 < len(tokens) else body[a:b]
            blocks.append(
                Block("heading", a, b, level=int(tok.tag[1:]), heading=heading_text(inline))
            )
            continue
        if tok.type == "paragraph_open":
            kind = "paragraph"
        elif tok.type in ("fence", "code_block"):
            kind = "code"
        elif tok.type == "table_open":
            kind = "table"
        elif tok.type == "html_block":
            kind = "paragraph"
        else:
            continue
        a, b = span(tok.map)
        if a < b:
            lang = (tok.info.split() or [None])[0] if tok.type == "fence" else None
            blocks.append(Block(kind, a, b, lang=lang))
    return Structured(body, _fill_gaps(body, blocks), metadata)


# -- RST and plain text --------------------------------------------------------------------------

_ADORNMENT = re.compile(r"^([=\-~^\"'`#*+:._<>])\1{2,}[ \t]*$")
_BULLET = re.compile(r"^(\s*)(?:[-*+•]|\d{1,3}[.)]|#\.|\(?[a-zA-Z0-9]{1,3}\))\s+\S")
_DIRECTIVE = re.compile(r"^(\s*)\.\.\s+([\w:-]+)::\s*(.*)$")
_CODE_DIRECTIVES = {"code-block", "code", "sourcecode", "literalinclude", "highlight", "doctest"}
_GRID = re.compile(r"^\s*\+[-=+]+\+\s*$")
_SIMPLE_TABLE = re.compile(r"^\s*=+(?:\s+=+)+\s*$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


class _RstScanner:
    """One pass over the lines of an RST (or plain) text: each rule either claims the block that
    starts at a line and returns the line after it, or returns None and lets the next one try."""

    def __init__(self, text: str, *, plain: bool) -> None:
        self.text = text
        self.lines = text.split("\n")
        self.starts = _line_starts(text)
        self.n = len(self.lines)
        self.styles: dict[tuple[str, bool], int] = {}
        self.blocks: list[Block] = []
        markup = [] if plain else [self._directive, self._table]
        self.rules: list[Callable[[int], int | None]] = [
            self._overlined_heading,
            self._underlined_heading,
            *markup,
        ]
        self.plain = plain

    def scan(self) -> list[Block]:
        i = 0
        while i < self.n:
            if self._blank(i):
                i += 1
                continue
            i = self._claim(i)
        return self.blocks

    def _claim(self, i: int) -> int:
        """The line after the block starting at line i, which the first matching rule adds."""
        for rule in self.rules:
            nxt = rule(i)
            if nxt is not None:
                return nxt
        return self._paragraph(i)

    def _blank(self, i: int) -> bool:
        return not self.lines[i].strip()

    def _add(self, kind: BlockKind, i: int, j: int, **kw: Any) -> None:
        """A block over lines [i, j), trimmed; nothing when only whitespace."""
        a = self.starts[i]
        b = self.starts[j] if j < self.n else len(self.text)
        a, b = trimmed(self.text, a, b)
        if a < b:
            self.blocks.append(Block(kind, a, b, **kw))

    def _indented_end(self, i: int, base: int) -> int:
        """End of the block of lines indented deeper than `base` starting at i (blank lines ok)."""
        j = i
        last = i
        while j < self.n:
            if self._blank(j):
                j += 1
                continue
            if _indent(self.lines[j]) <= base:
                break
            j += 1
            last = j
        return last

    def _heading_level(self, adornment: str, overlined: bool) -> int:
        """RST levels follow the order in which adornment styles first appear."""
        return self.styles.setdefault((adornment[0], overlined), len(self.styles) + 1)

    def _overlined_heading(self, i: int) -> int | None:
        """===, title, ===."""
        lines, line = self.lines, self.lines[i]
        if (
            i + 2 < self.n
            and _ADORNMENT.match(line)
            and lines[i + 1].strip()
            and _ADORNMENT.match(lines[i + 2])
            and lines[i + 2].strip()[0] == line.strip()[0]
        ):
            level = self._heading_level(line.strip(), True)
            self._add("heading", i, i + 3, level=level, heading=" ".join(lines[i + 1].split()))
            return i + 3
        return None

    def _underlined_heading(self, i: int) -> int | None:
        """title, ---."""
        lines, line = self.lines, self.lines[i]
        if (
            i + 1 < self.n
            and _ADORNMENT.match(lines[i + 1])
            and not _ADORNMENT.match(line)
            and _indent(line) == 0
            and len(lines[i + 1].strip()) >= min(len(line.strip()), 3)
            and len(line.strip()) <= 120
        ):
            level = self._heading_level(lines[i + 1].strip(), False)
            self._add("heading", i, i + 2, level=level, heading=" ".join(line.split()))
            return i + 2
        return None

    def _directive(self, i: int) -> int | None:
        d = _DIRECTIVE.match(self.lines[i])
        if not d:
            return None
        end = max(self._indented_end(i + 1, len(d.group(1))), i + 1)
        if d.group(2).lower() in _CODE_DIRECTIVES:
            lang = d.group(3).strip().split()[0] if d.group(3).strip() else None
            self._add("code", i, end, lang=lang)
        else:
            self._add("paragraph" if end > i + 1 else "other", i, end)
        return end

    def _table(self, i: int) -> int | None:
        lines, n, line = self.lines, self.n, self.lines[i]
        if not (_GRID.match(line) or _SIMPLE_TABLE.match(line)):
            return None
        j = i + 1
        while j < n and lines[j].strip():
            j += 1
        if _SIMPLE_TABLE.match(line) and j + 1 < n and _SIMPLE_TABLE.match(lines[j - 1]) is None:
            # simple tables may contain blank lines before their closing rule
            k = j
            while k < n and not _SIMPLE_TABLE.match(lines[k]):
                k += 1
            if k < n and k - j < 50:
                j = k + 1
        self._add("table", i, j)
        return j

    def _paragraph(self, i: int) -> int:
        """Paragraph or list item: up to a blank line, a new list item, or a heading underline;
        a paragraph ending in `::` introduces the indented literal block after it."""
        lines, n = self.lines, self.n
        base = _indent(lines[i])
        j = i + 1
        while j < n and lines[j].strip():
            if _BULLET.match(lines[j]) and _indent(lines[j]) <= base + 2:
                break
            if j + 1 < n and _ADORNMENT.match(lines[j + 1]) and not _ADORNMENT.match(lines[j]):
                break
            j += 1
        is_literal_intro = not self.plain and lines[j - 1].rstrip().endswith("::")
        self._add("paragraph", i, j)
        if not is_literal_intro:
            return j
        k = j
        while k < n and self._blank(k):
            k += 1
        if k < n and _indent(lines[k]) > base:
            end = self._indented_end(k, base)
            self._add("code", k, end)
            return end
        return j


def parse_rst(text: str, *, plain: bool = False) -> Structured:
    """Line scanner for reStructuredText; `plain=True` keeps only headings, lists and paragraphs."""
    return Structured(text, _fill_gaps(text, _RstScanner(text, plain=plain).scan()))


def parse_plain(text: str) -> Structured:
    return parse_rst(text, plain=True)


# -- HTML ----------------------------------------------------------------------------------------

_DROP_TAGS = frozenset(
    {
        "script",
        "style",
        "noscript",
        "template",
        "svg",
        "nav",
        "footer",
        "aside",
        "form",
        "button",
        "iframe",
        "object",
        "canvas",
        "select",
        "head",
        "meta",
        "link",
    }
)
_BLOCK_TAGS = frozenset(
    {
        "p",
        "div",
        "section",
        "article",
        "main",
        "header",
        "blockquote",
        "dd",
        "dt",
        "figcaption",
        "figure",
        "details",
        "summary",
        "address",
        "body",
        "html",
        "dl",
        "center",
        "caption",
    }
)
_LANG_CLASS = re.compile(r"(?:language|lang|highlight)-([\w+#-]+)")
_MANY_NEWLINES = re.compile(r"\n{3,}")
_SPACES = re.compile(r"[ \t\r\f\v]+")


_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_BLOCK_CHILDREN = ("pre", "ul", "ol", "table", "p", *_HEADINGS)


def _fence_for(code: str) -> str:
    longest = max((len(m) for m in re.findall(r"`{3,}", code)), default=0)
    return "`" * max(3, longest + 1)


class _HtmlRenderer:
    def __init__(self) -> None:
        self.out: list[str] = []

    def block(self, text: str) -> None:
        text = text.strip()
        if text:
            self.out.append("\n\n" + text + "\n\n")

    def inline(self, node: Any) -> str:
        from bs4.element import NavigableString, Tag

        if isinstance(node, NavigableString):
            if type(node).__name__ in (
                "Comment",
                "Doctype",
                "Declaration",
                "ProcessingInstruction",
                "CData",
            ):
                return ""
            return _SPACES.sub(" ", str(node).replace("\n", " "))
        if not isinstance(node, Tag):
            return ""
        name = node.name
        if name in _DROP_TAGS:
            return ""
        if name == "br":
            return "\n"
        if name == "img":
            alt = node.get("alt") or ""
            src = node.get("src") or ""
            return f"![{alt}]({src})" if src else str(alt)
        inner = "".join(self.inline(c) for c in node.children)
        if name == "a" and node.get("href"):
            label = inner.strip() or str(node.get("href"))
            return f"[{label}]({node.get('href')})"
        if name in ("code", "kbd", "samp", "tt"):
            code = inner.strip()
            return f"`{code}`" if code and "`" not in code else code
        return inner

    def render(self, node: Any, list_kind: str | None = None) -> None:
        from bs4.element import NavigableString, Tag

        if isinstance(node, NavigableString):
            text = self.inline(node)
            if text.strip():
                self.out.append(text)
            return
        if not isinstance(node, Tag) or node.name in _DROP_TAGS:
            return
        name = node.name
        if name in _HEADINGS:
            self.block("#" * int(name[1]) + " " + " ".join(self.inline(node).split()))
        elif name == "pre":
            self._pre(node)
        elif name in ("ul", "ol"):
            self._children(node, list_kind=name)
        elif name == "li":
            marker = "1." if list_kind == "ol" else "-"
            text = " ".join(self.inline(node).split())
            if text:
                self.out.append(f"\n{marker} {text}\n")
        elif name == "table":
            self._table(node)
        elif name == "hr":
            self.out.append("\n\n")
        elif name in _BLOCK_TAGS or name == "p":
            self._container(node)
        else:
            self.out.append(self.inline(node))

    def _children(self, node: Any, list_kind: str | None = None) -> None:
        """The children of `node` as blocks of their own."""
        self.out.append("\n\n")
        for child in node.children:
            self.render(child, list_kind=list_kind)
        self.out.append("\n\n")

    def _pre(self, node: Any) -> None:
        """A fenced code block, its language from a `language-*` style class."""
        code_tag = node.find("code")
        classes = (
            " ".join((code_tag.get("class") or []) if code_tag else [])
            + " "
            + " ".join(node.get("class") or [])
        )
        m = _LANG_CLASS.search(classes)
        code = node.get_text().strip("\n")
        fence = _fence_for(code)
        self.out.append(f"\n\n{fence}{m.group(1) if m else ''}\n{code}\n{fence}\n\n")

    def _table(self, node: Any) -> None:
        """A pipe table; the first row is taken as the header."""
        rows = []
        for tr in node.find_all("tr"):
            cells = [
                " ".join(self.inline(c).split()).replace("|", "\\|")
                for c in tr.find_all(["th", "td"])
            ]
            if cells:
                rows.append("| " + " | ".join(cells) + " |")
        if rows:
            width = rows[0].count(" | ") + 1
            rows.insert(1, "|" + "---|" * width)
            self.block("\n".join(rows))

    def _container(self, node: Any) -> None:
        """A div-like tag: its block children apart, or its text as one paragraph."""
        from bs4.element import Tag

        has_block_child = any(
            isinstance(c, Tag) and (c.name in _BLOCK_TAGS or c.name in _BLOCK_CHILDREN)
            for c in node.children
        )
        if has_block_child:
            self._children(node)
        else:
            self.block(" ".join(self.inline(node).split()))


def html_to_markdown(html_text: str) -> str:
    """Render HTML as Markdown: the text a reader sees, in reading order, with its structure."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html_text, "html.parser")
    renderer = _HtmlRenderer()
    root = soup.body or soup
    try:
        renderer.render(root)
    except RecursionError as exc:
        raise SourceError("HTML is nested too deeply to render") from exc
    text = "".join(renderer.out)
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    return _MANY_NEWLINES.sub("\n\n", text).strip() + "\n"


def parse_html(html_text: str) -> Structured:
    return parse_markdown(html_to_markdown(html_text))


# -- notebooks -----------------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_MAX_OUTPUT_CHARS = 2000


def _source(cell: dict[str, Any], key: str = "source") -> str:
    value = cell.get(key, "")
    return "".join(value) if isinstance(value, list) else str(value or "")


def notebook_to_markdown(nb_text: str) -> tuple[str, str]:
    """Render a notebook as Markdown (markdown cells as prose, code cells fenced); returns (text,
    language)."""
    nb = load_notebook(nb_text)
    meta: dict[str, Any] = nb["metadata"] if isinstance(nb.get("metadata"), dict) else {}
    lang = (
        (meta.get("kernelspec") or {}).get("language")
        or (meta.get("language_info") or {}).get("name")
        or "python"
    )
    parts: list[str] = []
    for cell in nb["cells"]:
        if not isinstance(cell, dict):
            continue
        kind = cell.get("cell_type")
        source = _source(cell).strip("\n")
        if kind == "code":
            if source.strip():
                fence = _fence_for(source)
                parts.append(f"{fence}{lang}\n{source}\n{fence}")
            for output in cell.get("outputs") or []:
                text = _output_text(output)
                if text:
                    fence = _fence_for(text)
                    parts.append(f"{fence}output\n{text}\n{fence}")
        elif source.strip():
            parts.append(source)
    return "\n\n".join(parts) + "\n", str(lang)


def _output_text(output: Any) -> str:
    if not isinstance(output, dict):
        return ""
    kind = output.get("output_type")
    if kind == "stream":
        text = _source(output, "text")
    elif kind in ("execute_result", "display_data"):
        data = output.get("data") or {}
        value = data.get("text/plain", "")
        text = "".join(value) if isinstance(value, list) else str(value)
    elif kind == "error":
        trace = output.get("traceback") or []
        text = (
            "\n".join(trace) if trace else f"{output.get('ename', '')}: {output.get('evalue', '')}"
        )
    else:
        return ""
    text = _ANSI.sub("", text).strip("\n")
    if len(text) > _MAX_OUTPUT_CHARS:
        text = text[:_MAX_OUTPUT_CHARS].rsplit("\n", 1)[0] + "\n..."
    return text


def parse_notebook(nb_text: str) -> Structured:
    text, lang = notebook_to_markdown(nb_text)
    parsed = parse_markdown(text)
    return Structured(parsed.text, parsed.blocks, {"kernel_language": lang})
