"""One document view before fusion: every list resolves its hits to the passage a user is shown.

Flat search ranks every level of a document, so without this a document that is one section
competes with its own summary chunk (for code: name, signature, first docstring line), and a
section with its propositions: one passage, several candidates, and fusion counts each one's
votes apart (docs/experiments/2026-11-26-summary-levels.md measured the cost). Resolved, a
document's summary and its only section are one candidate with two pieces of evidence.

The unit (`cluster.types.view_of`, in each hit's metadata under `VIEW_ID`: the vector retriever
sets it from the point's payload, the graph retriever from its projection, any other retriever
over stored chunks with `with_view`):
- a section is its own unit;
- a proposition resolves to its section in the 'section' view (small to big: the passage shown
  holds the sentence that matched), and stays itself in the 'summary' view;
- a document's summary resolves to its section when the document has exactly one; a summary of a
  document with several sections stays a unit of its own (it finds the document, whose sections
  are offered beside it).

Within one list, a unit's score combines its views (`Evidence`):
- 'max': the best-scoring view stands for the unit (a document scored by its best chunk);
- 'mean': the unit's summary view and content view (its section, or the best of the section and
  its propositions) are averaged, a view the list did not return counting as the list's lowest
  score. A summary is a short, derived restatement of its content, so it is not independent
  evidence: a name that resembles the question must not carry a body that does not, and a body
  that matches keeps its place when its summary is generic. Agreement of the two views lifts a
  unit; either alone weighs half.
- 'content': the unit's content ranks it whenever the list holds it; a unit the list holds only
  by its summary comes after every unit it holds content of.
- 'auto' (the default): 'content' in the dense list, 'max' in every other list and for code
  whose summary is its signatures alone (`OUTLINE`). A dense encoder reads a passage or a
  documented function whole, so a summary's vector is a shorter, noisier copy of the meaning its
  content's vector already has: short texts score high on a shared topic word. In dense search
  the content alone ranked cosqa-dev's documented functions as well as brute force over the raw
  functions, where letting the summary stand in ('max') lost R@5 0.03. An undocumented
  function's summary is its name and signature: the only words it has, which a body of code
  dilutes (on docstring-less library code 'content' lost MRR 0.02-0.03). A lexical list's match
  on a summary is a match of the words that name the thing, as a title field is in BM25F, so
  lexical and graph lists keep 'max' (docs/experiments/2026-11-28-content-evidence.md).

The matched levels and chunk ids travel as evidence in `Hit.metadata` (`MATCHED_LEVELS`,
`MATCHED_IDS`): the response names the levels, and the graph's bridge links still find the leader
whose summary or proposition they start from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from rayweave.cluster.types import Hit, Level

DocumentView = Literal["off", "summary", "section"]
Evidence = Literal["max", "mean", "content", "auto"]
Rule = Literal["max", "mean", "content"]

VIEW_ID = "view_id"
"""Hit metadata a retriever sets when the hit's unit is another chunk (`view_of`)."""
MATCHED_LEVELS = "matched_levels"
MATCHED_IDS = "matched_ids"
OUTLINE = "outline"
"""Hit metadata of a summary that is only its code's signatures (`Chunk.outline`)."""
CONTENT_LISTS = frozenset({"dense"})
"""The lists whose 'auto' evidence is the content (see the module docstring)."""
LIST_RANK = "list_rank"
"""Where a unit's deciding chunk stood in its list (1-based): rank fusion reads it, so that
resolving a list never moves its later units up (two chunks of one document ahead of a unit would
otherwise lift it two places, and the other lists' votes with it)."""


def with_view(hit: Hit, view: tuple[str, str, bool]) -> Hit:
    """`hit` carrying its `view_of`, unless it is its own unit in every view with no summary."""
    if view == (hit.id, hit.id, False):
        return hit
    return hit.evolve(metadata={**hit.metadata, VIEW_ID: view})


def unit_of(hit: Hit, view: DocumentView) -> str:
    units = hit.metadata.get(VIEW_ID)
    if view == "off" or not units:
        return hit.id
    return str(units[0] if view == "summary" else units[1])


def _summarised(hit: Hit) -> bool:
    units = hit.metadata.get(VIEW_ID)
    return bool(units and units[2])


def resolve_list(hits: Sequence[Hit], view: DocumentView, evidence: Evidence) -> list[Hit]:
    """One list's hits as units, best first, each with the levels and chunks that matched.

    A unit stands at the rank its deciding chunk had in the list (`LIST_RANK`): its best chunk
    ('max'), or its content's best chunk ('content': a unit the list holds only by its summary
    comes after every unit it holds content of). 'mean' ranks by the averaged score. A hit that
    is its own unit, alone in the list, at the rank it had, is kept as it is (its level and id
    are its evidence): resolving costs a new hit only where something changed."""
    if view == "off" or not hits:
        return list(hits)
    groups: dict[str, list[tuple[int, Hit]]] = {}
    for rank, h in enumerate(hits, start=1):
        groups.setdefault(unit_of(h, view), []).append((rank, h))
    floor = min(h.score for h in hits) if evidence != "max" else 0.0
    units = []
    reordered = False  # whether a unit now stands at a rank that is not its first chunk's
    for position, (unit, members) in enumerate(groups.items(), start=1):
        rule = _rule(members, evidence)
        rank, hit = members[0]
        # Alone and its own unit: its rank already says what 'max' or its content would.
        as_found = rule == "max" or (rule == "content" and hit.level is not Level.DOCUMENT)
        if len(members) == 1 and hit.id == unit and as_found:
            moved = rank != position  # a merge above it: the rank it had goes with it
            units.append(hit.evolve(metadata={**hit.metadata, LIST_RANK: rank}) if moved else hit)
            continue
        resolved = _unit(unit, members, rule, floor, len(hits))
        reordered |= resolved.metadata.get(LIST_RANK, rank) != rank
        units.append(resolved)
    if evidence == "mean":
        units.sort(key=lambda h: -h.score)  # stable: ties keep the list's order
    elif reordered:  # a unit kept as it was stands where it stood
        ranked = [(int(h.metadata.get(LIST_RANK, i)), h) for i, h in enumerate(units, start=1)]
        units = [h for _, h in sorted(ranked, key=lambda pair: pair[0])]
    return units


def resolve_views(
    lists: Mapping[str, Sequence[Hit]], view: DocumentView, evidence: Evidence
) -> dict[str, list[Hit]]:
    """`resolve_list` over every list, so that fusion counts one vote per unit and list. 'auto'
    is 'content' for the units of the dense list whose summary restates their content, and
    'max' for everything else (see the module docstring)."""
    return {
        name: resolve_list(hits, view, _list_evidence(name, evidence))
        for name, hits in lists.items()
    }


def _list_evidence(name: str, evidence: Evidence) -> Evidence:
    if evidence != "auto":
        return evidence
    return "auto" if name in CONTENT_LISTS else "max"


def _rule(members: Sequence[tuple[int, Hit]], evidence: Evidence) -> Rule:
    """How one unit scores: by its best chunk unless it has a summary besides its content."""
    if evidence == "max" or not any(_summarised(h) for _, h in members):
        return "max"
    if evidence == "auto":
        outline = any(h.metadata.get(OUTLINE) for _, h in members if h.level is Level.DOCUMENT)
        return "max" if outline else "content"
    return evidence


def _unit(
    unit: str, members: Sequence[tuple[int, Hit]], rule: Rule, floor: float, listed: int
) -> Hit:
    rank, best = members[0]  # lists arrive best first
    levels = list(dict.fromkeys(m.level.value for _, m in members))
    ids = list(dict.fromkeys(m.id for _, m in members))
    score = best.score
    if rule != "max":
        content = [(r, m.score) for r, m in members if m.level is not Level.DOCUMENT]
        if rule == "mean":
            summary = [m.score for _, m in members if m.level is Level.DOCUMENT]
            best_content = max((sc for _, sc in content), default=floor)
            score = (max(summary, default=floor) + best_content) / 2
        elif content:
            rank, score = content[0]
        else:  # held by its summary alone: after every unit the list holds content of
            rank, score = listed + rank, floor
    metadata = {k: v for k, v in best.metadata.items() if k not in (VIEW_ID, OUTLINE)}
    metadata[MATCHED_LEVELS] = levels
    metadata[MATCHED_IDS] = ids
    if rule != "mean":
        metadata[LIST_RANK] = rank
    # A summary or a proposition that resolved to another chunk resolved to a section.
    level = best.level if best.id == unit else Level.SECTION
    return best.evolve(id=unit, score=score, level=level, metadata=metadata)


def merged_evidence(hits: Sequence[Hit]) -> dict[str, list[str]]:
    """The matched levels and ids of one unit's hits from several lists, in first-seen order."""
    levels: dict[str, None] = {}
    ids: dict[str, None] = {}
    for h in hits:
        levels.update(dict.fromkeys(h.metadata.get(MATCHED_LEVELS) or (h.level.value,)))
        ids.update(dict.fromkeys(h.metadata.get(MATCHED_IDS) or (h.id,)))
    return {MATCHED_LEVELS: list(levels), MATCHED_IDS: list(ids)}
