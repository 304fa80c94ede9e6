from __future__ import annotations

import itertools
from typing import Any

import pytest

from rayweave.ingest.chunking.pieces import Piece, _gaps, split_oversize, structure_pieces
from rayweave.ingest.structure import parse_markdown
from rayweave.models.tokens import TokenizerCounter

from .conftest import ESTIMATE, bounds, checked, make


class TestPieces:
    def test_oversize_sentence_and_code_are_cut(self, minilm: TokenizerCounter) -> None:
        s = bounds((30, 60), (10, 20), section_overlap_tokens=0)
        run_on = "word, " * 150 + "end."
        code = "```\n" + "\n".join(f"line_{i} = {i}" for i in range(80)) + "\n```"
        doc = make(f"# T\n\n{run_on}\n\n{code}\n")
        cd = checked(doc, minilm, s)
        assert len(cd.sections) > 4


RUN_ON = (
    "Alpha beta gamma, delta epsilon zeta, eta theta iota, kappa lambda mu, "
    "nu xi omicron, pi rho sigma."
)


def _piece(text: str, kind: str = "sentence", **kw: Any) -> Piece:
    p = Piece(0, len(text), kind, 0, **kw)
    p.tokens = ESTIMATE.count_tokens([text])[0]
    return p


def _assert_tiles(text: str, pieces: list[Piece]) -> None:
    """Cuts lose nothing but the whitespace between the parts, in reading order."""
    assert pieces[0].start == 0
    assert pieces[-1].end == len(text)
    for a, b in itertools.pairwise(pieces):
        assert a.end <= b.start
        assert not text[a.end : b.start].strip()


class TestStructurePieces:
    def test_one_piece_per_sentence_heading_code_block_and_table(self) -> None:
        text = (
            "# Guide\n\nFerry runs tasks. It retries them.\n\n```python\nx = 1\n```\n\n"
            "| a | b |\n|---|---|\n| 1 | 2 |\n"
        )
        pieces = structure_pieces(parse_markdown(text))
        assert [(p.kind, text[p.start : p.end]) for p in pieces] == [
            ("heading", "# Guide"),
            ("sentence", "Ferry runs tasks."),
            ("sentence", "It retries them."),
            ("code", "```python\nx = 1\n```"),
            ("table", "| a | b |\n|---|---|\n| 1 | 2 |"),
        ]
        heading, first, second, code, table = pieces
        assert (heading.level, heading.heading) == (1, "Guide")
        assert code.lang == "python"
        assert [p.dangling for p in pieces] == [False, False, True, False, False]
        assert first.block == second.block
        assert len({heading.block, first.block, code.block, table.block}) == 4
        assert all(p.tokens == 0 for p in pieces)  # counted later, in one batch


class TestSplitOversize:
    def test_fitting_pieces_are_returned_as_they_are(self) -> None:
        pieces = [_piece("Short sentence.")]
        assert split_oversize("Short sentence.", pieces, ESTIMATE, 10) == pieces

    def test_sentence_is_cut_at_clauses(self) -> None:
        out = split_oversize(RUN_ON, [_piece(RUN_ON, dangling=True)], ESTIMATE, 10)
        assert len(out) > 1
        _assert_tiles(RUN_ON, out)
        for p in out:
            assert p.tokens == ESTIMATE.count_tokens([RUN_ON[p.start : p.end]])[0] <= 10
            assert p.kind == "sentence"
        assert all(RUN_ON[p.end - 1] == "," for p in out[:-1])
        assert [p.dangling for p in out] == [True] + [False] * (len(out) - 1)

    def test_sentence_without_clauses_is_cut_at_words(self) -> None:
        text = " ".join(f"word{i}" for i in range(40))
        out = split_oversize(text, [_piece(text)], ESTIMATE, 12)
        assert len(out) > 1
        _assert_tiles(text, out)
        assert all(p.tokens <= 12 for p in out)

    def test_code_is_cut_on_whole_lines(self) -> None:
        code = "\n".join(f"value_{i} = compute({i})" for i in range(20))
        out = split_oversize(code, [_piece(code, "code", lang="python")], ESTIMATE, 25)
        assert len(out) > 1
        assert "\n".join(code[p.start : p.end] for p in out) == code
        assert all(p.kind == "code" and p.lang == "python" for p in out)
        assert all(p.tokens <= 25 for p in out)

    def test_two_lines_over_the_limit_are_cut(self) -> None:
        code = "value_18 = compute(18)\nvalue_19 = compute(19)"
        out = split_oversize(code, [_piece(code, "code")], ESTIMATE, 20)
        assert [code[p.start : p.end] for p in out] == code.split("\n")

    def test_one_word_over_the_limit_stays_whole(self) -> None:
        word = "Supercalifragilisticexpialidocious"
        (out,) = split_oversize(word, [_piece(word)], ESTIMATE, 2)
        assert (out.start, out.end) == (0, len(word))
        assert out.tokens > 2


@pytest.mark.parametrize(
    ("cuts", "length", "gaps"),
    [([], 7, [7]), ([2, 5], 10, [2, 3, 5]), ([4], 4, [4, 0])],
)
def test_gaps_between_cuts(cuts: list[int], length: int, gaps: list[int]) -> None:
    assert _gaps(cuts, length) == gaps
