"""MENTIONS edges: an extractor's entities, plus the gazetteer pass over every chunk's text.

The gazetteer pass is what makes multi-hop ("bridge") retrieval work: every chunk MENTIONS each
known entity whose name occurs in its text, even when NER missed it. On HotpotQA the bridge
entities are other documents' titles, and a document EXPLAINS the entity its title names, so
`chunk -MENTIONS-> entity <-EXPLAINS- document` is the hop a question needs.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from rayweave.cluster.types import Chunk, Entity
from rayweave.graph.cooccurrence import corpus_scale
from rayweave.graph.edges import EdgeAccumulator, chunk_ref, entity_ref
from rayweave.graph.entities import EntityResolver, Resolves
from rayweave.graph.extraction import Extraction
from rayweave.graph.names import first_words, is_code_name, name_ngrams, normalize_name, tokens
from rayweave.graph.schema import EdgeSource, EntityRow, NodeRef, RelType
from rayweave.models.stopwords import FUNCTION_WORDS

CONF_EXTRACTOR = 0.7
CONF_GAZETTEER_MULTI = 0.75
CONF_GAZETTEER_SINGLE = 0.55

Match = tuple[int, bool, int]  # (occurrences, multi-token match, ambiguity)


def mention_weight(count: int) -> float:
    """Diminishing returns on repeated mentions: 1 -> 0.5, 2 -> 0.67, 3 -> 0.75."""
    return count / (count + 1.0)


@dataclass(frozen=True, slots=True)
class Gazetteer:
    """What the gazetteer pass matches against: every matchable form -> entity ids, the
    single-word forms that count only when capitalised, and the longest name in tokens.
    `match` gives, for any text (a chunk, or one of its sentences), entity id -> `Match` for
    the longest non-overlapping known names in it.

    A text's matches depend only on the forms whose first word is one of its window keys
    (`window_keys`): `name_ngrams` examines no other window. So a text matched under one
    gazetteer keeps its matches under another that differs only in forms starting with other
    words (`graph/match_memo.py` relies on this)."""

    forms: Mapping[str, Sequence[str]]
    cased: frozenset[str]
    max_ngram: int
    starts: frozenset[str]
    # An earlier gazetteer's forms, and those whose ids differ here (the rest are equal as
    # sets): a match memo made with those forms compares no other (`graph/match_memo.py`).
    since: tuple[Mapping[str, Sequence[str]], frozenset[str]] | None = None

    def match(self, text: str) -> dict[str, Match]:
        return _matches(text, self.forms, self.cased, self.max_ngram, self.starts)


def gazetteer(
    resolver: EntityResolver,
    entity_rows: Iterable[EntityRow],
    max_ngram: int,
    *,
    forms: Mapping[str, Sequence[str]] | None = None,
) -> Gazetteer:
    """`resolver`'s gazetteer (`forms`: its `EntityResolver.gazetteer()`, when made already)."""
    forms = resolver.gazetteer() if forms is None else forms
    return Gazetteer(
        forms=forms,
        cased=frozenset(proper_single_tokens(entity_rows)),
        max_ngram=max_ngram,
        starts=first_words(forms),
    )


def mention_edges(
    acc: EdgeAccumulator,
    resolver: Resolves,
    chunks: Sequence[Chunk],
    found: Mapping[str, Mapping[str, Match]],
    generic: AbstractSet[str],
    extracted: Mapping[str, Sequence[Entity]],
) -> None:
    """MENTIONS from `extracted` (an extractor's entities per chunk id) and the gazetteer's
    `found` matches, less the `generic` entities no extractor named in the chunk."""
    for c in chunks:
        ref = chunk_ref(c)
        counts: Counter[str] = Counter()
        for ent in extracted.get(c.id, ()):
            for eid in resolver.resolve(normalize_name(ent.name)):
                counts[eid] += 1
        mentioned = [(eid, n, CONF_EXTRACTOR, EdgeSource.EXTRACTOR) for eid, n in counts.items()]
        for eid, (n, multi, ambiguity) in found[c.id].items():
            if eid in generic and eid not in counts:
                continue
            conf = (CONF_GAZETTEER_MULTI if multi else CONF_GAZETTEER_SINGLE) / ambiguity
            mentioned.append((eid, n, conf, EdgeSource.GAZETTEER))
        for eid, n, conf, source in mentioned:
            acc.add(
                RelType.MENTIONS,
                ref,
                entity_ref(eid),
                confidence=conf,
                source=source,
                weight=mention_weight(n),
                count=n,
            )


def extracted_entities(
    chunks: Sequence[Chunk],
    mentions: Mapping[str, Sequence[Entity]],
    extractions: Mapping[str, Extraction],
) -> dict[str, list[Entity]]:
    """Per chunk id, the NER extractor's entities followed by the graph extractor's, its
    statements' subjects and objects included: a passage mentions every entity its facts name
    (HippoRAG's passage-entity edges)."""
    out: dict[str, list[Entity]] = {}
    for c in chunks:
        ext = extractions.get(c.id)
        ents = [*mentions.get(c.id, ())]
        if ext is not None:
            ents.extend(ext.entities)
            ents.extend(
                Entity(id="", name=name, kind="concept")
                for st in ext.statements
                for name in (st.subject, st.object)
            )
        if ents:
            out[c.id] = ents
    return out


def proper_single_tokens(rows: Iterable[EntityRow]) -> set[str]:
    """Single-word names that only count when capitalised in text ("Mercury", not "mercury")."""
    out: set[str] = set()
    for row in rows:
        out.update(cased_aliases(row))
    return out


def cased_aliases(row: EntityRow) -> tuple[str, ...]:
    """What `proper_single_tokens` takes of one row: its single-word aliases when its name is
    one capitalised word."""
    surface = row.name.strip()
    if (
        " " not in surface
        and surface[:1].isupper()
        and not is_code_name(surface)
        and not surface.isupper()
    ):
        return tuple(a for a in row.aliases if " " not in a)
    return ()


def _matches(
    text: str,
    gazetteer: Mapping[str, Sequence[str]],
    cased: AbstractSet[str],
    max_len: int,
    starts: AbstractSet[str],
) -> dict[str, Match]:
    """entity id -> (occurrences, multi-token match, ambiguity) for the longest non-overlapping
    gazetteer names in `text`."""
    raw = tokens(text)
    spans: list[tuple[int, int, str]] = []  # (start, length, norm)
    for start, length, norm in name_ngrams(text, max_len, starts=starts):
        if norm not in gazetteer:
            continue
        if length == 1 and norm in cased and not raw[start][:1].isupper():
            continue
        if length == 1 and (len(norm) < 3 or norm in FUNCTION_WORDS):
            continue
        spans.append((start, length, norm))
    spans.sort(key=lambda s: (-s[1], s[0]))
    taken = [False] * len(raw)
    out: dict[str, Match] = {}
    for start, length, norm in spans:
        if any(taken[start : start + length]):
            continue
        for i in range(start, start + length):
            taken[i] = True
        ids = gazetteer[norm]
        for eid in ids:
            n, multi, amb = out.get(eid, (0, False, len(ids)))
            out[eid] = (n + 1, multi or length > 1, min(amb, len(ids)))
    return out


def unit_frequencies(
    found: Mapping[str, Mapping[str, Match]], units: Mapping[NodeRef, NodeRef]
) -> tuple[int, Counter[str]]:
    """How many units there are, and in how many of them each entity's name occurs. Units never
    span documents, so counts from shares of whole documents add up."""
    unit_of_chunk = {ref.id: unit for ref, unit in units.items()}
    seen: dict[str, set[NodeRef]] = defaultdict(set)
    for cid, ents in found.items():
        unit = unit_of_chunk.get(cid)
        if unit is not None:
            for eid in ents:
                seen[eid].add(unit)
    return len(set(units.values())), Counter({eid: len(us) for eid, us in seen.items()})


def generic_from_counts(units: int, df: Mapping[str, int], max_df: float) -> set[str]:
    """Names too common to link: in more than `max_df` of the corpus's units (none below 50
    units, where a fraction says little)."""
    if units < 50:
        return set()
    total = corpus_scale(units)
    return {eid for eid, n in df.items() if n / total > max_df}
