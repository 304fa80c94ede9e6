from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings

from rayweave.cluster.settings import IngestSettings
from rayweave.cluster.types import ContentType
from rayweave.ingest.chunking import chunk_document
from rayweave.ingest.chunking.propositions import proposition_ranges
from rayweave.ingest.sentences import is_dangling, split_sentences
from rayweave.models.tokens import TokenizerCounter

from ..conftest import SMALL
from ..doc_strategies import plain_doc
from .conftest import ESTIMATE, bounds, checked, make, markdown_pieces


class TestPropositions:
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(plain_doc())
    def test_dangling_sentences_stay_attached(self, text: str) -> None:
        cd = chunk_document(make(text, ContentType.TEXT), tokens=ESTIMATE, settings=SMALL)
        props = cd.propositions
        for prev, cur in itertools.pairwise(props):
            if cur.parent_id != prev.parent_id or not is_dangling(cur.text):
                continue
            # A cut before a dangling sentence is made only when it cannot move: attaching the
            # sentence to the previous proposition would break the maximum, or the cut would
            # land before another dangling sentence, or leave a fragment under the minimum.
            spans = split_sentences(cur.text)
            first_tokens = ESTIMATE.count_tokens([cur.text[spans[0][0] : spans[0][1]]])[0]
            if prev.token_count + first_tokens > SMALL.proposition_max_tokens:
                continue
            rest = cur.text[spans[1][0] :] if len(spans) > 1 else ""
            assert (
                not rest
                or is_dangling(rest)
                or ESTIMATE.count_tokens([rest])[0] < SMALL.proposition_min_tokens
            ), (prev.text, cur.text)

    def test_propositions_start_at_headings(
        self, minilm: TokenizerCounter, settings: IngestSettings
    ) -> None:
        # Small headed subtrees merge into one section; a proposition that runs into the next
        # heading would be found under the wrong subject (a heading names what follows it).
        entries = [
            (
                f"## E100{i} {name}Error\n\n**Message:** `E100{i} {name}Error: the {name.lower()} "
                f"of task 01HV held by host-a:4312 expired`\n\n**Cause:** a task ran longer than "
                f"its {name.lower()} without a heartbeat: the worker died, was frozen (a "
                "stop-the-world GC, a paused VM), or CPU-bound code held the GIL so the "
                "heartbeat thread could not run.\n\n"
                f"**Fix:** raise `{name.lower()}_seconds` or call `heartbeat()` in long loops.\n"
            )
            for i, name in enumerate(["Lease", "Register", "Lock"], start=3)
        ]
        text = "# Troubleshooting\n\nSearch this page for the code in your log.\n\n" + "\n".join(
            entries
        )
        doc = make(text, title="Troubleshooting")
        cd = checked(doc, minilm, settings)
        assert len(cd.sections) < len(entries)  # merged: the case that needs the rule
        for prop in cd.propositions:
            lines = [line for line in prop.text.splitlines() if line.strip()]
            assert not any(line.startswith("#") for line in lines[1:]), prop.text
        headed = [p for p in cd.propositions if p.text.startswith("## E1004")]
        assert len(headed) == 1
        assert "E1004 RegisterError:" in headed[0].text


HEADED = (
    "# Top\n\nIntro one.\n\n## A\n\nAlpha one. It goes on.\n\n### A1\n\nDeep text.\n\n"
    "## B\n\nBeta text."
)


class TestPropositionRanges:
    def test_each_heading_opens_a_proposition_however_small(self) -> None:
        pieces = markdown_pieces(HEADED)
        ranges = proposition_ranges(pieces, 0, len(pieces), HEADED, SMALL)
        assert ranges == [(0, 2), (2, 5), (5, 7), (7, 9)]  # all under the minimum, yet cut
        assert all(pieces[a].kind == "heading" for a, _ in ranges)

    def test_ranges_tile_the_section(self) -> None:
        pieces = markdown_pieces(HEADED)
        ranges = proposition_ranges(pieces, 4, len(pieces), HEADED, SMALL)
        assert ranges[0][0] == 4
        assert ranges[-1][1] == len(pieces)
        assert all(b == c for (_, b), (c, _) in itertools.pairwise(ranges))

    def test_dangling_sentence_stays_with_its_antecedent(self) -> None:
        text = " ".join(
            f"Worker {i} leases a task from the broker. It renews the lease while running."
            for i in range(4)
        )
        pieces = markdown_pieces(text)
        s = bounds((40, 80), (16, 32))
        ranges = proposition_ranges(pieces, 0, len(pieces), text, s)
        assert len(ranges) > 1
        assert all(not pieces[a].dangling for a, _ in ranges)
        for a, b in ranges:
            assert sum(p.tokens for p in pieces[a:b]) <= 32
