"""Titles a document states itself: front matter, headings, <title>, docstrings, comments."""

from __future__ import annotations

import json

import pytest

from rayweave.cluster.types import ContentType
from rayweave.ingest.titles import (
    code_title,
    guess_title,
    html_title,
    markdown_title,
    notebook_title,
    rst_title,
    split_front_matter,
    text_title,
)


class TestFrontMatter:
    def test_split(self) -> None:
        assert split_front_matter("---\na: 1\n---\nrest") == ("a: 1\n", "rest")

    @pytest.mark.parametrize(
        "text",
        ["---\na: 1\nrest", "x\n---\na: 1\n---\n", "", "--- \n"],
    )
    def test_no_front_matter_leaves_text_whole(self, text: str) -> None:
        assert split_front_matter(text) == ("", text)


class TestMarkdown:
    def test_front_matter_title_wins_and_loses_its_quotes(self) -> None:
        assert markdown_title("---\ntitle: 'Hello'\n---\n# Other\n") == "Hello"
        assert markdown_title('---\ntitle: "Hi there"\n---\n') == "Hi there"

    def test_front_matter_without_title_falls_back_to_heading(self) -> None:
        assert markdown_title("---\nauthor: x\n---\n# Other\n") == "Other"

    def test_first_heading_of_either_style_wins(self) -> None:
        assert markdown_title("Intro\n=====\n\n# Later\n") == "Intro"
        assert markdown_title("# Later\n\nIntro\n=====\n") == "Later"
        assert markdown_title("Sub\n---\n") == "Sub"

    def test_inline_markup_and_closing_hashes_are_dropped(self) -> None:
        assert markdown_title("## The **bold** [link](http://x) `code` ##\n") == (
            "The bold link code"
        )

    @pytest.mark.parametrize(
        "text",
        [
            "#NoSpace\n",  # not an ATX heading
            "    # indented code\n",
            "para\n\n- item\n---\n",  # a list item over a rule is no setext heading
            "> quote\n---\n",
            "",
        ],
    )
    def test_non_headings(self, text: str) -> None:
        assert markdown_title(text) == ""

    def test_long_titles_are_cut_and_whitespace_collapsed(self) -> None:
        assert markdown_title("# " + "x" * 200) == "x" * 120
        assert markdown_title("#   a \t b   \n") == "a b"


class TestRstAndHtml:
    def test_rst(self) -> None:
        assert rst_title("Title\n=====\n\nbody") == "Title"
        assert rst_title("Ti\n~~~\n") == "Ti"
        assert rst_title("Ti\n==\n") == ""  # an underline needs three characters
        assert rst_title(" indented\n=====\n") == ""

    def test_html_title_then_h1(self) -> None:
        assert html_title("<html><title>  A &amp; B </title><h1>H</h1>") == "A & B"
        assert html_title("<title></title><h1 class='x'>The <b>H</b></h1>") == "The H"
        assert html_title("<TITLE>Upper</TITLE>") == "Upper"
        assert html_title("<p>none</p>") == ""


class TestNotebook:
    def test_first_markdown_heading(self) -> None:
        nb = {
            "cells": [
                {"cell_type": "code", "source": "# not markdown"},
                {"cell_type": "markdown", "source": "no heading here"},
                {"cell_type": "markdown", "source": ["# Retrying ", "tasks\n"]},
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
        assert notebook_title(json.dumps(nb)) == "Retrying tasks"

    def test_unreadable_notebook_has_no_title(self) -> None:
        assert notebook_title("not json") == ""


class TestCode:
    def test_python_docstring_first_line(self) -> None:
        text = '#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n"""Queue helpers.\n\nMore."""\n'
        assert code_title(text, "python") == "Queue helpers."
        assert code_title("r'''Raw doc.'''\n", "python") == "Raw doc."

    @pytest.mark.parametrize("text", ["'''  '''\n", "x = 1\n", "", "# comment only\n"])
    def test_python_without_docstring(self, text: str) -> None:
        assert code_title(text, "python") == ""

    @pytest.mark.parametrize(
        ("text", "language", "title"),
        [
            ("/// Ring buffer.\n", "rust", "Ring buffer."),
            ("-- users table\n", "sql", "users table"),
            ("# Deploy script\n", "bash", "Deploy script"),
            ("// Lexer\nint x;", "c", "Lexer"),
        ],
    )
    def test_leading_comment(self, text: str, language: str, title: str) -> None:
        assert code_title(text, language) == title

    @pytest.mark.parametrize(
        "text",
        [
            "// Copyright 2020 Someone\nint x;",
            "// SPDX-License-Identifier: MIT\n",
            "# -*- coding: utf-8 -*-\n",
            "int x;  // trailing\n",
        ],
    )
    def test_boilerplate_comments_are_not_titles(self, text: str) -> None:
        assert code_title(text, "c") == ""

    def test_shebang_is_not_a_title(self) -> None:
        assert code_title("#!/bin/sh\necho hi\n", "bash") == ""


class TestText:
    def test_short_first_line_is_the_title(self) -> None:
        assert text_title("Release notes\n\nbody") == "Release notes"

    def test_a_sentence_is_not_a_title(self) -> None:
        assert text_title("This is a sentence.\nMore") == ""
        assert text_title("This is a sentence.\n\nTitle\n=====\n") == "Title"

    def test_long_or_empty_first_line(self) -> None:
        assert text_title("") == ""
        assert text_title("w" * 81) == ""


class TestGuess:
    @pytest.mark.parametrize(
        ("content_type", "text", "title"),
        [
            (ContentType.MARKDOWN, "# Md", "Md"),
            (ContentType.RST, "Rst\n===\n", "Rst"),
            (ContentType.HTML, "<title>Html</title>", "Html"),
            (ContentType.TEXT, "Plain", "Plain"),
            (ContentType.IMAGE, "# Md", ""),
        ],
    )
    def test_dispatch(self, content_type: ContentType, text: str, title: str) -> None:
        assert guess_title(text, content_type) == title

    def test_code_uses_language(self) -> None:
        assert guess_title('"""Doc."""', ContentType.CODE, "python") == "Doc."
        assert guess_title('"""Doc."""', ContentType.CODE, None) == ""
