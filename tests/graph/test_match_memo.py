"""The memo of the gazetteer pass gives exactly what matching every chunk gives, after any
sequence of corpus changes, while matching anew only the chunks a change can touch."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pytest

from rayweave.cluster.settings import GraphSettings
from rayweave.cluster.types import Chunk, Level
from rayweave.graph import match_memo
from rayweave.graph.corpus_phases import Lexicon, lexicon, tally_names
from rayweave.graph.match_memo import (
    MatchMemo,
    MemoizedMatches,
    load_memo,
    memo_matches,
    save_memo,
)
from rayweave.graph.share import Share

from .generated_corpus import generate

SETTINGS = GraphSettings()


def lex_of(chunks: list[Chunk], settings: GraphSettings = SETTINGS) -> Lexicon:
    return lexicon(tally_names(Share(chunks=chunks)), settings)


def plain(i: int, title: str, text: str) -> Chunk:
    """A page of its own words, which no generated name starts with."""
    return Chunk(
        id=f"p{i}", doc_id=f"p{i}", level=Level.SECTION, text=text, title=title, position=0
    )


def pages() -> list[Chunk]:
    return [
        plain(0, "Quartz Clock", "A quartz clock keeps time with a crystal."),
        plain(1, "Pendulum Clock", "Pendulum clocks were built by Huygens in Holland."),
        plain(2, "Sundial", "A sundial needs the sun, unlike a Quartz Clock."),
    ]


def test_a_first_pass_matches_every_chunk_like_the_gazetteer() -> None:
    rng = random.Random(3)
    chunks = [c for i in range(12) for c in generate(rng, f"d{i}", 0).chunks] + pages()
    lex = lex_of(chunks)
    found, memo, rematched = memo_matches(lex.gazetteer(), chunks, None)
    assert found == lex.found(chunks)
    assert len(rematched) == len(chunks)
    assert set(memo.rows) == {c.id for c in chunks}


def test_random_changes_match_like_a_fresh_pass_and_reuse_the_rest() -> None:
    for seed in (7, 8, 9):
        rng = random.Random(seed)
        docs = {f"d{i}": list(generate(rng, f"d{i}", 0).chunks) for i in range(10)}
        docs["pages"] = pages()
        memo: MatchMemo | None = None
        reused_steps = 0
        for step in range(12):
            op = rng.choice(["add", "edit", "delete"]) if len(docs) > 4 else "add"
            gen = [k for k in docs if k != "pages"]
            if op == "add":
                docs[f"n{step}"] = list(generate(rng, f"n{step}", step).chunks)
            elif op == "delete":
                del docs[rng.choice(gen)]
            else:
                key = rng.choice(gen)
                first = docs[key][0]
                text = f"{first.text} Widget Toolkit replaced Starlette."
                docs[key][0] = replace(first, text=text)
            chunks = [c for cs in docs.values() for c in cs]
            lex = lex_of(chunks)
            found, memo, rematched = memo_matches(lex.gazetteer(), chunks, memo)
            assert found == lex.found(chunks), f"seed {seed}, step {step}, {op}"
            reused_steps += len(rematched) < len(chunks)
        # The pages name nothing the changes touch: their matches are kept, not recomputed.
        assert reused_steps > 0


def test_a_new_name_rematches_only_the_chunks_it_can_start_in() -> None:
    chunks = pages()
    memo = memo_matches(lex_of(chunks).gazetteer(), chunks, None)[1]
    # A new page titled "Huygens": its name starts in p1 only.
    added = [*chunks, plain(9, "Huygens", "Huygens studied optics.")]
    lex = lex_of(added)
    assert "huygens" in lex.gazetteer().forms
    found, _, rematched = memo_matches(lex.gazetteer(), added, memo)
    assert found == lex.found(added)
    assert any(found["p1"]), found
    assert len(rematched) == 2  # the new page and p1


def test_an_edited_text_is_matched_anew() -> None:
    chunks = pages()
    lex = lex_of(chunks)
    memo = memo_matches(lex.gazetteer(), chunks, None)[1]
    edited = [replace(chunks[0], text="Unlike a Sundial, it keeps time."), *chunks[1:]]
    found, _, rematched = memo_matches(lex.gazetteer(), edited, memo)
    assert len(rematched) == 1
    assert found == lex.found(edited)
    assert found["p0"] != lex.found(chunks)["p0"]


def test_only_a_text_not_handed_back_as_the_same_string_is_digested(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    chunks = pages()
    lex = lex_of(chunks)
    memo = memo_matches(lex.gazetteer(), chunks, None)[1]
    digested: list[str] = []
    digest = match_memo._digest
    monkeypatch.setattr(match_memo, "_digest", lambda t: digested.append(t) or digest(t))
    # A held input hands unchanged chunks back as the very objects; a store read, as copies.
    copied = replace(chunks[1], text="".join(chunks[1].text))
    assert copied.text is not chunks[1].text
    again = [chunks[0], copied, replace(chunks[2], text="A sundial needs no Quartz Clock.")]
    found, memo, rematched = memo_matches(lex.gazetteer(), again, memo)
    assert digested == [copied.text, again[2].text]
    assert rematched == {"p2"}
    assert found == lex.found(again)
    digested.clear()
    assert memo_matches(lex.gazetteer(), again, memo)[2] == set()
    assert digested == []  # the copy's string is now the one held


def test_another_window_length_matches_everything_anew() -> None:
    chunks = pages()
    memo = memo_matches(lex_of(chunks).gazetteer(), chunks, None)[1]
    longer = lex_of(chunks, GraphSettings(gazetteer_max_ngram=SETTINGS.gazetteer_max_ngram + 1))
    found, _, rematched = memo_matches(longer.gazetteer(), chunks, memo)
    assert len(rematched) == len(chunks)
    assert found == longer.found(chunks)


def test_the_memo_survives_a_file_and_a_torn_file_is_ignored(tmp_path: Path) -> None:
    chunks = pages()
    lex = lex_of(chunks)
    find = MemoizedMatches(None)
    first = find(lex, chunks)
    assert find.memo is not None
    assert find.rematched == len(chunks)
    path = tmp_path / "layers" / "ns.matches.pickle"
    save_memo(path, find.memo)
    again = MemoizedMatches(load_memo(path))
    assert again(lex, chunks) == first
    assert again.rematched == 0
    path.write_bytes(path.read_bytes()[:40])
    assert load_memo(path) is None
    assert load_memo(tmp_path / "missing.pickle") is None


def test_a_new_name_is_found_inside_a_code_token() -> None:
    """`ray_serve handler` in text is the name `ray serve handler`: its window starts at the
    token `ray_serve`, whose second key (`ray`) is the name's first word."""
    chunks = [*pages(), plain(3, "Deploying", "Call ray_serve handler twice.")]
    memo = memo_matches(lex_of(chunks).gazetteer(), chunks, None)[1]
    added = [*chunks, plain(9, "Ray Serve Handler", "Ray Serve Handler serves requests.")]
    lex = lex_of(added)
    found, _, rematched = memo_matches(lex.gazetteer(), added, memo)
    assert found == lex.found(added)
    assert found["p3"]
    assert len(rematched) == 2
