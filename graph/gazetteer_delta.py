"""The gazetteer of the last corpus pass, patched so that the next one remakes only the forms of
the names that changed.

A gazetteer maps every matchable form of a name (the name, its singular, its aliases) to the
ids the names of that form resolve to (`EntityResolver.gazetteer`). Building it walks every
name, and so do its first words and the match memo's comparison of every form with the last
pass's: 0.24 s of a one-document upkeep at 10k documents. A name's forms change only with its
counts (its aliases), and its ids only with its canonical name. So a pass that holds the last
one's gazetteer, with the names each form comes from, takes the names whose counts changed or
whose canonical name moved (`EntityResolver.moved_since`) and remakes only their forms; those
whose ids changed are what the match memo compares (`Gazetteer.since`). The forms that count
only when capitalised come from the entity rows, and only the rows remade change them.

A remade form lists its ids in name order, where a fresh build lists them in the order the
names were collected: the same ids, which is all that matching reads.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from rayweave.graph.entities import EntityResolver, NameCandidate
from rayweave.graph.mentions import Gazetteer, cased_aliases, gazetteer
from rayweave.graph.names import first_keys, singular
from rayweave.graph.schema import EntityRow
from rayweave.graph.tallies import take_each


@dataclass(slots=True)
class FormIndex:
    """A gazetteer's forms and where each comes from, for the next pass to patch. `forms` is
    the dict the gazetteer holds, never changed once made (a match memo keeps it); the rest is
    changed in place, so an index is patched once."""

    forms: dict[str, list[str]]
    names_of: dict[str, set[str]]  # form -> the names it is a form of
    forms_of: dict[str, tuple[str, ...]]  # name -> its forms
    first: Counter[str]  # the forms' first-word keys (`names.first_words`), counted
    rows: Mapping[str, EntityRow]  # the entity rows by group (`RowMemo.rows`)
    cased: Counter[str]  # the forms only capitalised text matches, by the rows giving them


def name_forms(norm: str, cand: NameCandidate) -> tuple[str, ...]:
    """The forms a name is matched by (as `EntityResolver.gazetteer` takes them)."""
    return tuple({norm, singular(norm), *cand.aliases})


def index_gazetteer(
    resolver: EntityResolver, groups: Mapping[str, EntityRow], max_ngram: int
) -> tuple[Gazetteer, FormIndex | None]:
    """The gazetteer made afresh from the resolver and its rows by group, and its index (None
    when the resolver knows stored names, whose forms come from no name of its own)."""
    forms = resolver.gazetteer()
    made = gazetteer(resolver, groups.values(), max_ngram, forms=forms)
    if resolver.known:
        return made, None
    names_of: dict[str, set[str]] = {}
    forms_of: dict[str, tuple[str, ...]] = {}
    for norm, cand in resolver.candidates.items():
        own = forms_of[norm] = name_forms(norm, cand)
        for form in own:
            names_of.setdefault(form, set()).add(norm)
    first = Counter(key for form in forms for key in set(first_keys(form)))
    cased = Counter(a for row in groups.values() for a in cased_aliases(row))
    index = FormIndex(
        forms=forms, names_of=names_of, forms_of=forms_of, first=first, rows=groups, cased=cased
    )
    return made, index


def patched_gazetteer(
    index: FormIndex,
    resolver: EntityResolver,
    groups: Mapping[str, EntityRow],
    max_ngram: int,
    moved: AbstractSet[str],
) -> Gazetteer:
    """The gazetteer of `resolver` and its rows by group from `index`, the last pass's,
    remaking the forms of the names in `moved` and the cased forms of the rows remade (and
    patching the index to it). Equal, form for form, to a fresh build's ids as sets."""
    _patch_cased(index, groups)
    cands = resolver.candidates
    base = index.forms
    forms = dict(base)  # the last gazetteer's stays as it was
    remade: set[str] = set()
    for norm in moved:
        was = index.forms_of.pop(norm, ())
        cand = cands.get(norm)
        now = () if cand is None else name_forms(norm, cand)
        for form in was:
            names = index.names_of[form]
            names.discard(norm)
            if not names:
                del index.names_of[form]
        for form in now:
            index.names_of.setdefault(form, set()).add(norm)
        if now:
            index.forms_of[norm] = now
        remade.update(was)
        remade.update(now)
    changed: set[str] = set()
    for form in remade:
        old = forms.get(form)
        of = index.names_of.get(form)
        if of is None:
            if old is not None:
                del forms[form]
                take_each(index.first, set(first_keys(form)))
                changed.add(form)
            continue
        ids: list[str] = []
        for norm in sorted(of):
            ids.extend(i for i in resolver.resolve(norm) if i not in ids)
        if old is None:
            index.first.update(set(first_keys(form)))
        elif set(old) == set(ids):
            continue
        forms[form] = ids
        changed.add(form)
    index.forms = forms
    return Gazetteer(
        forms=forms,
        cased=frozenset(index.cased),
        max_ngram=max_ngram,
        starts=frozenset(index.first),
        since=(base, frozenset(changed)),
    )


def _patch_cased(index: FormIndex, groups: Mapping[str, EntityRow]) -> None:
    """Count the cased forms of the rows not carried over as they are (`rows_since` hands the
    kept ones on unchanged)."""
    then, cased = index.rows, index.cased
    for group, row in groups.items():
        was = then.get(group)
        if was is not row:
            if was is not None:
                take_each(cased, cased_aliases(was))
            cased.update(cased_aliases(row))
    for group, was in then.items():
        if group not in groups:
            take_each(cased, cased_aliases(was))
    index.rows = groups
