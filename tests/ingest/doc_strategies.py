"""Hypothesis strategies for generated technical documents."""

from __future__ import annotations

from hypothesis import strategies as st

WORDS = [
    "worker",
    "queue",
    "task",
    "broker",
    "lease",
    "retry",
    "backoff",
    "the",
    "a",
    "of",
    "to",
    "in",
    "is",
    "runs",
    "stores",
    "sends",
    "message",
    "timeout",
    "delay",
    "config",
    "value",
    "error",
    "handler",
    "result",
    "payload",
    "schedule",
    "cron",
    "priority",
    "process",
    "thread",
    "memory",
    "disk",
    "network",
    "client",
    "server",
    "request",
    "response",
    "cache",
    "index",
    "token",
    "vector",
    "model",
]
DANGLING = ("It", "This", "They", "However,", "Therefore", "Also")


@st.composite
def sentence(draw: st.DrawFn, max_words: int = 18) -> str:
    words = draw(st.lists(st.sampled_from(WORDS), min_size=3, max_size=max_words))
    dangling = draw(st.integers(min_value=0, max_value=5)) == 0
    first = draw(st.sampled_from(DANGLING)) if dangling else words[0].capitalize()
    end = draw(st.sampled_from([".", ".", ".", "?", "!"]))
    return " ".join([first, *words[1:]]) + end


@st.composite
def paragraph(draw: st.DrawFn) -> str:
    return " ".join(draw(st.lists(sentence(), min_size=1, max_size=7)))


@st.composite
def code_block(draw: st.DrawFn) -> str:
    lines = draw(
        st.lists(
            st.builds(lambda a, b: f"{a} = {b}(x)", st.sampled_from(WORDS), st.sampled_from(WORDS)),
            min_size=1,
            max_size=6,
        )
    )
    return "```python\n" + "\n".join(lines) + "\n```"


@st.composite
def bullet_list(draw: st.DrawFn) -> str:
    items = draw(st.lists(sentence(max_words=8), min_size=1, max_size=5))
    return "\n".join(f"- {item}" for item in items)


@st.composite
def markdown_doc(draw: st.DrawFn) -> str:
    blocks = []
    for kind in draw(
        st.lists(st.sampled_from(["h", "p", "p", "p", "code", "list"]), min_size=1, max_size=18)
    ):
        if kind == "h":
            level = draw(st.integers(min_value=1, max_value=4))
            title = " ".join(
                draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))
            ).capitalize()
            blocks.append("#" * level + " " + title)
        elif kind == "p":
            blocks.append(draw(paragraph()))
        elif kind == "code":
            blocks.append(draw(code_block()))
        else:
            blocks.append(draw(bullet_list()))
    if not any(not b.startswith("#") for b in blocks):
        blocks.append(draw(paragraph()))
    return "\n\n".join(blocks) + "\n"


@st.composite
def plain_doc(draw: st.DrawFn) -> str:
    return "\n\n".join(draw(st.lists(paragraph(), min_size=1, max_size=12))) + "\n"
