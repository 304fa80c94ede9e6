"""Synonymy by update: names are encoded once, an update relinks only what it touched, and the
edges always equal an all-pairs pass over the names now stored."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from tests_support import entity_row

from rayweave.cluster.settings import QdrantSettings
from rayweave.cluster.vectors.factory import open_vector_store
from rayweave.graph.schema import GraphBatch
from rayweave.graph.store import GraphStore
from rayweave.graph.synonym_index import NameIndex, SynonymRule, names_collection, update_synonyms
from rayweave.graph.synonyms import synonym_edges

pytestmark = pytest.mark.integration

# Along one arc, so that cosines fall with distance: A-B 0.995, B-C 0.98, A-C 0.955, D far.
TABLE = {
    "Alpha": [1.0, 0.0, 0.0],
    "Alpha Beta": [1.0, 0.1, 0.0],
    "Alpha Gamma": [1.0, 0.3, 0.0],
    "Delta": [0.0, 1.0, 0.0],
    "Alpha Zeta": [1.0, 0.2, 0.0],
}


class Encoder:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, names: list[str]) -> np.ndarray:
        self.seen += names
        m = np.asarray([TABLE[n] for n in names], dtype=np.float32)
        return m / np.linalg.norm(m, axis=1, keepdims=True)


@pytest.fixture
def names(graph_store: GraphStore, tmp_path: Path) -> Iterator[NameIndex]:
    collection = names_collection(graph_store.ns)
    store = open_vector_store(QdrantSettings(), path=tmp_path, collection=collection)
    yield NameIndex(
        store=store,
        collection=collection,
        encode=Encoder(),
        dense_dim=3,
        rule=SynonymRule(threshold=0.9, max_per_entity=1, encoder="table"),
        full_fraction=1.0,
    )
    store.close()


def add(graph: GraphStore, *entities: str) -> None:
    graph.write_batch(GraphBatch(entities=tuple(entity_row(n, n) for n in entities)))


def remove(graph: GraphStore, entity: str) -> None:
    graph.write("MATCH (e:Entity {ns: $ns, id: $id}) DETACH DELETE e", {"id": entity})


def edges(graph: GraphStore) -> set[tuple[str, str]]:
    rows = graph.read(
        "MATCH (a:Entity {ns: $ns})-[:SYNONYM_OF]->(b:Entity) RETURN a.id AS a, b.id AS b"
    )
    return {(r["a"], r["b"]) for r in rows}


def all_pairs(graph: GraphStore, rule: SynonymRule) -> set[tuple[str, str]]:
    rows = graph.read("MATCH (e:Entity {ns: $ns}) RETURN e.id AS id, e.name AS name")
    entities = sorted((r["id"], r["name"]) for r in rows)
    made = synonym_edges(
        entities,
        Encoder()([n for _, n in entities]),
        threshold=rule.threshold,
        max_per_entity=rule.max_per_entity,
    )
    return {(e.src.id, e.dst.id) for e in made}


def test_a_name_is_encoded_once(graph_store: GraphStore, names: NameIndex) -> None:
    add(graph_store, "Alpha", "Delta")
    first = update_synonyms(graph_store, names)
    assert (first.full, first.added, first.edges) == (True, 2, 0)
    add(graph_store, "Alpha Beta")
    second = update_synonyms(graph_store, names)
    assert not second.full
    assert names.encode.seen == ["Alpha", "Delta", "Alpha Beta"]  # type: ignore[attr-defined]
    assert edges(graph_store) == {("Alpha", "Alpha Beta")} == all_pairs(graph_store, names.rule)
    assert update_synonyms(graph_store, names).relinked == 0  # nothing changed, nothing redone


def test_a_name_that_goes_frees_its_neighbours_for_their_next_choice(
    graph_store: GraphStore, names: NameIndex
) -> None:
    add(graph_store, "Alpha", "Alpha Beta", "Alpha Gamma", "Delta")
    update_synonyms(graph_store, names)
    # One partner each: Alpha and Alpha Beta choose each other; Alpha Gamma chooses Alpha Beta.
    assert edges(graph_store) == all_pairs(graph_store, names.rule)
    assert ("Alpha", "Alpha Gamma") not in edges(graph_store)
    remove(graph_store, "Alpha Beta")
    update = update_synonyms(graph_store, names)
    assert (update.full, update.removed) == (False, 1)
    assert edges(graph_store) == {("Alpha", "Alpha Gamma")} == all_pairs(graph_store, names.rule)
    # A name between two others takes over both their choices.
    add(graph_store, "Alpha Zeta")
    update_synonyms(graph_store, names)
    assert edges(graph_store) == all_pairs(graph_store, names.rule)
    assert ("Alpha", "Alpha Gamma") not in edges(graph_store)


def test_an_entity_recreated_under_a_known_name_gets_its_edges_back(
    graph_store: GraphStore, names: NameIndex
) -> None:
    add(graph_store, "Alpha", "Alpha Beta")
    update_synonyms(graph_store, names)
    remove(graph_store, "Alpha")  # a document's delete takes the node and its edges
    add(graph_store, "Alpha")  # and its next version brings the name back
    update = update_synonyms(graph_store, names)
    assert (update.added, update.removed) == (0, 0)
    assert edges(graph_store) == {("Alpha", "Alpha Beta")}


def test_another_rule_or_encoder_rebuilds_the_index(
    graph_store: GraphStore, names: NameIndex
) -> None:
    add(graph_store, "Alpha", "Alpha Beta")
    update_synonyms(graph_store, names)
    stricter = SynonymRule(threshold=0.999, max_per_entity=1, encoder="table")
    rebuilt = update_synonyms(
        graph_store,
        NameIndex(
            store=names.store,
            collection=names.collection,
            encode=names.encode,
            dense_dim=3,
            rule=stricter,
        ),
    )
    assert (rebuilt.full, rebuilt.added) == (True, 2)
    assert edges(graph_store) == set()


def test_a_run_killed_midway_leaves_the_next_enough_to_redo(
    graph_store: GraphStore, names: NameIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    add(graph_store, "Alpha", "Alpha Beta", "Alpha Gamma", "Delta")
    update_synonyms(graph_store, names)
    remove(graph_store, "Alpha Beta")
    add(graph_store, "Alpha Zeta")

    def killed(*args: object, **kwargs: object) -> int:
        raise RuntimeError("killed")

    # Dies after the new name entered the index and the old edges went, before any was written.
    monkeypatch.setattr(graph_store, "write_edges", killed)
    with pytest.raises(RuntimeError):
        update_synonyms(graph_store, names)
    monkeypatch.undo()
    assert edges(graph_store) != all_pairs(graph_store, names.rule)
    update_synonyms(graph_store, names)
    assert edges(graph_store) == all_pairs(graph_store, names.rule)


def remove_logged(graph: GraphStore, entity: str) -> None:
    """As the product's deletes do: the node named in the change log."""
    graph.mark([graph.key(entity)])
    remove(graph, entity)
    graph.touch()


def test_a_held_copy_follows_the_log_and_links_as_a_whole_read(
    graph_store: GraphStore, names: NameIndex
) -> None:
    add(graph_store, "Alpha", "Alpha Gamma", "Delta")
    first = update_synonyms(graph_store, names)
    assert first.reread is None  # nothing held: read whole
    # It linked every name, which logs a full entry: the next one reads whole too.
    assert first.full
    second = update_synonyms(graph_store, names, first.held)
    assert second.reread is None
    held = second.held
    steps = [
        lambda: add(graph_store, "Alpha Beta"),
        lambda: remove_logged(graph_store, "Alpha Beta"),
        lambda: add(graph_store, "Alpha Zeta"),
        lambda: remove_logged(graph_store, "Alpha"),
        lambda: add(graph_store, "Alpha"),
    ]
    for step in steps:
        step()
        update = update_synonyms(graph_store, names, held)
        # Only the nodes the log named since, and the synonymy's own writes, are read again.
        assert update.reread is not None
        assert update.reread <= 4
        assert edges(graph_store) == all_pairs(graph_store, names.rule)
        held = update.held
    assert names.encode.seen == [  # type: ignore[attr-defined]
        "Alpha",
        "Alpha Gamma",
        "Delta",
        "Alpha Beta",
        "Alpha Zeta",
        "Alpha",  # it left the index when its entity went, as a whole read leaves it
    ]
    # A write that cannot name its nodes (a full entry): read whole again.
    graph_store.mark_all()
    graph_store.touch()
    assert update_synonyms(graph_store, names, held).reread is None


def test_a_held_copy_misses_what_the_log_does_not_name(
    graph_store: GraphStore, names: NameIndex
) -> None:
    """Why every write of an entity must name it: the copy is only as true as the log."""
    add(graph_store, "Alpha", "Alpha Beta", "Delta")
    held = update_synonyms(graph_store, names).held
    held = update_synonyms(graph_store, names, held).held  # past the first run's full entry
    remove(graph_store, "Alpha Beta")  # not logged
    add(graph_store, "Alpha Zeta")
    update_synonyms(graph_store, names, held)
    assert names.store.retrieve([_point_of("Alpha Beta")])  # still indexed: the copy holds it
    update_synonyms(graph_store, names)  # read whole: the index follows the graph again
    assert not names.store.retrieve([_point_of("Alpha Beta")])


def _point_of(name: str) -> str:
    from rayweave.graph.synonym_index import _point_id

    return _point_id((name, name))
