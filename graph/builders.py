"""Pure functions from chunks (and optional extractor output) to the rows `GraphStore` writes.

No model is required: structure comes from chunk fields, entities from titles, headings,
definition sentences, code symbols, error codes and a gazetteer pass (`graph/entities.py`,
`graph/mentions.py`); an NER extractor's mentions and an LLM's statements
(`graph/extraction.py`), when available, only add to that. Every inferred edge carries a
confidence in [0, 1] and the rule (`EdgeSource`) that made it (`graph/edges.py`,
`graph/cooccurrence.py`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rayweave.cluster.settings import GraphSettings
from rayweave.cluster.types import Chunk, Document, Entity
from rayweave.graph.corpus_phases import FindMatches, NamesOf, PartsOf, TallyOf, build_in_one
from rayweave.graph.extraction import Extraction
from rayweave.graph.schema import GraphBatch
from rayweave.graph.share import Share


def build_graph(
    chunks: Sequence[Chunk],
    mentions: Mapping[str, Sequence[Entity]] | None = None,
    *,
    documents: Sequence[Document] = (),
    known: Mapping[str, Sequence[str]] | None = None,
    extractions: Mapping[str, Extraction] | None = None,
    settings: GraphSettings | None = None,
    names_of: NamesOf | None = None,
    find: FindMatches | None = None,
    tally: TallyOf | None = None,
    parts_of: PartsOf | None = None,
    columns: bool = False,
) -> GraphBatch:
    """Entities, topics and every inferred edge for `chunks` (see module docstring), through the
    corpus pass's phases over one share (`graph/corpus_phases.py`).

    `mentions` maps chunk ids to an extractor's entities (their ids are provisional and ignored);
    `known` maps alias forms to ids of entities stored elsewhere, which the build then reuses
    (the corpus pass builds from every chunk and passes none); `extractions` is the optional LLM
    hook's output. `names_of` gives phase 1 (`graph/name_memo.py`), `find` the gazetteer
    matches (`graph/match_memo.py`), `tally` phase 2's counts of them (`graph/tally_memo.py`),
    `parts_of` each document's phase 3 (`graph/edge_memo.py`; a reused document's edges are
    left out); `columns`: co-occurrence's edges as the batch's columns (`EdgeColumns`), for a
    sync that compares them with what is stored.
    Structure edges (CHUNK_OF/HAS_CHILD/NEXT) are written by `GraphStore.write_chunks` from the
    chunk fields and are not repeated here.
    """
    share = Share(chunks, mentions or {}, extractions or {}, documents)
    return build_in_one(
        share,
        settings or GraphSettings(),
        known=known,
        names_of=names_of,
        find=find,
        tally=tally,
        parts_of=parts_of,
        columns=columns,
    )
