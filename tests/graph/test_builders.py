"""`build_graph` end to end: every edge rule on small chunk sets. No server needed."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from rayweave.cluster.settings import GraphSettings
from rayweave.cluster.types import Chunk, ContentType, Document, Entity, Level
from rayweave.graph.builders import build_graph
from rayweave.graph.edges import CONF_DEFINITION, CONF_DEFINITION_FIRST, CONF_TITLE
from rayweave.graph.extraction import Extraction, GraphExtractor, Statement, run_extractor
from rayweave.graph.names import entity_id, normalize_name
from rayweave.graph.schema import EdgeRow, EdgeSource, GraphBatch, NodeLabel, RelType

E = NodeLabel.ENTITY


def sec(cid: str, doc: str, text: str, **kw: object) -> Chunk:
    return Chunk(id=cid, doc_id=doc, level=Level.SECTION, text=text, **kw)  # type: ignore[arg-type]


def edges(batch: GraphBatch, rel: RelType) -> list[EdgeRow]:
    return [e for e in batch.edges if e.rel is rel]


def eid(name: str) -> str:
    return entity_id(normalize_name(name))


def pairs(batch: GraphBatch, rel: RelType) -> set[tuple[str, str]]:
    return {(e.src.id, e.dst.id) for e in edges(batch, rel)}


class TestExplains:
    def test_title_heading_and_definition(self) -> None:
        chunks = [
            Chunk(
                id="d", doc_id="doc", level=Level.DOCUMENT, text="Serve guide", title="Ray Serve"
            ),
            sec("s1", "doc", "Replicas scale out.", section_path=("Ray Serve", "Autoscaling")),
            sec("s2", "doc", "Intro text.", section_path=("Ray Serve", "Overview")),
            sec(
                "s3",
                "doc",
                "A replica is a worker process. Later, a handle refers to a deployment proxy.",
            ),
        ]
        b = build_graph(chunks)
        got = {(e.src.id, e.dst.id): (e.confidence, e.source) for e in edges(b, RelType.EXPLAINS)}
        assert got[("doc", eid("Ray Serve"))] == (CONF_TITLE, EdgeSource.TITLE)
        assert got[("s1", eid("Autoscaling"))][1] is EdgeSource.HEADING
        assert not any(dst == eid("Overview") for _, dst in got)  # generic heading
        assert got[("s3", eid("replica"))] == (CONF_DEFINITION_FIRST, EdgeSource.DEFINITION)
        assert got[("s3", eid("handle"))] == (CONF_DEFINITION, EdgeSource.DEFINITION)


class TestMentions:
    def test_gazetteer_finds_titles_ner_missed(self) -> None:
        chunks = [
            sec(
                "a0",
                "A",
                "Arthur's Magazine was merged into Godey's Lady's Book in 1846.",
                title="Arthur's Magazine",
            ),
            sec(
                "b0",
                "B",
                "Godey's Lady's Book was a magazine from Philadelphia.",
                title="Godey's Lady's Book",
            ),
        ]
        b = build_graph(
            chunks,
            mentions={"a0": [Entity(id="tmp", name="Arthur's Magazine", kind="WORK_OF_ART")]},
        )
        m = {(e.src.id, e.dst.id): e for e in edges(b, RelType.MENTIONS)}
        bridge = m[("a0", eid("Godey's Lady's Book"))]
        assert bridge.source is EdgeSource.GAZETTEER
        assert 0 < bridge.confidence <= 1
        own = m[("a0", eid("Arthur's Magazine"))]
        # Extractor and gazetteer agree: one edge, stronger than either rule alone (noisy-OR).
        assert own.confidence == pytest.approx(1 - (1 - 0.7) * (1 - 0.75))
        assert {r.kind for r in b.entities if r.id == eid("Arthur's Magazine")} == {"WORK_OF_ART"}

    def test_counts_longest_match_and_case_rules(self) -> None:
        chunks = [
            sec("t1", "T1", "About New York.", title="New York"),
            sec("t2", "T2", "About York.", title="York"),
            sec("t3", "T3", "About Mercury.", title="Mercury"),
            sec(
                "x",
                "X",
                "New York and New York again. Mercury rose. The mercury in the thermometer. "
                "York too.",
            ),
        ]
        m = {(e.src.id, e.dst.id): e for e in edges(build_graph(chunks), RelType.MENTIONS)}
        assert m[("x", eid("New York"))].count == 2
        assert (
            m[("x", eid("York"))].count == 1
        )  # only the free-standing "York", not inside "New York"
        assert m[("x", eid("Mercury"))].count == 1  # lower-case "mercury" is not the proper name

    def test_extractor_counts(self) -> None:
        ents = [
            Entity(id="1", name="GPU"),
            Entity(id="2", name="GPUs"),
            Entity(id="3", name="CUDA"),
        ]
        b = build_graph([sec("s", "d", "GPU and CUDA text")], mentions={"s": ents})
        m = {e.dst.id: e for e in edges(b, RelType.MENTIONS)}
        assert m[eid("gpu")].count == 2
        assert m[eid("gpu")].weight > m[eid("cuda")].weight

    def test_an_extracted_name_the_gazetteer_also_matches_stays_the_extractors(self) -> None:
        """The gazetteer's multi-word match is more confident, but the extractor introduced the
        entity: the edge keeps its label (orphan deletion reads it) and gains both confidences."""
        ents = [Entity(id="1", name="New York")]
        b = build_graph(
            [sec("s", "d", "New York is large.")],
            mentions={"s": ents},
            known={"new york": [eid("New York")]},
        )
        (m,) = edges(b, RelType.MENTIONS)
        assert m.source is EdgeSource.EXTRACTOR
        assert m.confidence > 0.9  # noisy-OR of both rules

    def test_names_in_most_units_are_too_generic_for_the_gazetteer(self) -> None:
        chunks = [sec("film", "F", "A film.", title="Film")]
        chunks += [sec(f"c{i}", f"D{i}", f"Film number {i} by Director{i}.") for i in range(60)]
        b = build_graph(chunks, settings=GraphSettings(gazetteer_max_df=0.5))
        assert not any(e.dst.id == eid("Film") for e in edges(b, RelType.MENTIONS))
        b = build_graph(chunks, settings=GraphSettings(gazetteer_max_df=1.0))
        # 60, not 61: the title's own chunk says "film" in lower case, not the proper name.
        assert sum(e.dst.id == eid("Film") for e in edges(b, RelType.MENTIONS)) == 60


class TestRelatedAndTopics:
    def test_build_links_cooccurring_entities(self) -> None:
        chunks = [
            sec(f"s{i}", f"d{i}", "Ray Serve uses Starlette for HTTP.", title=f"Doc {i}")
            for i in range(3)
        ] + [
            sec(f"o{i}", f"o{i}", f"Unrelated text number {i}.", title=f"Other {i}")
            for i in range(5)
        ]
        ents = {
            f"s{i}": [Entity(id="", name="Ray Serve"), Entity(id="", name="Starlette")]
            for i in range(3)
        }
        b = build_graph(chunks, mentions=ents)
        a, z = sorted((eid("Ray Serve"), eid("Starlette")))
        assert (a, z) in pairs(b, RelType.RELATED_TO)


class TestCodeAndErrors:
    def test_defines_uses_references(self) -> None:
        docs = [
            Document(
                id="guide", source="docs/guide.md", title="Guide", content_type="markdown", text=""
            )
        ]
        chunks = [
            sec(
                "def",
                "mod",
                "def run(app): ...",
                content_type=ContentType.CODE,
                defined_symbols=("ray.serve.run",),
                dependencies=("ray.serve.handle",),
            ),
            sec(
                "use",
                "ex",
                "from ray.serve import run\nrun(app)",
                content_type=ContentType.CODE,
                references=("ray.serve.run", "guide.md", "def"),
            ),
        ]
        b = build_graph(chunks, documents=docs)
        assert pairs(b, RelType.DEFINES) == {("def", eid("ray.serve.run"))}
        assert ("def", eid("ray.serve.handle")) in pairs(b, RelType.USES)
        assert ("use", eid("ray.serve.run")) in pairs(b, RelType.USES)
        refs = {(e.src.id, e.dst.label, e.dst.id) for e in edges(b, RelType.REFERENCES)}
        assert refs == {("use", NodeLabel.DOCUMENT, "guide"), ("use", NodeLabel.SECTION, "def")}

    def test_error_chunk_that_explains_a_fix_solves_it(self) -> None:
        chunks = [
            sec(
                "fix",
                "d",
                "If you see ModuleNotFoundError, reinstall the package to fix it.",
                error_codes=("E042",),
            ),
            sec("log", "d", "The job crashed with ModuleNotFoundError at startup."),
        ]
        b = build_graph(chunks)
        assert pairs(b, RelType.SOLVES) == {
            ("fix", eid("ModuleNotFoundError")),
            ("fix", eid("E042")),
        }
        assert ("log", eid("ModuleNotFoundError")) in pairs(b, RelType.MENTIONS)
        assert {r.kind for r in b.entities if r.id == eid("ModuleNotFoundError")} == {"error"}


class _StubLLM:
    """A tiny rule-based GraphExtractor (the hook's contract, no model)."""

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        return [
            Extraction(
                statements=(
                    Statement(
                        subject="Qdrant", predicate="stores", object="vectors", confidence=0.9
                    ),
                )
            )
            if "Qdrant" in t
            else Extraction()
            for t in texts
        ]


class TestGeneral:
    def test_llm_hook_is_optional_and_adds_statements(self) -> None:
        chunks = [sec("q", "d", "Qdrant stores vectors."), sec("n", "d", "Nothing here.")]
        assert isinstance(_StubLLM(), GraphExtractor)
        ext = run_extractor(_StubLLM(), chunks)
        b = build_graph(chunks, extractions=ext)
        (rel,) = edges(b, RelType.RELATED_TO)
        assert rel.source is EdgeSource.LLM
        assert rel.props == {"predicate": "stores"}
        assert {rel.src.id, rel.dst.id} == {eid("Qdrant"), eid("vectors")}

    def test_deterministic_and_well_formed(self) -> None:
        chunks = [
            sec(
                "a",
                "A",
                "Ray Serve runs deployments. Ray Serve scales replicas.",
                title="Ray Serve",
                keywords=("serve",),
            ),
            sec(
                "b",
                "B",
                "Deployments in Ray Serve are scaled by the autoscaler.",
                title="Autoscaler",
                keywords=("serve",),
            ),
        ]
        first, second = build_graph(chunks), build_graph(list(chunks))
        assert first == second
        ids = {r.id for r in first.entities}
        for e in first.edges:
            assert 0.0 <= e.confidence <= 1.0
            assert 0.0 <= e.weight <= 1.0
            for end in (e.src, e.dst):
                if end.label is E:
                    assert end.id in ids  # every edge endpoint is an emitted entity
        assert len({(e.rel, e.src, e.dst) for e in first.edges}) == len(first.edges)
