"""CO_MENTIONED edges: entities named in one sentence.

A compositional question's hops are joined by sentences: the passage about the question's entity
names the next hop's entity in the same sentence ("Green is an album by Steve Hillage"). Without
this edge a walk reaches the next passage only through entity -> passage -> entity -> passage,
halving its mass at each step and spreading it over every name the passage holds. A sentence is
the smallest span of text that states a relation, so an edge between the names it holds carries
the walk from one hop's entity straight to the next one's, and only to those. RELATED_TO
(`graph/cooccurrence.py`) stays the unit-level, topical relation.

Every constant is a general default chosen by reasoning, not fitted to a data set:

- `MAX_SENTENCE_ENTITIES` (6): a sentence that names more things is a list (a cast, a line-up, a
  route); its six rarest names are kept, at most 15 pairs, since a list relates its members only
  loosely and its common names would spread the walk thin.
- A sentence gives each of its k names one unit of co-mention split evenly over its k - 1
  partners ("Green is an album by Steve Hillage" links its two names with 1, a five-name sentence
  each pair with 1/4), times each name's certainty (1 / the number of entities its surface form
  may be). The edge's confidence is `support / (support + 1)`, as `mention_weight`: one
  two-name sentence 0.5, two 0.67.
- The edge's weight is the geometric mean of its names' rarity (`graph.scoring.idf` of the chunks
  naming each), so a walk, which splits an entity's mass by edge weight, hands more of it to a
  specific partner than to a common one, and the stored edge is symmetric (walked both ways).
- `MAX_PER_ENTITY` (64, the unit cap of `graph/cooccurrence.py`): an entity keeps its strongest
  edges, which bounds a hub's fan-out at one long passage's names while an ordinary entity keeps
  all of its edges.
- The subject of a chunk (what it explains by its title or heading) joins its first sentence and
  every sentence that opens with a third-person pronoun: a lead sentence names its subject in
  forms the gazetteer can miss ("Herbert Leon Kessler is ..." under the title "Herbert L.
  Kessler"), and "He studied under Kurt Weitzmann" speaks of it (coreference at no cost).
- Code chunks are skipped (a line of code is not a sentence), and a sentence a document repeats
  (its summary repeats its sections, propositions their section) counts once.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet

from rayweave.cluster.types import Chunk, ContentType
from rayweave.graph.cooccurrence import strongest_per_entity
from rayweave.graph.edges import entity_ref
from rayweave.graph.mentions import Match
from rayweave.graph.schema import EdgeRow, EdgeSource, RelType
from rayweave.graph.scoring import idf

MAX_SENTENCE_ENTITIES = 6
MAX_PER_ENTITY = 64

_END = re.compile(r"[.!?]+[\"'”’)\]]*\s+|\n\s*\n")
_WORD_BEFORE = re.compile(r"[^\s(\[\"'“‘]+$")
_PRONOUN_START = re.compile(r"^\W*(?:he|she|it|they|his|her|its|their)\b", re.IGNORECASE)
_ABBREVIATION = re.compile(
    r"(?:mrs?|ms|dr|st|jr|sr|mt|ft|no|vol|inc|ltd|co|corp|vs|etc|fig|approx|gen|col|lt|sgt|rev"
    r"|hon|prof)",
    re.IGNORECASE,
)


def split_sentences(text: str) -> list[str]:
    """Sentences of prose: terminal punctuation before whitespace and a non-lowercase start, or a
    blank line. Initials, dotted abbreviations (`U.S.`, `Ph.D.`) and common title abbreviations
    (`Dr.`, `St.`) do not end a sentence."""
    out: list[str] = []
    start = 0
    for m in _END.finditer(text):
        if not _is_boundary(text, m.start(), m.end()):
            continue
        piece = text[start : m.end()].strip()
        if piece:
            out.append(piece)
        start = m.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


def _is_boundary(text: str, punct: int, after: int) -> bool:
    if text[punct] == "\n":
        return True
    if after < len(text) and text[after].islower():
        return False
    if text[punct] != ".":
        return True
    word = _WORD_BEFORE.search(text, max(0, punct - 24), punct)
    if word is None:
        return True
    token = word.group(0)
    return len(token) > 1 and "." not in token and not _ABBREVIATION.fullmatch(token)


def chunk_sentences(chunks: Sequence[Chunk]) -> dict[str, list[str]]:
    """Per prose chunk id, its sentences that no earlier chunk of its document held."""
    seen: dict[str, set[str]] = defaultdict(set)
    out: dict[str, list[str]] = {}
    for c in chunks:
        if c.content_type is ContentType.CODE:
            continue
        fresh = []
        for s in split_sentences(c.text):
            key = " ".join(s.split())
            if key not in seen[c.doc_id]:
                seen[c.doc_id].add(key)
                fresh.append(s)
        if fresh:
            out[c.id] = fresh
    return out


def sentence_entities(
    sentences: Sequence[str],
    matches: Sequence[Mapping[str, Match]],
    subjects: Collection[str],
    generic: AbstractSet[str],
) -> list[dict[str, float]]:
    """Per sentence, entity id -> certainty (1 / ambiguity of the matched form), the `generic`
    names left out; the chunk's `subjects` join its first sentence and pronoun-led ones."""
    out = []
    for i, (text, found) in enumerate(zip(sentences, matches, strict=True)):
        names = {eid: 1.0 / max(1, amb) for eid, (_, _, amb) in found.items() if eid not in generic}
        if i == 0 or _PRONOUN_START.match(text):
            names.update(dict.fromkeys(subjects, 1.0))
        out.append(names)
    return out


def pair_support(
    sentences: Iterable[Mapping[str, float]], df: Mapping[str, int]
) -> dict[tuple[str, str], tuple[float, int]]:
    """(a, b) with a < b -> (support, sentences naming both) over the sentences' entities, each
    sentence's `MAX_SENTENCE_ENTITIES` rarest names only (see module docstring)."""
    support: dict[tuple[str, str], float] = defaultdict(float)
    count: Counter[tuple[str, str]] = Counter()
    for names in sentences:
        if len(names) < 2:
            continue
        # Rarity decides only what a long sentence keeps: a short one reads no frequency.
        if len(names) > MAX_SENTENCE_ENTITIES:
            kept = sorted(names, key=lambda e: (df.get(e, 1), e))[:MAX_SENTENCE_ENTITIES]
        else:
            kept = list(names)
        share = 1.0 / (len(kept) - 1)
        kept.sort()
        for i, a in enumerate(kept):
            for b in kept[i + 1 :]:
                support[(a, b)] += share * names[a] * names[b]
                count[(a, b)] += 1
    return {pair: (s, count[pair]) for pair, s in support.items()}


def comention_edges(
    support: Mapping[tuple[str, str], tuple[float, int]],
    df: Mapping[str, int],
    *,
    max_per_entity: int = MAX_PER_ENTITY,
) -> list[EdgeRow]:
    """One CO_MENTIONED edge per supported pair, from the smaller id to the larger: confidence
    from support, weight from rarity; each entity's `max_per_entity` strongest."""
    scored = []
    for (a, b), (s, n) in support.items():
        confidence = s / (s + 1.0)
        rarity = math.sqrt(idf(df.get(a, 1)) * idf(df.get(b, 1)))
        scored.append((confidence * rarity, a, b, confidence, rarity, s, n))
    scored.sort(key=lambda t: (-t[0], t[1], t[2]))
    out = []
    for _, a, b, confidence, rarity, s, n in strongest_per_entity(
        scored, max_per_entity, lambda t: (t[1], t[2])
    ):
        out.append(
            EdgeRow(
                rel=RelType.CO_MENTIONED,
                src=entity_ref(a),
                dst=entity_ref(b),
                weight=round(rarity, 6),
                confidence=round(confidence, 6),
                source=EdgeSource.SENTENCE,
                count=n,
                props={"support": round(s, 6)},
            )
        )
    return out
