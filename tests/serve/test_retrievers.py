"""The retriever registry: built-in web, a user's retriever named in settings (the docs' one-file
example, loaded as a user would), and clear errors for a bad entry."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from rayweave.cluster.errors import ConfigError
from rayweave.cluster.settings import Settings
from rayweave.cluster.types import Hit
from rayweave.serve.retrievers import build_retrievers, retriever_factories
from rayweave.serve.search import RetrievalQuery, SearchPipeline

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "faq_retriever.py"


class Stored:
    async def retrieve(self, query: RetrievalQuery) -> dict[str, list[Hit]]:
        return {"dense": [Hit(id="c1", doc_id="d1", text="", score=0.9)]}

    async def hydrate(self, ids: list[str]) -> dict[str, Hit]:
        return {"c1": Hit(id="c1", doc_id="d1", text="a stored passage", score=0.9)}


def test_web_is_built_in_and_off_until_a_provider_is_set(tmp_path: Path) -> None:
    assert "web" in retriever_factories(Settings(home=tmp_path))
    assert build_retrievers(Settings(home=tmp_path)) == {}
    web = {"web_provider": "searxng", "web_url": "http://127.0.0.1:9/search"}
    on = Settings(home=tmp_path, serve={"retrieval": web})
    assert set(build_retrievers(on)) == {"web"}
    assert build_retrievers(on, skip=("web",)) == {}


def test_a_users_retriever_named_in_settings_is_fused_with_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rayweave.serve.classifier import RuleClassifier
    from rayweave.serve.fusion import FusionRanker
    from rayweave.serve.planning import planner
    from rayweave.serve.schemas import Profile

    package = tmp_path / "site"
    package.mkdir()
    shutil.copy(EXAMPLE, package / "faq_retriever.py")
    monkeypatch.syspath_prepend(str(package))
    faq = {"question": "How do I rotate the API key?", "answer": "Run `keys rotate`.", "url": "u1"}
    (tmp_path / "faq.jsonl").write_text(json.dumps(faq) + "\n")
    settings = Settings(
        home=tmp_path,
        serve={
            "retrieval": {
                "retrievers": {"faq": "faq_retriever:from_settings"},
                "retriever_weights": {"faq": 2.0},
            }
        },
    )
    built = build_retrievers(settings)
    assert set(built) == {"faq"}

    stored = Stored()
    pipeline = SearchPipeline(
        classifier=RuleClassifier(),
        planner=planner(settings.serve.retrieval),
        vector=stored,
        hydrator=stored,
        fuser=FusionRanker(settings.serve.retrieval),
        retrievers=built,
    )
    outcome = asyncio.run(pipeline.search("rotate the api key", top_k=5, profile=Profile.GRAPH))
    first, answer = outcome.hits
    assert first.id == "c1"  # the vector lists' best hit leads (`anchor_top`)
    assert answer.id.startswith("faq:")
    assert answer.retrievers == ("faq",)
    assert answer.text.endswith("Run `keys rotate`.")  # external: shown as found
    # The dense profile runs no registered retriever.
    dense = asyncio.run(pipeline.search("rotate the api key", top_k=5, profile=Profile.DENSE))
    assert [h.id for h in dense.hits] == ["c1"]


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("no_colon", "expected 'module:callable'"),
        ("rayweave_no_such_module:f", "cannot be loaded"),
        ("rayweave.serve.retrievers:BUILT_IN", "is not callable"),
    ],
)
def test_a_bad_entry_is_a_config_error_naming_it(tmp_path: Path, path: str, message: str) -> None:
    settings = Settings(home=tmp_path, serve={"retrieval": {"retrievers": {"mine": path}}})
    with pytest.raises(ConfigError, match=f"retrievers.mine = .*{message}"):
        build_retrievers(settings)
