from __future__ import annotations

import itertools

import numpy as np
import pytest

from rayweave.cluster.settings import IngestSettings
from rayweave.cluster.types import ContentType
from rayweave.ingest.chunking import chunk_document
from rayweave.ingest.chunking.sections import HeadingNode, heading_tree
from rayweave.models.tokens import TokenizerCounter

from ..conftest import _minilm_folder
from ..invariants import check_invariants
from .conftest import bounds, checked, make, markdown_pieces


class TestSections:
    def test_markdown_sections_follow_headings(self, minilm: TokenizerCounter) -> None:
        body = " ".join(
            f"Sentence {i} explains the {w} option in detail." for i, w in enumerate(["a"] * 30)
        )
        text = f"# Title\n\n## Alpha\n\n{body}\n\n## Beta\n\n{body}\n\n### Beta child\n\n{body}\n"
        s = IngestSettings(section_min_tokens=100, section_max_tokens=200)
        doc = make(text, title="Title")
        cd = checked(doc, minilm, s)
        paths = [c.section_path for c in cd.sections]
        assert ("Alpha",) in paths
        assert ("Beta",) in paths
        assert ("Beta", "Beta child") in paths
        assert all(
            not c.text.startswith("## Beta") or c.section_path[0] == "Beta" for c in cd.sections
        )


class TestSplittingModes:
    def test_window_overlap_is_whole_sentences(self, minilm: TokenizerCounter) -> None:
        text = " ".join(f"Fact number {i} says that the queue holds {i} tasks." for i in range(60))
        s = bounds((60, 120), (20, 40), section_overlap_tokens=30)
        doc = make(text, ContentType.TEXT)
        cd = checked(doc, minilm, s)
        secs = cd.sections
        assert len(secs) >= 4
        for a, b in itertools.pairwise(secs):
            shared = cd.text[b.start_char : a.end_char] if b.start_char < a.end_char else ""
            assert shared, "windows overlap"
            assert shared.startswith("Fact")
            assert shared.endswith("tasks.")
            assert 0 < minilm.count_tokens([shared])[0] <= 30

    @pytest.mark.slow
    def test_topic_shift_with_real_embeddings(
        self, minilm: TokenizerCounter, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(str(_minilm_folder()), device="cpu")

        def embed(texts: list[str]) -> np.ndarray:
            return model.encode(texts, normalize_embeddings=True, batch_size=64)

        cats = [
            "Cats sleep for most of the day in warm places.",
            "A kitten learns to hunt by playing with its siblings.",
            "Domestic cats purr when they are content and relaxed.",
            "Many cats enjoy climbing trees and high shelves.",
            "The whiskers of a cat help it sense narrow spaces.",
            "Cats groom their fur with rough tongues every day.",
            "Some cat breeds have very long and silky coats.",
            "A cat flicks its tail when it is annoyed or curious.",
            "Older cats often prefer quiet corners and soft blankets.",
            "Cats land on their feet thanks to a flexible spine.",
        ]
        dbs = [
            "A relational database stores rows in indexed tables.",
            "Transactions guarantee atomic commits of several writes.",
            "The query planner picks an index to avoid full scans.",
            "Write-ahead logging makes database crashes recoverable.",
            "Replication copies the database log to standby servers.",
            "Vacuuming reclaims space from deleted table rows.",
            "Connection pools limit the number of open database sessions.",
        ]
        text = " ".join(cats[:5] + dbs + cats[5:])  # the topic changes after sentences 5 and 12
        s = bounds((40, 110), (10, 40), section_overlap_tokens=20)
        doc = make(text, ContentType.TEXT)
        topic = chunk_document(doc, tokens=minilm, settings=s, embed=embed)
        check_invariants(doc, topic, s, minilm)
        cut_texts = [c.text for c in topic.sections]
        assert any(t.startswith(dbs[0]) for t in cut_texts), cut_texts
        assert any(t.endswith(dbs[-1]) for t in cut_texts), cut_texts
        assert all(
            not (set(t.split(". ")) & set(cats) and set(t.split(". ")) & set(dbs))
            for t in cut_texts
            if t.startswith(dbs[0])
        )

        # a failing embedder degrades to windows with a warning, it does not fail the document
        def broken(texts: list[str]) -> np.ndarray:
            raise RuntimeError("model offline")

        fallback = chunk_document(doc, tokens=minilm, settings=s, embed=broken)
        assert fallback.warnings
        assert "sliding windows used" in fallback.warnings[0]


def _tree(node: HeadingNode) -> list[tuple[int, int, int, tuple[str, ...]]]:
    out = [(node.start, node.end, node.level, node.path)]
    for child in node.children:
        out.extend(_tree(child))
    return out


def test_heading_tree_nests_by_level_and_closes_at_the_next_peer() -> None:
    text = (
        "# Top\n\nIntro one.\n\n## A\n\nAlpha one.\n\n### A1\n\nDeep text.\n\n"
        "## B\n\nBeta text.\n\n#\n\nBare."
    )
    pieces = markdown_pieces(text)
    root = heading_tree(pieces)
    kinds = [p.kind for p in pieces]
    assert kinds.count("heading") == 5
    assert _tree(root) == [
        (0, 10, 0, ()),
        (0, 8, 1, ("Top",)),
        (2, 6, 2, ("Top", "A")),
        (4, 6, 3, ("Top", "A", "A1")),
        (6, 8, 2, ("Top", "B")),
        (8, 10, 1, ("untitled",)),
    ]
