from __future__ import annotations

import pytest

from rayweave.cluster.types import ContentType
from rayweave.ingest.content_types import Detected, from_extension, image_format, sniff_text


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("a.md", Detected(ContentType.MARKDOWN)),
        ("a.RST", Detected(ContentType.RST)),
        ("a.htm", Detected(ContentType.HTML)),
        ("a.ipynb", Detected(ContentType.NOTEBOOK)),
        ("a.tsx", Detected(ContentType.CODE, "tsx")),
        ("a.move", Detected(ContentType.CODE, "move")),
        ("a.sol", Detected(ContentType.CODE, "solidity")),
        ("a.jpeg", Detected(ContentType.IMAGE, "jpeg")),
        ("README", Detected(ContentType.TEXT)),
        ("a.lock", None),
        ("Makefile", None),
    ],
)
def test_from_extension(name: str, expected: Detected | None) -> None:
    assert from_extension(name) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("def f(x):\n    return x", Detected(ContentType.CODE, "python")),
        ("def f(a,\n      b):\n    pass", Detected(ContentType.CODE, "python")),
        ("async def f():\n    pass", Detected(ContentType.CODE, "python")),
        ("@decorator\ndef f(): pass", Detected(ContentType.CODE, "python")),
        ("function add(a, b) { return a + b }", Detected(ContentType.CODE, "javascript")),
        ("<!DOCTYPE html><html><body><p>x</p></body></html>", Detected(ContentType.HTML)),
        ("Title\n=====\n\nBody text.", Detected(ContentType.RST)),
        (".. note::\n   Careful.", Detected(ContentType.RST)),
        ("# Title\n\nSee [x](y.md).", Detected(ContentType.MARKDOWN)),
        ('{"cells": [], "nbformat": 4}', Detected(ContentType.NOTEBOOK)),
        ("Herbert Leon Kessler is an art historian.", Detected(ContentType.TEXT)),
        ("", Detected(ContentType.TEXT)),
    ],
)
def test_sniff_text(text: str, expected: Detected) -> None:
    assert sniff_text(text) == expected


def test_image_magic() -> None:
    assert image_format(b"\x89PNG\r\n\x1a\n....") == "png"
    assert image_format(b"\xff\xd8\xff\xe0") == "jpeg"
    assert image_format(b"GIF89a") is None
