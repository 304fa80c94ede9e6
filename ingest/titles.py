"""A document's title: first heading, module docstring or file name, found with cheap regexes."""

from __future__ import annotations

import html
import re

from rayweave.cluster.errors import SourceError
from rayweave.cluster.types import ContentType
from rayweave.ingest.notebooks import load_notebook

_MAX_TITLE = 120
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)---[ \t]*\n", re.DOTALL)
_FM_TITLE = re.compile(r"^title:\s*['\"]?(.+?)['\"]?\s*$", re.MULTILINE)
_ATX = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_SETEXT = re.compile(r"^([^\n#>\-*=][^\n]*)\n(?:=+|-+)[ \t]*$", re.MULTILINE)
_RST_TITLE = re.compile(r"^([^\s][^\n]*)\n([=\-~^\"'`#*+:._])\2{2,}[ \t]*$", re.MULTILINE)
_HTML_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_HTML_H1 = re.compile(r"<h1[^>]*>(.*?)</h1>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]+>")
_PY_DOCSTRING = re.compile(
    r"\A(?:\s*#[^\n]*\n|\s*\n)*\s*[rRuU]?(\"\"\"|''')\s*(.*?)\s*\1", re.DOTALL
)
# `#` but not `#!`: a shebang names an interpreter, not the file.
_LEADING_COMMENT = re.compile(r"\A\s*(?://[/!]?|#(?!!)|--)\s*([^\n]+)")
_MD_INLINE = re.compile(r"[*_`]+|\[([^\]]*)\]\([^)]*\)")


def _clean(title: str) -> str:
    title = _MD_INLINE.sub(lambda m: m.group(1) or "", title)
    title = " ".join(title.split())
    return title[:_MAX_TITLE]


def split_front_matter(text: str) -> tuple[str, str]:
    """(front matter body, rest) for Markdown with a leading YAML block; ("", text) otherwise."""
    match = _FRONT_MATTER.match(text)
    if not match:
        return "", text
    return match.group(1), text[match.end() :]


def markdown_title(text: str) -> str:
    front, body = split_front_matter(text)
    if front and (m := _FM_TITLE.search(front)):
        return _clean(m.group(1))
    candidates = [m for m in (_ATX.search(body), _SETEXT.search(body)) if m]
    if not candidates:
        return ""
    first = min(candidates, key=lambda m: m.start())
    return _clean(first.group(1))


def rst_title(text: str) -> str:
    m = _RST_TITLE.search(text)
    return _clean(m.group(1)) if m else ""


def html_title(text: str) -> str:
    for pattern in (_HTML_TITLE, _HTML_H1):
        m = pattern.search(text)
        if m:
            title = _clean(html.unescape(_TAG.sub(" ", m.group(1))))
            if title:
                return title
    return ""


def notebook_title(text: str) -> str:
    try:
        nb = load_notebook(text)
    except SourceError:
        return ""
    for cell in nb["cells"]:
        if isinstance(cell, dict) and cell.get("cell_type") == "markdown":
            source = cell.get("source", "")
            source = "".join(source) if isinstance(source, list) else str(source)
            if title := markdown_title(source):
                return title
    return ""


def code_title(text: str, language: str | None) -> str:
    """First line of the module docstring (Python) or leading comment; "" when there is none."""
    if language == "python":
        m = _PY_DOCSTRING.match(text)
        if m and m.group(2):
            return _clean(m.group(2).strip().split("\n", 1)[0])
        return ""
    m = _LEADING_COMMENT.match(text)
    if m and not m.group(1).lower().startswith(("spdx", "copyright", "-*-")):
        return _clean(m.group(1))
    return ""


def text_title(text: str) -> str:
    first = text.strip().split("\n", 1)[0].strip()
    if 0 < len(first) <= 80 and not first.endswith((".", ",", ";")):
        return _clean(first)
    return rst_title(text)


def guess_title(text: str, content_type: ContentType, language: str | None = None) -> str:
    """The title the content itself states, or "" (callers fall back to the file name)."""
    match content_type:
        case ContentType.MARKDOWN:
            return markdown_title(text)
        case ContentType.RST:
            return rst_title(text)
        case ContentType.HTML:
            return html_title(text)
        case ContentType.NOTEBOOK:
            return notebook_title(text)
        case ContentType.CODE:
            return code_title(text, language)
        case ContentType.TEXT:
            return text_title(text)
    return ""
