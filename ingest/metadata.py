"""Relationship metadata found in chunk text (seed 000): references, dependencies, errors, keywords.

All extractors are regexes and counting, deterministic and offline, cheap enough to run on every
chunk of every level. What they find feeds the graph: links and symbols become REFERENCES edges,
imports and install commands DEPENDS_ON, error codes join error/solution pairs, keywords label
sections and propositions.

Error patterns recognised: codes such as `E1234`, `TS2345`, `ORA-00942`; `ERR_FOO_BAR` and
`ERROR_FOO` constants; POSIX errno names (`ENOENT`); exception classes with their message
(`ValueError: bad input`) and the last line of a Python traceback; HTTP statuses (`HTTP 404`,
`503 Service Unavailable`); rustc's `error[E0382]`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from rayweave.cluster.types import ContentType
from rayweave.models.stopwords import CODE_KEYWORDS, KEYWORD_STOPWORDS

__all__ = [
    "ChunkMetadata",
    "ErrorMention",
    "chunk_metadata",
    "extract_dependencies",
    "extract_keywords",
    "extract_references",
    "find_errors",
]

_MAX_ITEMS = 32


@dataclass(frozen=True, slots=True)
class ErrorMention:
    code: str
    message: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkMetadata:
    references: tuple[str, ...] = ()
    dependencies: tuple[str, ...] = ()
    error_codes: tuple[str, ...] = ()
    error_messages: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()


def _unique(items: Iterable[str], limit: int = _MAX_ITEMS) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for item in items:
        item = item.strip()
        if item and item not in seen:
            seen[item] = None
            if len(seen) >= limit:
                break
    return tuple(seen)


# -- references ----------------------------------------------------------------------------------

_MD_LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+[\"'][^\"']*[\"'])?\s*\)")
_MD_REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.MULTILINE)
_AUTOLINK = re.compile(r"<((?:https?|ftp|mailto):[^>\s]+)>")
_BARE_URL = re.compile(r"(?<![(<\[\"'=])\b(https?://[^\s<>\"'`)\]]*[^\s<>\"'`)\].,;:!?])")
_HTML_HREF = re.compile(r"\bhref\s*=\s*[\"']([^\"'#][^\"']*|#[^\"']+)[\"']", re.IGNORECASE)
_RST_LINK = re.compile(r"`[^`<\n]*<([^>`\n]+)>`_{1,2}")
_RST_ROLE = re.compile(
    r":(?:py:)?(?:doc|ref|func|class|meth|mod|attr|obj|exc|data|const|term):`(?:[^`<]*<)?~?([^`>]+)>?`"
)
_INLINE_CODE = re.compile(r"(?<!`)`([^`\n]{1,80})`(?!`)")
_SYMBOL = re.compile(r"^[A-Za-z_][\w]*(?:(?:\.|::|#)[A-Za-z_]\w*)*(?:\(\))?$")


def extract_references(text: str) -> tuple[str, ...]:
    """Link targets (Markdown, RST, HTML, bare URLs) and code symbols named in inline code."""
    refs: list[str] = []
    for pattern in (_MD_LINK, _MD_REF_DEF, _AUTOLINK, _RST_LINK, _HTML_HREF):
        refs.extend(m.group(1) for m in pattern.finditer(text))
    refs.extend(m.group(1) for m in _RST_ROLE.finditer(text))
    refs.extend(m.group(1) for m in _BARE_URL.finditer(text))
    for m in _INLINE_CODE.finditer(text):
        code = m.group(1).strip()
        if _SYMBOL.match(code) and not code.isdigit():
            refs.append(code.removesuffix("()"))
    return _unique(refs)


# -- dependencies --------------------------------------------------------------------------------

_IMPORTS = re.compile(
    r"^[ \t]*(?:"
    r"from[ \t]+([\w.]+)[ \t]+import\b"  # python
    # python/java
    r"|import[ \t]+([\w.]+(?:[ \t]*,[ \t]*[\w.]+)*)[ \t]*(?:as[ \t]+\w+)?[ \t]*;?[ \t]*$"
    r"|import[ \t]+(?:type[ \t]+)?(?:[\w*{}\s,]+?[ \t]+from[ \t]+)?[\"']([^\"']+)[\"']"  # js/ts
    r"|(?:pub[ \t]+)?use[ \t]+([\w:]+)"  # rust/move
    r"|#include[ \t]*[<\"]([^>\"]+)[>\"]"  # c
    r")",
    re.MULTILINE,
)
_REQUIRE = re.compile(r"\brequire\(\s*[\"']([^\"']+)[\"']\s*\)")
_GO_IMPORT = re.compile(r"^[ \t]*import[ \t]*\(([^)]*)\)", re.MULTILINE)
_INSTALL = re.compile(
    r"\b(?:pip3?|uv[ \t]+pip|poetry|pipx)[ \t]+(?:install|add)[ \t]+"
    r"((?:-{1,2}[\w-]+(?:=\S+)?[ \t]+)*)([^\n`]*)"
    r"|\b(?:npm[ \t]+(?:install|i|add)|yarn[ \t]+add|pnpm[ \t]+add)[ \t]+([^\n`]*)"
    r"|\bcargo[ \t]+add[ \t]+([^\n`]*)"
    r"|\bgo[ \t]+get[ \t]+([^\n`]*)"
    r"|\bconda[ \t]+install[ \t]+([^\n`]*)"
)
_PKG = re.compile(r"^[@A-Za-z0-9][\w.@/-]*")


def _packages(args: str) -> list[str]:
    out = []
    for word in args.split():
        if word.startswith("-") or word in ("&&", "|", ";", "\\"):
            if word in ("&&", "|", ";"):
                break
            continue
        m = _PKG.match(word.strip("'\""))
        if m and not m.group(0).startswith(("http", "git+")) and "/" not in m.group(0)[1:2]:
            name = re.split(r"[<>=!~\[;@]", m.group(0)[1:], maxsplit=1)[0]
            out.append((m.group(0)[0] + name).lower() if m.group(0)[0] != "@" else m.group(0))
    return out


def extract_dependencies(text: str, language: str | None = None) -> tuple[str, ...]:
    """Modules imported in code (any common language) and packages named in install commands."""
    deps: list[str] = []
    for m in _IMPORTS.finditer(text):
        if m.group(2):
            deps.extend(x.strip() for x in m.group(2).split(","))
        else:
            deps.append(next(g for g in m.groups() if g))
    deps.extend(m.group(1) for m in _REQUIRE.finditer(text))
    for m in _GO_IMPORT.finditer(text):
        deps.extend(re.findall(r"\"([^\"]+)\"", m.group(1)))
    for m in _INSTALL.finditer(text):
        args = next((g for g in m.groups()[1:] if g), "")
        deps.extend(_packages(args))
    return _unique(d for d in deps if d not in ("as", "from", "*"))


# -- errors --------------------------------------------------------------------------------------

_NOT_ERROR_CODE = re.compile(
    r"^(?:SHA|MD|RFC|ISO|UTF|AES|RSA|HTTP|TLS|SSL|IPV|X|PEP|CVE|COVID|GPT|BERT|USB|HDMI|CPU|GPU|RAM|"
    r"MP|H|A|B|F|G|IEEE|ANSI|ECMA|ES|PY|CP|ASCII|WIN|V|R|S|N|T|L|M|P|Q|Z|Y|K|J|I|O|U|W|D|C)\d"
)
_CODE = re.compile(r"\b([A-Z]{1,4}\d{3,5}|[A-Z]{2,5}-\d{3,5})\b")
_RUSTC = re.compile(r"\berror\[(E\d{4})\]")
_CONST = re.compile(r"\b(ERR(?:OR)?_[A-Z0-9]+(?:_[A-Z0-9]+)*)\b")
_ERRNO = re.compile(
    r"\b(E(?:NOENT|ACCES|PERM|EXIST|NOTDIR|ISDIR|INVAL|NOSPC|PIPE|AGAIN|BUSY|CONNREFUSED|CONNRESET|"
    r"CONNABORTED|TIMEDOUT|HOSTUNREACH|NETUNREACH|ADDRINUSE|ADDRNOTAVAIL|MFILE|NOMEM|NOTEMPTY|ROFS|"
    r"LOOP|NAMETOOLONG|NOTCONN|NOTSUP|BADF|INTR|IO|DEADLK|NOEXEC|XDEV|SRCH|CHILD|FAULT|NOTTY|FBIG|"
    r"SPIPE|MLINK|DOM|RANGE|PROTO|WOULDBLOCK))\b"
)
_EXCEPTION = re.compile(
    r"\b((?:[a-z_][\w]*\.)*[A-Z][A-Za-z0-9]*(?:Error|Exception|Fault|Failure|Panic|Warning))\b"
    r"(?::[ \t]+([^\n]{1,200}))?"
)
_HTTP = re.compile(
    r"\bHTTP(?:/\d(?:\.\d)?)?[ \t]+([1-5]\d\d)\b"
    r"|\b([45]\d\d)[ \t]+(Bad Request|Unauthorized|Payment Required|Forbidden|Not Found|"
    r"Method Not Allowed|"
    r"Not Acceptable|Request Timeout|Conflict|Gone|Payload Too Large|Unsupported Media Type|"
    r"Unprocessable (?:Entity|Content)|Too Many Requests|Internal Server Error|Not Implemented|"
    r"Bad Gateway|"
    r"Service Unavailable|Gateway Timeout)\b"
    r"|\b(?:status(?:[ \t]+code)?|returns?|error)[ \t]+([45]\d\d)\b",
    re.IGNORECASE,
)


_TRACEBACK = re.compile(
    r"Traceback \(most recent call last\):[ \t]*\n(?:[ \t]+[^\n]*\n)+"
    r"([A-Za-z_][\w.]*)(?::[ \t]*([^\n]{0,200}))?"
)


def find_errors(text: str) -> list[ErrorMention]:
    """Error codes and exception messages mentioned in the text, in order of appearance."""
    found: list[tuple[int, ErrorMention]] = []
    for m in _TRACEBACK.finditer(text):  # whatever a Python traceback ends with is an exception
        found.append((m.start(1), ErrorMention(m.group(1), (m.group(2) or "").strip())))
    for m in _RUSTC.finditer(text):
        found.append((m.start(), ErrorMention(m.group(1))))
    for m in _CODE.finditer(text):
        code = m.group(1)
        if not _NOT_ERROR_CODE.match(code):
            found.append((m.start(), ErrorMention(code)))
    for pattern in (_CONST, _ERRNO):
        for m in pattern.finditer(text):
            found.append((m.start(), ErrorMention(m.group(1))))
    for m in _EXCEPTION.finditer(text):
        found.append((m.start(), ErrorMention(m.group(1), (m.group(2) or "").strip().rstrip("`"))))
    for m in _HTTP.finditer(text):
        status = m.group(1) or m.group(2) or m.group(3)
        found.append(
            (m.start(), ErrorMention(f"HTTP {status}", (m.group(0) if m.group(2) else "").strip()))
        )
    found.sort(key=lambda x: x[0])
    out: list[ErrorMention] = []
    seen: set[tuple[str, str]] = set()
    for _pos, mention in found:
        key = (mention.code, mention.message)
        if key not in seen:
            seen.add(key)
            out.append(mention)
    return out


# -- keywords ------------------------------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_+#'-]*[A-Za-z0-9+#]|[A-Za-z]")
_PHRASE_BREAK = re.compile(r"[.,;:!?()\[\]{}\"`|<>=/\\\n]+|\s-\s|\s–\s|\s—\s")
_CODE_FENCE = re.compile(r"```.*?```|~~~.*?~~~", re.DOTALL)
_MD_NOISE = re.compile(r"\]\([^)]*\)|https?://\S+|<[^>]+>")
_MAX_PHRASE_WORDS = 3


def extract_keywords(text: str, *, top_k: int = 8, code: bool = False) -> tuple[str, ...]:
    """Key phrases: stopword-delimited 1-3-word n-grams ranked by frequency, longer ones favoured.

    A phrase counts every time it occurs inside a stopword-free run, so "dead-letter queue" found
    in "the dead-letter queue holds" and "from the dead-letter queue after" counts twice (plain
    RAKE would see two different phrases); plurals count with their singular. Repeated phrases
    rank first, then phrases mentioned once (longer first, as RAKE would). Phrases contained in,
    or containing, a better-ranked one are skipped. Deterministic: ties break by first
    occurrence. For code, the identifiers' words are counted instead.
    """
    if code:
        return _code_keywords(text, top_k)
    prose = _MD_NOISE.sub(" ", _CODE_FENCE.sub(" ", text))
    counts: dict[str, int] = {}
    first: dict[str, int] = {}
    surface: dict[str, str] = {}
    lengths: dict[str, int] = {}
    position = 0
    stop = KEYWORD_STOPWORDS
    for fragment in _PHRASE_BREAK.split(prose):
        run: list[str] = []
        for word in [*_WORD.findall(fragment), ""]:
            low = word.lower()
            if low and low not in stop and len(low) > 1 and not low.isdigit():
                run.append(low)
                continue
            if run:
                keys = [_singular(w) for w in run]
                for n in range(1, min(_MAX_PHRASE_WORDS, len(run)) + 1):
                    for i in range(len(run) - n + 1):
                        gram = " ".join(keys[i : i + n])
                        seen = counts.get(gram)
                        if seen is None:
                            counts[gram] = 1
                            first[gram] = position + i
                            surface[gram] = " ".join(run[i : i + n])
                            lengths[gram] = n
                        else:
                            counts[gram] = seen + 1
                position += len(run) + 1
                run = []
    ranked = sorted(
        (g for g in counts if lengths[g] > 1 or len(g) > 2),
        key=lambda g: (-_phrase_score(counts[g], lengths[g]), first[g]),
    )
    chosen: list[str] = []
    padded: list[str] = []
    for gram in ranked:
        probe = f" {gram} "
        if any(probe in c or c in probe for c in padded):
            continue  # contained in, or containing, a better phrase
        chosen.append(gram)
        padded.append(probe)
        if len(chosen) == top_k:
            break
    return tuple(surface[g] for g in chosen)


def _phrase_score(count: int, words: int) -> float:
    """Repeated phrases first (longer ones favoured), then single mentions, longer first."""
    if count > 1:
        return count * (1.0 + 0.6 * (words - 1))
    return 1.0 + 0.1 * (words - 1)


def _singular(word: str) -> str:
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is", "'s")):
        return word[:-1]
    return word


_CODE_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_CAMEL_PART = re.compile(r"[A-Z]+[0-9]*(?=[A-Z][a-z])|[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*")


def _code_keywords(text: str, top_k: int) -> tuple[str, ...]:
    counts: Counter[str] = Counter()
    first: dict[str, int] = {}
    idx = 0
    for ident in _CODE_WORD.findall(text):
        for part in _CAMEL_PART.findall(ident) if not ident.islower() else (ident,):
            low = part.lower()
            idx += 1
            if len(low) < 3 or low in CODE_KEYWORDS or low in KEYWORD_STOPWORDS:
                continue
            counts[low] += 1
            first.setdefault(low, idx)
    ranked = sorted(counts, key=lambda w: (-counts[w], first[w]))
    return tuple(ranked[:top_k])


# -- everything for one chunk --------------------------------------------------------------------


def chunk_metadata(
    text: str,
    *,
    content_type: ContentType = ContentType.TEXT,
    language: str | None = None,
    keywords: int = 8,
) -> ChunkMetadata:
    """All text-derived metadata of one chunk (code chunks get symbols from `ingest.code`)."""
    is_code = content_type == ContentType.CODE
    errors = find_errors(text)
    return ChunkMetadata(
        references=() if is_code else extract_references(text),
        dependencies=extract_dependencies(text, language),
        error_codes=_unique(e.code for e in errors),
        error_messages=_unique(f"{e.code}: {e.message}" for e in errors if e.message),
        keywords=extract_keywords(text, top_k=keywords, code=is_code),
    )
