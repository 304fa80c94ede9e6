"""A retriever in one file: answers from a team's FAQ, fused with rayweave's own lists.

Register it (the module must be importable on every Serve replica, e.g. installed beside
rayweave or on PYTHONPATH):

    [serve.retrieval.retrievers]
    faq = "faq_retriever:from_settings"

    [serve.retrieval.retriever_weights]
    faq = 0.5

It reads `<home>/faq.jsonl`, one {"question", "answer", "url"} per line, and ranks entries by
the share of the query's words that their question holds. Its hits are not in the vector store,
so they are marked external (the page shows their text as is) and name their URL as source.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from rayweave.cluster.settings import Settings
from rayweave.cluster.types import Hit, Level, stable_id
from rayweave.serve.search import RankedLists, RetrievalQuery

WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> set[str]:
    return set(WORD.findall(text.lower()))


class FaqRetriever:
    def __init__(self, entries: list[dict[str, str]]) -> None:
        self.entries = [(words(e["question"]), e) for e in entries]

    async def retrieve(self, query: RetrievalQuery) -> RankedLists:
        asked = words(query.text)
        if not asked:
            return {"faq": []}
        scored = [
            (len(asked & question) / len(asked), entry)
            for question, entry in self.entries
            if asked & question
        ]
        scored.sort(key=lambda pair: -pair[0])
        return {
            "faq": [
                Hit(
                    id=f"faq:{stable_id(entry['url'])}",
                    doc_id=entry["url"],
                    text=f"{entry['question']}\n{entry['answer']}",
                    score=score,
                    level=Level.SECTION,
                    source=entry["url"],
                    title=entry["question"],
                    retrievers=("faq",),
                    metadata={"external": True},
                )
                for score, entry in scored[: query.plan.candidates]
            ]
        }


def from_settings(settings: Settings) -> FaqRetriever | None:
    """None when there is no FAQ file: the retriever is then simply not run."""
    path = Path(settings.home).expanduser() / "faq.jsonl"
    if not path.is_file():
        return None
    lines = path.read_text(encoding="utf-8").splitlines()
    return FaqRetriever([json.loads(line) for line in lines if line.strip()])
