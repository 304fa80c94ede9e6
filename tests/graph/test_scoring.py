"""Pure traversal scoring: seed normalisation, rarity, conversation blending, bridge links."""

from __future__ import annotations

import pytest

from rayweave.cluster.settings import GraphSettings
from rayweave.graph.queries import Seed
from rayweave.graph.scoring import blend_conversation, bridge_links, idf, normalize_seeds


class TestScoring:
    def test_seed_normalisation_and_idf(self) -> None:
        got = {
            s.chunk_id: s.score
            for s in normalize_seeds(
                [
                    Seed(chunk_id="a", score=4),
                    Seed(chunk_id="b", score=2),
                    Seed(chunk_id="a", score=1),
                ]
            )
        }
        assert got == {"a": 1.0, "b": 0.5}
        assert idf(1) == 1.0
        assert idf(10) < idf(2) < 1.0

    def test_blend_is_seed_003s_formula(self) -> None:
        got = blend_conversation(
            {"x": 0.8, "y": 0.4}, {"y": 2.0}, vector_weight=0.7, concept_weight=0.3
        )
        assert got == pytest.approx({"x": 0.7, "y": 0.35 + 0.3})


def test_bridge_links_follow_only_each_seeds_rarest_entities() -> None:
    def row(seed: str, eid: str, df: int, target: str) -> dict[str, object]:
        return {
            "seed": seed, "eid": eid, "edf": df, "mw": 1.0, "mc": 1.0, "xc": 1.0,
            "tid": f"{target}0", "tlabel": "Section", "tdoc": target, "tkey": f"k{target}",
            "ttext": target, "tchunk": None,
        }  # fmt: skip

    rows = [row("s", "common", 40, "C"), row("s", "rare", 1, "R"), row("s", "rare", 1, "R")]
    rows.append(row("t", "common", 40, "C"))
    links = bridge_links(rows, GraphSettings(max_entities_per_seed=1))
    # s keeps only its rarest entity; the duplicate row of (s, R) is one link; best first.
    assert [(lk.paths[0].nodes[0], lk.doc_id) for lk in links] == [("s", "R"), ("t", "C")]
    both = bridge_links(rows, GraphSettings(max_entities_per_seed=2))
    assert sorted((lk.paths[0].nodes[0], lk.doc_id) for lk in both) == [
        ("s", "C"),
        ("s", "R"),
        ("t", "C"),
    ]
