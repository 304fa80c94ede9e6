"""`split_code`: units on syntax boundaries, functions kept whole, symbols per unit."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rayweave.ingest.code import CodeUnit, extract_symbols, split_code
from rayweave.models.tokens import TokenizerCounter

from ..code_samples import COUNT, LANGUAGES, check_tiling, generate


def check_functions_whole(
    code: str, units: list[CodeUnit], functions: dict[str, tuple[int, int]], limit: int
) -> None:
    """A function sits inside one unit, unless it alone is over the limit: then only its parts
    cover it."""
    for name, (fs, fe) in functions.items():
        holders = [u for u in units if u.start <= fs and fe <= u.end]
        if holders:
            continue
        tokens = COUNT([code[fs:fe]])[0]
        assert tokens > limit, f"{name} ({tokens} tokens <= {limit}) was cut"
        overlapping = [u for u in units if u.start < fe and fs < u.end]
        assert all(u.kind == "part" and u.name == name for u in overlapping), [
            (u.kind, u.name) for u in overlapping
        ]
        assert len(overlapping) >= 2
        assert any(name in u.signature for u in overlapping)
        for u in overlapping:
            assert u.tokens <= limit or "\n" not in u.text.strip()


class TestSplitCode:
    @pytest.mark.parametrize("language", LANGUAGES)
    def test_every_language_keeps_functions_whole(self, language: str) -> None:
        gen = generate(language, [2, 30, 1, 3, 1])
        units = split_code(gen.code, language, count_tokens=COUNT, max_tokens=120, min_tokens=60)
        check_tiling(gen.code, units)
        check_functions_whole(gen.code, units, gen.functions, 120)
        # the big one (30 statements) was split, with its signature as context
        big = [u for u in units if u.kind == "part"]
        assert big
        assert all(u.context for u in big)

    @pytest.mark.parametrize("language", LANGUAGES)
    def test_docstrings_and_signatures_stay_with_the_function(self, language: str) -> None:
        gen = generate(language, [2, 3])
        units = split_code(gen.code, language, count_tokens=COUNT, max_tokens=200, min_tokens=0)
        found: dict[str, CodeUnit] = {}
        for u in units:
            for m in (u, *u.members):
                if m.name in gen.functions:
                    found.setdefault(m.name, m)
        assert set(found) == set(gen.functions), [(u.kind, u.name) for u in units]
        for name, unit in found.items():
            assert name in unit.signature
            assert gen.docs[name] in unit.docstring, (language, unit.docstring)
            assert gen.docs[name] in unit.text

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        language=st.sampled_from(LANGUAGES),
        sizes=st.lists(st.integers(min_value=0, max_value=25), min_size=1, max_size=8),
        limit=st.integers(min_value=40, max_value=300),
    )
    def test_property_never_cut_in_half(self, language: str, sizes: list[int], limit: int) -> None:
        gen = generate(language, sizes)
        units = split_code(
            gen.code, language, count_tokens=COUNT, max_tokens=limit, min_tokens=limit // 2
        )
        check_tiling(gen.code, units)
        check_functions_whole(gen.code, units, gen.functions, limit)
        for u in units:
            assert (
                u.tokens <= limit
                or "\n" not in u.text
                or (u.kind == "part" and u.tokens <= limit * 2)
            )

    def test_with_real_tokenizer(self, minilm: TokenizerCounter) -> None:
        gen = generate("python", [1, 40, 2, 2, 2])
        units = split_code(
            gen.code, "python", count_tokens=minilm.count_tokens, max_tokens=200, min_tokens=100
        )
        check_tiling(gen.code, units)
        for u in units:
            assert u.tokens == minilm.count_tokens([u.text])[0]
            assert u.tokens <= 200

    def test_class_kept_whole_lists_methods_and_large_class_is_split(self) -> None:
        code = (
            "class Store:\n"
            '    """Keeps items."""\n'
            "    limit = 3\n\n"
            "    def put(self, item):\n        self.items.append(item)\n\n"
            "    def get(self):\n        return self.items.pop()\n"
        )
        whole = split_code(code, "python", count_tokens=COUNT, max_tokens=200)
        assert [(u.kind, u.name) for u in whole] == [("class", "Store")]
        assert [m.name for m in whole[0].members] == ["put", "get"]
        assert whole[0].defined == ("Store", "Store.put", "Store.get")
        split = split_code(code, "python", count_tokens=COUNT, max_tokens=20)
        check_tiling(code, split)
        assert split[0].text.startswith("class Store:")
        assert "Store" in split[0].defined
        assert all(u.path[0] == "Store" for u in split)
        assert all(u.context.startswith("class Store") for u in split[1:])

    def test_unknown_language_and_garbage_never_crash(self) -> None:
        yaml = "a: 1\nb:\n  - x\n  - y\n\nc: 3\n" * 20
        units = split_code(yaml, "yaml", count_tokens=COUNT, max_tokens=30)
        check_tiling(yaml, units)
        assert all(u.kind == "block" for u in units)
        for lang in ("python", "rust", "move", "cobol", None):
            garbage = "def (((( {{{ ]] fn ;;; 'unterminated \"\n\x7f" * 30
            check_tiling(garbage, split_code(garbage, lang, count_tokens=COUNT, max_tokens=25))
        assert split_code("   \n ", "python", count_tokens=COUNT, max_tokens=25) == []

    def test_non_ascii_offsets(self) -> None:
        code = (
            'def naïve(ß):\n    """Größe berechnen – schnell."""\n    return ß * 2\n\n\n'
            'def other():\n    return "日本"\n'
        )
        units = split_code(code, "python", count_tokens=COUNT, max_tokens=12)
        check_tiling(code, units)
        assert any(u.name == "naïve" for u in units)


CODE_FILES = Path(__file__).parent / "code_files"


@dataclass(frozen=True)
class RealFile:
    """What a hand-written ~40-line file must yield: unit names, DEFINES, calls, USES of imports."""

    path: str
    language: str
    names: set[str]
    defined: set[str]
    calls: set[str]
    dependencies: set[str]


REAL_FILES = [
    RealFile(
        "ring.c",
        "c",
        {"next_index", "ring_new", "ring_push", "ring_free"},
        {"record_t", "ring", "ring_new", "ring_push", "ring_free"},
        {"malloc", "calloc", "strncpy", "next_index", "free"},
        {"stdlib.h", "ring.h"},
    ),
    RealFile(  # everything inside an include guard
        "ring.h", "c", {"ring_empty"}, {"ring_empty"}, set(), {"stddef.h"}
    ),
    RealFile(
        "cache.cpp",
        "cpp",
        {"LruCache", "get", "put", "evict_if_full", "Resolver::lookup"},
        {
            "resolver",
            "resolver.LruCache",
            "resolver.LruCache.get",
            "resolver.LruCache.put",
            "resolver.Resolver.lookup",
        },
        {"order_.splice", "evict_if_full", "std::move", "query_upstream", "cache_.put"},
        {"resolver/cache.hpp", "unordered_map"},
    ),
    RealFile(
        "Inventory.cs",
        "csharp",
        {"IInventory", "Inventory", "Available", "Reserve", "Reservation"},
        {
            "Shop.Services.IInventory",
            "Shop.Services.Inventory",
            "Shop.Services.Inventory.Reserve",
            "Shop.Services.Reservation",
        },
        {"Available", "OutOfStockException", "Console.WriteLine", "Reservation", "Dictionary"},
        {"System.Collections.Generic", "Shop.Models"},
    ),
    RealFile(
        "Scheduler.kt",
        "kotlin",
        {"Scheduler", "run", "backoff", "Defaults", "JobStore", "scheduleAll"},
        {"Scheduler", "Scheduler.run", "Scheduler.backoff", "JobStore.markDone", "scheduleAll"},
        {"store.markDone", "delay", "backoff", "Duration.ofMillis", "RetriesExhausted"},
        {"kotlinx.coroutines.delay", "java.time.Duration", "com.example.jobs.model.Job"},
    ),
    RealFile(
        "Downloader.swift",
        "swift",
        {"Downloader", "init", "fetch", "validate", "Progress"},
        {"DownloadError", "Cache.value", "Downloader.fetch", "Downloader.init", "Progress"},
        {"cache.value", "session.data", "validate", "DownloadError.badStatus"},
        {"Foundation", "Combine"},
    ),
    RealFile(
        "Ledger.scala",
        "scala",
        {"Ledger", "MemoryLedger", "post", "balance", "Audit"},
        {"Ledger.post", "MemoryLedger", "MemoryLedger.post", "Audit.log", "Snapshot"},
        {"Audit.log", "Entry", "entries.foldLeft", "println"},
        {"bank.model", "scala.collection.mutable", "java.time.Instant"},
    ),
    RealFile(
        "UserController.php",
        "php",
        {"UserController", "__construct", "store", "show", "normalize_email"},
        {"UserController", "UserController.store", "UserController.show", "normalize_email"},
        {"User.create", "mailer.sendWelcome", "request.validate", "strtolower"},
        {"App\\Models\\User", "App\\Services\\Mailer", "Illuminate\\Http\\Request"},
    ),
]


class TestRealFiles:
    """Realistic files in each language the brace scanner used to handle, now parsed."""

    @pytest.mark.parametrize("case", REAL_FILES, ids=lambda c: c.path)
    def test_units_symbols_and_uses(self, case: RealFile) -> None:
        code = (CODE_FILES / case.path).read_text()
        units = split_code(code, case.language, count_tokens=COUNT, max_tokens=200, min_tokens=60)
        check_tiling(code, units)
        everything = [m for u in units for m in (u, *u.members)]
        assert case.names <= {u.name for u in everything}, [(u.kind, u.name) for u in units]
        assert case.defined <= {d for u in units for d in u.defined}
        assert case.calls <= {c for u in units for c in u.calls}
        assert case.dependencies <= {d for u in units for d in u.dependencies}
        # a function unit carries its own calls and the signature it was cut from
        for u in everything:
            if u.kind == "function":
                assert u.name.split("::")[-1] in u.signature
        # the whole-file view agrees on what is defined
        sym = extract_symbols(code, case.language)
        assert case.defined <= set(sym.defined_names)

    def test_uses_follow_the_unit_that_calls(self) -> None:
        code = (CODE_FILES / "Scheduler.kt").read_text()
        units = split_code(code, "kotlin", count_tokens=COUNT, max_tokens=120, min_tokens=0)
        run = next(u for u in units if u.name == "run" and u.kind == "function")
        assert {"store.markDone", "delay", "backoff"} <= set(run.calls)
        assert "kotlinx.coroutines.delay" in run.dependencies  # `delay` is imported
        assert "java.time.Duration" not in run.dependencies  # only `backoff` uses Duration
        assert run.docstring == "Run one job, retrying failures."
        php = (CODE_FILES / "UserController.php").read_text()
        units = split_code(php, "php", count_tokens=COUNT, max_tokens=120, min_tokens=0)
        store = next(u for m in units for u in (m, *m.members) if u.name == "store")
        assert store.dependencies == ("Illuminate\\Http\\Request", "App\\Models\\User")
        assert store.docstring == "Create an account and send the welcome mail."


class TestUnitSymbols:
    def test_unit_dependencies_are_the_imports_it_uses(self) -> None:
        code = "import json\nimport os\n\ndef load(p):\n    return json.loads(open(p).read())\n"
        units = split_code(code, "python", count_tokens=COUNT, max_tokens=40, min_tokens=0)
        load = next(u for u in units if u.name == "load")
        assert load.kind == "function"
        assert load.dependencies == ("json",)
        parts = split_code(code, "python", count_tokens=COUNT, max_tokens=10, min_tokens=0)
        assert ("json",) in [u.dependencies for u in parts if u.name == "load"]
