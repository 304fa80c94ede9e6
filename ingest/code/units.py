"""What code splitting and symbol extraction return: units, definitions and symbols."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

CountTokens = Callable[[Sequence[str]], list[int]]

# Symbol lists per unit or file are capped: past this they describe nothing a search can use.
MAX_LIST = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class CodeDefinition:
    """A symbol a piece of code defines."""

    name: str
    qualified_name: str
    kind: str
    start_line: int
    end_line: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CodeSymbols:
    """What a file or unit defines, imports and uses.

    `imports` are the modules/paths as written (`os.path`, `./mod`, `std::collections::HashMap`);
    `calls` the callees as written minus `self.`/`this.`; `references` the simple names used
    (callees' last segment, type names, imported and module-level names), excluding own ones.
    """

    language: str
    definitions: tuple[CodeDefinition, ...] = ()
    imports: tuple[str, ...] = ()
    calls: tuple[str, ...] = ()
    references: tuple[str, ...] = ()

    @property
    def defined_names(self) -> tuple[str, ...]:
        return tuple(d.qualified_name for d in self.definitions)


@dataclass(frozen=True, slots=True, kw_only=True)
class CodeUnit:
    """One piece of a source file, an exact slice `text == source[start:end]`.

    kind: `class` / `function` (a definition kept whole), `part` (a slice of a function or
    definition over the limit), `block` (top-level code between definitions), `module` (packed
    neighbours). `members` are the definitions inside a packed unit or a class kept whole.
    """

    kind: str
    name: str
    path: tuple[str, ...]
    language: str
    start: int
    end: int
    text: str
    signature: str = ""
    docstring: str = ""
    context: str = ""
    tokens: int = 0
    defined: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    calls: tuple[str, ...] = ()
    dependencies: tuple[str, ...] = ()
    members: tuple[CodeUnit, ...] = ()


def dedupe(items: Sequence[str], limit: int = MAX_LIST) -> tuple[str, ...]:
    """Non-empty `items` in first-seen order, at most `limit` of them."""
    seen: dict[str, None] = {}
    for item in items:
        if item and item not in seen:
            seen[item] = None
            if len(seen) >= limit:
                break
    return tuple(seen)
