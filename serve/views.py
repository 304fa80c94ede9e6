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
- 'content': the unit's content ranks it whenever the list holds it, its summary only when the
  list holds nothing else of it.

The matched levels and chunk ids travel as evidence in `Hit.metadata` (`MATCHED_LEVELS`,
`MATCHED_IDS`): the response names the levels, and the graph's bridge links still find the leader
whose summary or proposition they start from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields, replace
from typing import Any, Literal

from rayweave.cluster.types import Hit, Level

DocumentView = Literal["off", "summary", "section"]
Evidence = Literal["max", "mean", "content"]

VIEW_ID = "view_id"
"""Hit metadata a retriever sets when the hit's unit is another chunk (`view_of`)."""
MATCHED_LEVELS = "matched_levels"
MATCHED_IDS = "matched_ids"
LIST_RANK = "list_rank"
"""Where a unit's best chunk stood in its list (1-based): rank fusion reads it, so that resolving
a list never moves its later units up (two chunks of one document ahead of a unit would otherwise
lift it two places, and the other lists' votes with it)."""


def with_view(hit: Hit, view: tuple[str, str, bool]) -> Hit:
    """`hit` carrying its `view_of`, unless it is its own unit in every view with no summary."""
    if view == (hit.id, hit.id, False):
        return hit
    return replace(hit, metadata={**hit.metadata, VIEW_ID: view})


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

    A hit that is its own unit, alone in the list, at the rank it had, is kept as it is (its
    level and id are its evidence): resolving costs a new hit only where something changed."""
    if view == "off" or not hits:
        return list(hits)
    groups: dict[str, list[Hit]] = {}
    first: dict[str, int] = {}
    for rank, h in enumerate(hits, start=1):
        unit = unit_of(h, view)
        members = groups.get(unit)
        if members is None:
            groups[unit] = [h]
            first[unit] = rank
        else:
            members.append(h)
    floor = min(h.score for h in hits) if evidence != "max" else 0.0
    units = []
    for position, (unit, members) in enumerate(groups.items(), start=1):
        hit = members[0]
        if len(members) == 1 and hit.id == unit and evidence == "max":
            rank = first[unit]
            moved = rank != position  # a merge above it: the rank it had goes with it
            units.append(
                _rebuilt(hit, metadata={**hit.metadata, LIST_RANK: rank}) if moved else hit
            )
        else:
            units.append(_unit(unit, members, evidence, floor, first[unit]))
    if evidence != "max":
        units.sort(key=lambda h: -h.score)  # stable: ties keep the list's order
    return units


def resolve_views(
    lists: Mapping[str, Sequence[Hit]], view: DocumentView, evidence: Evidence
) -> dict[str, list[Hit]]:
    """`resolve_list` over every list, so that fusion counts one vote per unit and list."""
    return {name: resolve_list(hits, view, evidence) for name, hits in lists.items()}


def _unit(unit: str, members: list[Hit], evidence: Evidence, floor: float, rank: int) -> Hit:
    best = members[0]  # lists arrive best first
    levels = list(dict.fromkeys(m.level.value for m in members))
    ids = list(dict.fromkeys(m.id for m in members))
    score = best.score
    if evidence != "max" and any(_summarised(m) for m in members):
        summary = [m.score for m in members if m.level is Level.DOCUMENT]
        content = [m.score for m in members if m.level is not Level.DOCUMENT]
        if evidence == "mean":
            score = (max(summary, default=floor) + max(content, default=floor)) / 2
        elif content:
            score = max(content)
    metadata = {k: v for k, v in best.metadata.items() if k != VIEW_ID}
    metadata[MATCHED_LEVELS] = levels
    metadata[MATCHED_IDS] = ids
    if evidence == "max":
        metadata[LIST_RANK] = rank
    # A summary or a proposition that resolved to another chunk resolved to a section.
    level = best.level if best.id == unit else Level.SECTION
    return _rebuilt(best, id=unit, score=score, level=level, metadata=metadata)


_HIT_FIELDS = tuple(f.name for f in fields(Hit))


def _rebuilt(hit: Hit, **changes: Any) -> Hit:
    """`dataclasses.replace` without re-running validation: the values here are already typed
    (a request resolves hundreds of hits; `replace` was most of that time)."""
    new = object.__new__(Hit)
    setter = object.__setattr__
    for name in _HIT_FIELDS:
        setter(new, name, changes[name] if name in changes else getattr(hit, name))
    return new


def merged_evidence(hits: Sequence[Hit]) -> dict[str, list[str]]:
    """The matched levels and ids of one unit's hits from several lists, in first-seen order."""
    levels: dict[str, None] = {}
    ids: dict[str, None] = {}
    for h in hits:
        levels.update(dict.fromkeys(h.metadata.get(MATCHED_LEVELS) or (h.level.value,)))
        ids.update(dict.fromkeys(h.metadata.get(MATCHED_IDS) or (h.id,)))
    return {MATCHED_LEVELS: list(levels), MATCHED_IDS: list(ids)}
