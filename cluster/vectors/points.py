"""Validation and conversion shared by the vector-store adapters.

Everything a caller can get wrong (vector shapes, NaNs, sparse indices, filter values, payload
types) is checked here once, before an engine sees it, so that every adapter rejects the same
input with the same message naming the point or field at fault, and a rejected batch writes
nothing. Engines see plain Python values: lists of floats, JSON payloads, UUID strings.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, get_args

import numpy as np

from rayweave.cluster.errors import InputError, QueryError, VectorStoreError
from rayweave.cluster.types import SparseVector, point_uuid
from rayweave.cluster.vectors.store import (
    DENSE,
    IMAGE,
    CollectionSpec,
    Filter,
    ScoredPoint,
    SearchMode,
    VectorPoint,
    VectorQuery,
)

# Payload key that keeps the caller's chunk id: point ids are UUIDs derived from it.
CHUNK_ID = "chunk_id"
SEARCH_MODES: tuple[str, ...] = get_args(SearchMode)
FUSIONS = ("rrf", "dbsf")
_MAX_SPARSE_INDEX = 2**32 - 1

Scalar = str | int | bool


@dataclass(frozen=True, slots=True)
class FieldMatch:
    """One filter entry: `key` equals `values[0]`, or (any_of) equals one of `values`."""

    key: str
    values: tuple[Scalar, ...]
    any_of: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class PreparedPoint:
    uuid: str
    payload: dict[str, Any]
    dense: list[float] | None
    sparse: SparseVector | None
    image: list[float] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class PreparedQuery:
    mode: SearchMode
    dense: list[float] | None
    sparse: SparseVector | None
    matches: list[FieldMatch]
    limit: int
    prefetch_limit: int
    fusion: str
    exact: bool
    with_payload: bool | tuple[str, ...]

    @property
    def payload_selector(self) -> bool | list[str]:
        """What the engines' `with_payload` takes: everything, or the named fields plus the
        chunk id (which maps the engine's point id back to the caller's)."""
        if self.with_payload is True:
            return True
        return [CHUNK_ID, *(self.with_payload or ())]


# ---------------------------------------------------------------------------------------------
# Filters


def _filter_scalar(key: str, value: object) -> Scalar:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str):
        return str(value)
    raise QueryError(
        f"filter field {key!r}: value {value!r} of type {type(value).__name__} is not supported "
        "(use a str, int or bool, or a list of them for any-of)"
    )


def parse_filter(filter: Filter | None) -> list[FieldMatch]:
    """Check a filter mapping; lists/tuples mean any-of, one type per list."""
    if filter is None:
        return []
    if not isinstance(filter, Mapping):
        raise QueryError(
            f"filter must be a mapping of payload field to value, got {type(filter).__name__}"
        )
    matches: list[FieldMatch] = []
    for key, raw in filter.items():
        if not isinstance(key, str) or not key:
            raise QueryError(f"filter keys must be non-empty strings, got {key!r}")
        if isinstance(raw, list | tuple | set | frozenset | np.ndarray):
            scalars = [_filter_scalar(key, v) for v in raw]
            # Types first: `True == 1`, so removing repeats first would hide a bool among ints.
            kinds = {type(v) for v in scalars}
            values = tuple(dict.fromkeys(scalars))
            if len(kinds) > 1:
                raise QueryError(
                    f"filter field {key!r}: any-of values must share one type, "
                    f"got {tuple(scalars)!r}"
                )
            matches.append(FieldMatch(key, values, any_of=True))
        else:
            matches.append(FieldMatch(key, (_filter_scalar(key, raw),), any_of=False))
    return matches


def require_filter(filter: Filter | None, action: str) -> list[FieldMatch]:
    """Mutations by filter must name at least one field: an empty filter would hit every point."""
    matches = parse_filter(filter)
    if not matches:
        raise InputError(
            f"{action} needs a non-empty filter; use drop() to remove a whole collection"
        )
    return matches


# ---------------------------------------------------------------------------------------------
# Payloads


def json_value(value: object, where: str) -> Any:
    """A JSON-safe copy of a payload value (numpy, tuples and enums converted)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, Enum):
        return json_value(value.value, where)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InputError(f"payload field {where} is {value}; only finite numbers are stored")
        return float(value)
    if isinstance(value, np.generic):
        return json_value(value.item(), where)
    if isinstance(value, np.ndarray):
        return [json_value(v, f"{where}[{i}]") for i, v in enumerate(value.tolist())]
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise InputError(f"payload field {where} has a non-string key {k!r}")
            out[k] = json_value(v, f"{where}.{k}")
        return out
    if isinstance(value, list | tuple):
        return [json_value(v, f"{where}[{i}]") for i, v in enumerate(value)]
    raise InputError(f"payload field {where} has unsupported type {type(value).__name__}")


def json_payload(payload: Mapping[str, Any], where: str) -> dict[str, Any]:
    out = json_value(payload, where)
    if not isinstance(out, dict):
        raise InputError(f"payload of {where} must be a mapping, got {type(payload).__name__}")
    return out


def chunk_id_of(payload: Mapping[str, Any] | None, uuid: object) -> str:
    """The caller's id of a stored point; points written by others fall back to their UUID."""
    if payload:
        cid = payload.get(CHUNK_ID)
        if isinstance(cid, str):
            return cid
    return str(uuid)


def ranked(points: list[ScoredPoint]) -> list[ScoredPoint]:
    """Best first, equal scores by id: engines order ties by storage offsets, which differ
    between two copies of the same points (duplicate passages tie exactly)."""
    return sorted(points, key=lambda p: (-p.score, p.id))


def scored_point(
    uuid: object,
    score: float,
    payload: Mapping[str, Any] | None,
    with_payload: bool | tuple[str, ...],
) -> ScoredPoint:
    """A hit from either engine, under the caller's chunk id."""
    return ScoredPoint(
        id=chunk_id_of(payload, uuid),
        score=float(score),
        payload=dict(payload or {}) if with_payload is not False else {},
    )


def point_vectors(raw: object, sparse_type: type) -> dict[str, np.ndarray | SparseVector]:
    """Named vectors of a retrieved record; `sparse_type` is the engine's sparse vector class."""
    out: dict[str, np.ndarray | SparseVector] = {}
    if not isinstance(raw, dict):
        return out
    for name, value in raw.items():
        if isinstance(value, sparse_type):
            out[name] = SparseVector(
                indices=tuple(value.indices),  # type: ignore[attr-defined]
                values=tuple(value.values),  # type: ignore[attr-defined]
            )
        else:
            out[name] = np.asarray(value, dtype=np.float32)
    return out


# ---------------------------------------------------------------------------------------------
# Vectors


def dense_matrix(
    rows: Sequence[np.ndarray | Sequence[float]], ids: Sequence[str], dim: int | None, name: str
) -> np.ndarray:
    """Stack and check vectors in one pass; errors name the first offending point."""
    try:
        matrix = np.asarray(rows, dtype=np.float32)
    except (ValueError, TypeError):
        expected = dim
        for pid, row in zip(ids, rows, strict=True):
            arr = np.asarray(row)
            if arr.ndim == 1 and expected is None:
                expected = arr.shape[0]
            if arr.ndim != 1 or arr.shape[0] != expected:
                raise InputError(
                    f"point {pid!r}: {name} vector has shape {arr.shape}, expected ({expected},)"
                ) from None
        raise InputError(f"{name} vectors of points {list(ids)[:5]} are not numeric") from None
    if matrix.ndim != 2:
        raise InputError(f"{name} vectors must be 1-D, got an array of shape {matrix.shape}")
    if dim is not None and matrix.shape[1] != dim:
        raise InputError(
            f"point {ids[0]!r}: {name} vector has {matrix.shape[1]} dimensions, "
            f"the collection has {dim}"
        )
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        bad = ids[int(np.argmin(finite))]
        raise InputError(f"point {bad!r}: {name} vector contains NaN or infinity")
    return matrix


def check_sparse(vector: SparseVector, where: str) -> SparseVector:
    """Indices must be unique non-negative uint32 and weights finite (Qdrant rejects the rest).

    Plain Python on purpose: these vectors hold tens of entries, where numpy's per-call
    overhead would dominate an upsert.
    """
    if not isinstance(vector, SparseVector):
        raise InputError(
            f"{where}: sparse vector must be a SparseVector, got {type(vector).__name__}"
        )
    try:
        indices = tuple(int(i) for i in vector.indices)
        values = tuple(float(v) for v in vector.values)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{where}: sparse vector is not numeric: {exc}") from None
    if indices:
        if min(indices) < 0 or max(indices) > _MAX_SPARSE_INDEX:
            raise InputError(f"{where}: sparse indices must lie in [0, 2**32)")
        if len(set(indices)) != len(indices):
            raise InputError(f"{where}: sparse vector has duplicate indices")
        if not all(map(math.isfinite, values)):
            raise InputError(f"{where}: sparse vector contains NaN or infinity")
    return SparseVector(indices=indices, values=values)


def _column(
    points: Sequence[VectorPoint], attr: str, dim: int | None, name: str
) -> list[list[float] | None]:
    present = [(i, getattr(p, attr)) for i, p in enumerate(points) if getattr(p, attr) is not None]
    out: list[list[float] | None] = [None] * len(points)
    if not present:
        return out
    if dim is None:
        raise InputError(
            f"point {points[present[0][0]].id!r} has a {name} vector; the collection has none"
        )
    matrix = dense_matrix([v for _, v in present], [points[i].id for i, _ in present], dim, name)
    for (i, _), row in zip(present, matrix.tolist(), strict=True):
        out[i] = row
    return out


def prepare_points(points: Sequence[VectorPoint], spec: CollectionSpec) -> list[PreparedPoint]:
    """Validate a batch against the collection's shape; nothing is written if any point fails."""
    for p in points:
        if not isinstance(p, VectorPoint):
            raise InputError(f"upsert takes VectorPoint values, got {type(p).__name__}")
        if not isinstance(p.id, str) or not p.id:
            raise InputError(f"point ids must be non-empty strings, got {p.id!r}")
        if p.dense is None and p.sparse is None and p.image is None:
            raise InputError(f"point {p.id!r} has no vector")
    dense = _column(points, "dense", spec.dense_dim, DENSE)
    image = _column(points, "image", spec.image_dim, IMAGE)
    prepared: list[PreparedPoint] = []
    for p, d, img in zip(points, dense, image, strict=True):
        sparse = None
        if p.sparse is not None:
            if not spec.sparse:
                raise InputError(
                    f"point {p.id!r} has a sparse vector; collection {spec.name!r} has none"
                )
            sparse = check_sparse(p.sparse, f"point {p.id!r}")
        payload = json_payload(p.payload, f"point {p.id!r}")
        payload[CHUNK_ID] = p.id
        prepared.append(
            PreparedPoint(uuid=point_uuid(p.id), payload=payload, dense=d, sparse=sparse, image=img)
        )
    return prepared


# ---------------------------------------------------------------------------------------------
# Queries


def _query_vector(
    vector: np.ndarray | Sequence[float] | None, dim: int | None, name: str
) -> list[float]:
    if vector is None:
        raise QueryError(f"a {name} search needs a {name} query vector")
    if dim is None:
        raise QueryError(f"the collection has no {name} vector")
    arr = np.asarray(vector, dtype=np.float32)
    if arr.shape != (dim,):
        raise QueryError(
            f"{name} query vector has shape {arr.shape}, the collection expects ({dim},)"
        )
    if not np.isfinite(arr).all():
        raise QueryError(f"{name} query vector contains NaN or infinity")
    out: list[float] = arr.tolist()
    return out


def prepare_query(query: VectorQuery, spec: CollectionSpec) -> PreparedQuery:
    if not isinstance(query, VectorQuery):
        raise QueryError(f"query must be a VectorQuery, got {type(query).__name__}")
    if query.mode not in SEARCH_MODES:
        raise QueryError(
            f"unknown search mode {query.mode!r}; valid modes: {', '.join(SEARCH_MODES)}"
        )
    if query.fusion not in FUSIONS:
        raise QueryError(f"unknown fusion {query.fusion!r}; valid: {', '.join(FUSIONS)}")
    if query.limit < 1:
        raise QueryError(f"limit must be at least 1, got {query.limit}")
    dense = sparse = None
    if query.mode in ("dense", "hybrid"):
        dense = _query_vector(query.dense, spec.dense_dim, DENSE)
    if query.mode == "image":
        dense = _query_vector(query.dense, spec.image_dim, IMAGE)
    if query.mode in ("sparse", "hybrid"):
        if not spec.sparse:
            raise QueryError(f"collection {spec.name!r} has no sparse vector")
        if query.sparse is None:
            raise QueryError(f"a {query.mode} search needs a sparse query vector")
        try:
            sparse = check_sparse(query.sparse, "sparse query")
        except InputError as exc:
            raise QueryError(str(exc)) from None
    return PreparedQuery(
        mode=query.mode,
        dense=dense,
        sparse=sparse,
        matches=parse_filter(query.filter),
        limit=query.limit,
        prefetch_limit=max(query.prefetch_limit, query.limit),
        fusion=query.fusion,
        exact=query.exact,
        with_payload=query.with_payload,
    )


# ---------------------------------------------------------------------------------------------
# Collection shape


def check_shape(existing: CollectionSpec, wanted: CollectionSpec) -> None:
    """Re-opening with another shape is an error: silently resetting would lose the data."""
    problems = []
    if existing.dense_dim != wanted.dense_dim:
        problems.append(f"dense dim {existing.dense_dim} stored, {wanted.dense_dim} requested")
    if existing.sparse != wanted.sparse:
        problems.append(
            f"sparse vector {'present' if existing.sparse else 'absent'} in the stored collection"
        )
    if existing.image_dim != wanted.image_dim:
        problems.append(f"image dim {existing.image_dim} stored, {wanted.image_dim} requested")
    if problems:
        raise VectorStoreError(
            f"collection {wanted.name!r} exists with another shape: {'; '.join(problems)}. "
            "Use another collection name, or drop it and re-ingest"
        )
