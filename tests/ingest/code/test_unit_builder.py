"""Units from spans: small neighbours packed, leading comments split off, symbols by regex."""

from __future__ import annotations

from rayweave.ingest.code import CodeUnit
from rayweave.ingest.code.spans import Item
from rayweave.ingest.code.unit_builder import Ctx, make_unit, pack, split_lead

from .conftest import MakeCtx

CODE = "import os\nA = 1\n\ndef f():\n    return os.sep\n\ndef g():\n    pass\n"


def _unit(ctx: Ctx, kind: str, start: int, end: int, name: str, tokens: int) -> CodeUnit:
    return make_unit(ctx, kind, start, end, name=name, path=(name,) if name else (), tokens=tokens)


def _staged(ctx: Ctx, tokens: list[int]) -> list[CodeUnit]:
    """The definitions and blocks of `CODE`, with made-up token counts."""
    f, g = CODE.index("def f"), CODE.index("def g")
    spans = [(0, 15, "block", ""), (f, g - 2, "function", "f"), (g, len(CODE) - 1, "function", "g")]
    return [_unit(ctx, k, a, b, n, t) for (a, b, k, n), t in zip(spans, tokens, strict=True)]


class TestPack:
    def test_neighbours_are_packed_while_under_min_tokens(self, make_ctx: MakeCtx) -> None:
        ctx = make_ctx(CODE, "python", max_tokens=100, min_tokens=25)
        block, f, g = _staged(ctx, [10, 10, 10])
        out = pack([(block, True), (f, True), (g, True)], ctx, (), "")
        # 10 + 10 is under 25: g joins; then the pack is full
        assert [(u.kind, u.start, u.end) for u in out] == [("module", block.start, g.end)]
        packed = out[0]
        assert packed.text == CODE[block.start : g.end]
        assert packed.tokens == 30
        assert [m.name for m in packed.members] == ["f", "g"]
        assert packed.name == ""  # two named units: the pack is named after neither

    def test_a_pack_never_goes_over_max_tokens(self, make_ctx: MakeCtx) -> None:
        ctx = make_ctx(CODE, "python", max_tokens=25, min_tokens=100)
        block, f, g = _staged(ctx, [10, 10, 10])
        out = pack([(block, True), (f, True), (g, True)], ctx, (), "")
        assert [u.kind for u in out] == ["module", "function"]
        assert out[0].name == "f"  # the only named unit in it names the pack
        assert out[0].path == ("f",)
        assert out[1] is g

    def test_units_not_packable_stay_alone_and_end_a_pack(self, make_ctx: MakeCtx) -> None:
        ctx = make_ctx(CODE, "python", max_tokens=100, min_tokens=100)
        block, f, g = _staged(ctx, [10, 10, 10])
        out = pack([(block, True), (f, False), (g, True)], ctx, ("M",), "ctx")
        assert out == [block, f, g]

    def test_min_tokens_zero_packs_nothing(self, make_ctx: MakeCtx) -> None:
        ctx = make_ctx(CODE, "python", max_tokens=100, min_tokens=0)
        staged = _staged(ctx, [1, 1, 1])
        assert pack([(u, True) for u in staged], ctx, (), "") == staged


class TestSplitLead:
    def test_only_a_comment_too_long_is_split_off(self, make_ctx: MakeCtx) -> None:
        code = "// " + "note " * 30 + "\nfn f() { g(); }"
        core = code.index("fn f")
        ctx = make_ctx(code, "move", max_tokens=20)
        split = split_lead(ctx, Item(0, len(code), "function", name="f"), core)
        assert split is not None
        lead, bare = split
        assert code[lead.start : lead.end] == code[:core].strip()
        assert (bare.start, bare.end, bare.kind, bare.name) == (core, len(code), "function", "f")
        assert bare.tokens <= 20 < lead.tokens

    def test_no_split_when_the_definition_alone_is_too_big(self, make_ctx: MakeCtx) -> None:
        code = "// note\nfn f() { " + "g(); " * 40 + "}"
        ctx = make_ctx(code, "move", max_tokens=20)
        item = Item(0, len(code), "function", name="f")
        assert split_lead(ctx, item, code.index("fn f")) is None
        assert split_lead(ctx, item, 0) is None  # nothing leads


def test_unit_symbols_without_a_parser_come_from_the_text(make_ctx: MakeCtx) -> None:
    code = "use std::signer;\nfun mint(s: &signer) { transfer(s); }"
    ctx = make_ctx(code, "move")
    unit = make_unit(ctx, "function", 0, len(code), name="mint", path=("coin", "mint"))
    assert unit.text == code
    assert unit.defined == ("coin.mint",)  # qualified by the path above the unit's own name
    assert unit.dependencies == ("std::signer",)
    assert "transfer" in unit.calls
    given = make_unit(ctx, "part", 0, len(code), name="mint", defined=[])
    assert given.defined == ()
