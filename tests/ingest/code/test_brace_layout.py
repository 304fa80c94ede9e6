"""Layout of code the brace scanner splits: containers whole or member by member, functions
whole unless alone too big."""

from __future__ import annotations

from rayweave.ingest.code import CodeUnit
from rayweave.ingest.code.brace_layout import brace_layout
from rayweave.ingest.code.brace_scanner import brace_items

from ..code_samples import check_tiling
from .conftest import MakeCtx

COIN = """module 0x1::coin {
    use std::signer;

    /// Mint new coins.
    public fun mint(s: &signer, v: u64) {
        transfer(s, v);
    }

    public fun burn(s: &signer) {
        destroy(s);
    }
}
"""


def _layout(make_ctx: MakeCtx, code: str, max_tokens: int) -> list[CodeUnit]:
    ctx = make_ctx(code, "move", max_tokens=max_tokens)
    return brace_layout(brace_items(code, 0, len(code)), ctx, (), "")


def test_a_container_that_fits_is_one_unit_listing_its_functions(make_ctx: MakeCtx) -> None:
    units = _layout(make_ctx, COIN, 200)
    assert [(u.kind, u.name, u.path) for u in units] == [("class", "coin", ("coin",))]
    coin = units[0]
    assert coin.text == COIN.strip()
    assert coin.signature == "module 0x1::coin"
    assert [(m.kind, m.name, m.path) for m in coin.members] == [
        ("function", "mint", ("coin", "mint")),
        ("function", "burn", ("coin", "burn")),
    ]
    assert coin.members[0].docstring == "Mint new coins."
    assert all(m.context == "module 0x1::coin" for m in coin.members)
    assert set(coin.calls) == {"transfer", "destroy"}
    assert coin.dependencies == ("std::signer",)


def test_a_container_over_the_limit_is_laid_out_member_by_member(make_ctx: MakeCtx) -> None:
    units = _layout(make_ctx, COIN, 30)
    check_tiling(COIN, units)
    functions = {u.name: u for u in units if u.kind == "function"}
    assert set(functions) == {"mint", "burn"}
    for name, unit in functions.items():
        assert unit.path == ("coin", name)
        assert unit.context == "module 0x1::coin"
        assert unit.text.startswith(f"public fun {name}(")
        assert unit.text.endswith("}")
    assert functions["mint"].docstring == "Mint new coins."
    assert functions["mint"].calls == ("transfer",)
    header = units[0]
    assert header.kind == "block"
    assert header.text == "module 0x1::coin {\n    use std::signer;"
    assert header.dependencies == ("std::signer",)
    assert all(u.tokens <= 30 for u in units)


def test_a_function_alone_over_the_limit_is_cut_into_parts(make_ctx: MakeCtx) -> None:
    body = "".join(f"        let x{i} = helper(a, b + {i});\n" for i in range(20))
    code = f"module 0x1::big {{\n    public fun run(a: u64, b: u64) {{\n{body}    }}\n}}\n"
    units = _layout(make_ctx, code, 40)
    check_tiling(code, units)
    parts = [u for u in units if u.kind == "part"]
    assert len(parts) >= 3
    assert all(u.name == "run" and u.path == ("big", "run") for u in parts)
    assert all(u.context == u.signature == "public fun run(a: u64, b: u64)" for u in parts)
    assert all(u.tokens <= 40 for u in parts)
    assert "helper" in {c for u in parts for c in u.calls}
