"""Source code split on syntax boundaries, with the symbols each piece defines and uses.

tree-sitter parses Python, JavaScript, TypeScript/TSX, Rust, Go, Java, Solidity, C, C++, C#,
Kotlin, Swift, Scala and PHP (one single-grammar wheel each, nothing fetched at run time) into units
module -> class -> function. A unit keeps its leading doc comments, decorators and attributes; a
class that fits the token limit stays whole, a larger one is laid out member by member with the
class signature as context; a function is never cut unless it alone exceeds the limit, and then
it is split between statements with its signature repeated as context. Small neighbours
(imports, constants, tiny functions) are packed together up to `min_tokens`.

Languages without a working grammar here (Move: the published `tree-sitter-move` 0.0.2 wheel
ships a macOS binary; any grammar whose wheel fails to load) use a brace scanner that finds the
same module -> declaration -> function boundaries in any C-like syntax, and everything else
(YAML, SQL, shell) is split into blank-line-separated windows. Nothing here raises on bad code:
tree-sitter recovers from syntax errors and the fall-backs accept any text.

Symbols (`extract_symbols`, and per unit) serve the graph's DEFINES / USES / REFERENCES edges:
definitions with qualified names, imports (dependencies), calls and other names used.
`code_embed_text` renders a unit for dense encoders, whose word-piece vocabularies match
`write boolean` far better than `writeBoolean`; the stored text stays the raw code.
"""

from rayweave.ingest.code.embed_text import code_embed_text
from rayweave.ingest.code.extract import extract_symbols
from rayweave.ingest.code.identifiers import identifier_words
from rayweave.ingest.code.parsing import supported_languages
from rayweave.ingest.code.split import split_code
from rayweave.ingest.code.units import CodeDefinition, CodeSymbols, CodeUnit

__all__ = [
    "CodeDefinition",
    "CodeSymbols",
    "CodeUnit",
    "code_embed_text",
    "extract_symbols",
    "identifier_words",
    "split_code",
    "supported_languages",
]
