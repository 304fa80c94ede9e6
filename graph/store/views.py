"""The search page's graph view: a capped neighbourhood of typed nodes and edges."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rayweave.cluster.errors import InputError
from rayweave.graph.schema import NodeLabel, RelType
from rayweave.graph.store.connection import StoreConnection
from rayweave.graph.store.cypher import NEIGHBOUR_IN, NEIGHBOUR_OUT, NEIGHBOUR_START

__all__ = ["GraphViews"]

_STRUCTURE = frozenset({RelType.CHUNK_OF.value, RelType.HAS_CHILD.value, RelType.NEXT.value})


def _view_node(row: Mapping[str, Any], *, start: bool) -> dict[str, Any]:
    label = str(row["label"])
    if label == NodeLabel.DOCUMENT.value:
        name = row.get("title") or row.get("source") or ""
    elif label in (NodeLabel.SECTION.value, NodeLabel.PROPOSITION.value):
        name = row.get("text") or ""
    else:
        name = row.get("name") or row.get("title") or ""
    return {
        "label": label,
        "name": str(name)[:120],
        "source": row.get("source"),
        "start": start,
    }


class GraphViews(StoreConnection):
    """Neighbourhoods for display, not for retrieval (that is `traversal`)."""

    def neighbourhood(
        self, node_ids: Sequence[str], *, depth: int = 1, limit: int | None = None
    ) -> dict[str, Any]:
        """Nodes and typed relationships within `depth` hops of `node_ids` (chunk, document or
        entity ids; a summary chunk id resolves to its Document), for the search page's graph
        view. Aliases and conversation nodes are left out; at most `limit` nodes come back
        (`settings.neighbourhood_max_nodes` by default), the start nodes first."""
        if depth < 1 or depth > 3:
            raise InputError(f"neighbourhood depth must be 1-3, got {depth}")
        cap = limit or self.settings.neighbourhood_max_nodes
        nodes: dict[str, dict[str, Any]] = {}
        edges: dict[tuple[str, str, str], dict[str, str]] = {}
        frontier = [self.key(i) for i in dict.fromkeys(node_ids) if i]
        for row in self.read(NEIGHBOUR_START, {"keys": frontier}, op="neighbourhood"):
            nodes.setdefault(row["key"], _view_node(row, start=True))
        frontier = list(nodes)
        for _ in range(depth):
            if not frontier or len(nodes) >= cap:
                break
            frontier = self._hop(frontier, nodes, edges, cap)
        return {
            "nodes": [{**n, "id": self._strip(k)} for k, n in nodes.items()],
            "edges": [e for (src, _, dst), e in edges.items() if src in nodes and dst in nodes],
        }

    def _hop(
        self,
        frontier: list[str],
        nodes: dict[str, dict[str, Any]],
        edges: dict[tuple[str, str, str], dict[str, str]],
        cap: int,
    ) -> list[str]:
        """One hop out of and into `frontier`, adding to `nodes` and `edges`; returns the keys
        reached for the first time."""
        reached: list[str] = []
        # Structure (chunks -> their document) comes in, entities go out: each direction
        # gets its share of the room left, so neither crowds the other out of the view.
        for share, query in ((2, NEIGHBOUR_IN), (1, NEIGHBOUR_OUT)):
            room = len(nodes) + max(0, cap - len(nodes)) // share
            rows = self.read(query, {"keys": frontier, "limit": cap * 4}, op="neighbourhood")
            rows.sort(key=lambda r: r["type"] not in _STRUCTURE)  # the outline first
            for row in rows:
                if row["key"] not in nodes:
                    if len(nodes) >= room:
                        continue
                    nodes[row["key"]] = _view_node(row, start=False)
                    reached.append(row["key"])
                src, dst = (row["from"], row["key"]) if row["out"] else (row["key"], row["from"])
                edges.setdefault(
                    (src, row["type"], dst),
                    {"source": self._strip(src), "target": self._strip(dst), "type": row["type"]},
                )
        return reached

    def _strip(self, key: str) -> str:
        return key.split(":", 1)[1] if key.startswith(f"{self.ns}:") else key
