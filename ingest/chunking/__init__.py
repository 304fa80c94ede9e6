"""Documents -> three levels of chunks (seed 002), with relationship metadata (seed 000).

Level 1, DOCUMENT: one summary per document, extractive by default (title, lead sentences,
headings; for code the module docstring and the signatures it defines), or an LLM's summary when
`summarize` is given. Level 2, SECTION: `section_min_tokens`-`section_max_tokens` semantic
sections, split on headings first (a heading's subtree stays whole when it fits; small siblings
merge), then, inside a heading region that is still too long, at topic shifts (boundaries where
the similarity of the sentence windows either side drops well below the region's mean, when
`embed` is given) or else with a sliding window whose sections overlap by about
`section_overlap_tokens` of whole sentences. Level 3, PROPOSITION: `proposition_min_tokens`-
`proposition_max_tokens` groups of whole sentences inside a section's own (non-overlapping)
text; a sentence opening with a dangling pronoun or connective ("It", "However", ...) stays with
the sentence before it whenever the group still fits. Code follows module -> class -> function
(`rayweave.ingest.code`): sections are code units, their propositions the functions inside them.

Every section and proposition is an exact slice of `ChunkedDocument.text` (the document text, or
for HTML and notebooks their Markdown rendering): `chunk.text == text[start_char:end_char]`.
Sections tile the text in reading order (only window overlaps repeat text); prose propositions
tile their section's own text. Sizes are in the embedding model's tokens, counted in one batched
call per document (counts of whitespace-separated pieces add up exactly for WordPiece).

Bounds hold except for indivisible units, which are kept whole rather than cut mid-way: a
sentence longer than `proposition_max_tokens` is a proposition of its own; a code block,
table or function over `section_max_tokens` is split on lines or statements, but one line that
alone exceeds the limit stays whole; such an oversize piece may carry neighbours worth less than
the minimum (the "Schema:" line before it). A heading region smaller than `section_min_tokens`
with no sibling to merge with stays small (structure beats size), as does a short document.

A section whose only proposition would repeat it word for word gets no propositions (the same
text embedded twice adds cost and duplicate hits, nothing else); the section is then the leaf.

Ids are `stable_id(doc id, level, occurrence, content hash)`: unchanged text keeps its id even
when an edit elsewhere shifts positions, so re-ingesting changes only what changed.

The steps, one module each: `pieces` (sentences, headings, code blocks, tables), `sections`,
`propositions`, `prose_plan` and `code_plan` (what becomes a chunk), `summary`, `assembly` (ids,
links, metadata), `embed_texts`, `images`; `chunker` holds the entry points.
"""

from rayweave.ingest.chunking.chunked import ChunkBatch, ChunkedDocument, Embed, Summarize
from rayweave.ingest.chunking.chunker import chunk_document, chunk_documents

__all__ = [
    "ChunkBatch",
    "ChunkedDocument",
    "Embed",
    "Summarize",
    "chunk_document",
    "chunk_documents",
]
