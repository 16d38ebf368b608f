"""The ``nearest=`` argument of a scan: pylance's query dictionary, checked.

pylance passes the dictionary as keywords to ``ScannerBuilder.nearest``, so a key it
does not know, or a missing ``column`` or ``q``, is a ``TypeError``; the values are
then checked as pylance checks them (``ValueError`` for a count out of range, a
query of the wrong size, ...).  What pylance 14 does, measured:

* ``q`` is one vector, or (for a fixed-size vector column) a 2-D batch of them: a
  batch search, whose results carry the query's position as ``query_index``.
  Lists and numpy arrays are taken as float32, as pylance converts them; the vector
  is then rounded to the column's element type (a float16 column is searched with
  the query rounded to float16).
* ``k`` defaults to 10; ``metric`` to l2 (hamming for uint8 vectors).
* ``distance_range`` is ``(lower, upper)``, either None: lower <= d < upper, applied
  before the k nearest are chosen.
* ``nprobes``, ``minimum_nprobes``, ``maximum_nprobes``, ``refine_factor``, ``ef``,
  ``query_parallelism``, ``approx_mode`` and ``search_effort`` only tune an index
  search: checked, and without an index of no effect, as in pylance.

A NaN in the query is refused here (pylance returns no rows: every distance is NaN).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet.errors import VectorQueryError, VectorQueryTypeError
from lancelet.index.vector.distance import HAMMING, L2, metric_named
from lancelet.table.schema import LanceSchema

QUERY_INDEX = "query_index"
DISTANCE = "_distance"
DEFAULT_K = 10

_TUNING = (
    "nprobes",
    "minimum_nprobes",
    "maximum_nprobes",
    "refine_factor",
    "ef",
    "query_parallelism",
    "approx_mode",
    "search_effort",
)
_KEYS = frozenset({"column", "q", "k", "metric", "use_index", "distance_range", *_TUNING})
_ELEMENTS: dict[pa.DataType, np.dtype] = {
    pa.float16(): np.dtype(np.float16),
    pa.float32(): np.dtype(np.float32),
    pa.float64(): np.dtype(np.float64),
    pa.uint8(): np.dtype(np.uint8),
}


@dataclass(frozen=True)
class NearestQuery:
    column: str
    # m x d, in the column's element type.
    queries: np.ndarray
    # Whether q was a batch (the output then starts with query_index).
    batch: bool
    k: int
    metric: str
    lower: float | None
    upper: float | None
    use_index: bool
    # The index-tuning keys given (not None), checked: nprobes, refine_factor, ...
    tuning: Mapping[str, Any] = field(default_factory=dict)
    # Whether the metric was named (else the default, or an index's own metric).
    metric_given: bool = False
    # A list-of-vectors column: the query's vectors are one multivector query.
    multivector: bool = False
    # The names leading to the column: (column,), or a path into structs.
    path: tuple[str, ...] = ()

    @property
    def field_path(self) -> tuple[str, ...]:
        return self.path or (self.column,)

    @property
    def element(self) -> np.dtype:
        return self.queries.dtype


def nearest_query(nearest: Any, schema: pa.Schema, where: str) -> NearestQuery:
    """``nearest`` checked against the dataset's Arrow ``schema``."""
    if not isinstance(nearest, Mapping):
        raise VectorQueryTypeError(f"{where}: nearest must be a dict, not {nearest!r}")
    unknown = sorted(str(key) for key in nearest if key not in _KEYS)
    if unknown:
        raise VectorQueryTypeError(
            f"{where}: nearest has no key {unknown[0]!r}; it takes {sorted(_KEYS)}"
        )
    for key in ("column", "q"):
        if key not in nearest:
            raise VectorQueryTypeError(f"{where}: nearest needs {key!r}")
    column = nearest["column"]
    element, dim, multivector = _vector_column(column, schema, where)
    queries, batch = _query_vectors(nearest["q"], element, dim, f"{where}: nearest column {column}")
    batch = batch and not multivector
    if batch and QUERY_INDEX in schema.names:
        raise VectorQueryError(
            f"{where}: a batch of query vectors adds a {QUERY_INDEX!r} column, which the "
            "dataset already has"
        )
    tuning = _check_tuning(nearest, where)
    lower, upper = _distance_range(nearest.get("distance_range"), where)
    return NearestQuery(
        column=column,
        queries=queries,
        batch=batch,
        k=_k(nearest.get("k"), where),
        metric=_metric(nearest.get("metric"), element, column, where),
        lower=lower,
        upper=upper,
        use_index=_flag(nearest.get("use_index", True), "use_index", where),
        tuning=tuning,
        metric_given=nearest.get("metric") is not None,
        multivector=multivector,
        path=column_path(schema, column, where),
    )


def _vector_column(column: Any, schema: pa.Schema, where: str) -> tuple[np.dtype, int, bool]:
    """The element type and dimension of the vector column ``column``, and whether it
    holds multivectors (a list of vectors per row)."""
    if not isinstance(column, str):
        raise VectorQueryTypeError(f"{where}: nearest column must be a name, not {column!r}")
    found = arrow_field(schema, column_path(schema, column, where))
    dtype = found.type
    storage = dtype.storage_type if isinstance(dtype, pa.BaseExtensionType) else dtype
    multivector = pa.types.is_list(storage) and pa.types.is_fixed_size_list(storage.value_type)
    if multivector:
        storage = storage.value_type
    if not pa.types.is_fixed_size_list(storage):
        raise VectorQueryTypeError(
            f"{where}: nearest column {column!r} must be a vector column; it is {dtype}"
        )
    element = _ELEMENTS.get(storage.value_type)
    if element is None:
        raise VectorQueryError(
            f"{where}: nearest column {column!r} has element type {storage.value_type}; "
            "vectors must be float16, float32, float64 or uint8"
        )
    return element, storage.list_size, multivector


def column_path(schema: pa.Schema, column: str, where: str) -> tuple[str, ...]:
    """The names leading to the vector column ``column``: a top-level column, or a
    dotted path into structs (``data.embedding``), as pylance resolves it."""
    if schema.get_field_index(column) >= 0:
        return (column,)
    parts = tuple(column.split("."))
    fields: Sequence[pa.Field] = list(schema)
    for part in parts:
        found = next((f for f in fields if f.name == part), None)
        if found is None:
            raise VectorQueryError(f"{where}: nearest column {column!r} is not in the dataset")
        fields = list(found.type) if pa.types.is_struct(found.type) else []
    return parts


def arrow_field(schema: pa.Schema, path: Sequence[str]) -> pa.Field:
    """The field at ``path`` (from :func:`column_path`)."""
    found = schema.field(path[0])
    for part in path[1:]:
        found = found.type.field(part)
    return found


def nested_values(column: pa.Array | pa.ChunkedArray, path: Sequence[str]) -> pa.Array:
    """The values at ``path`` below a top-level struct column (null where a struct
    above them is null)."""
    values = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    return pc.struct_field(values, list(path)) if path else values


def vector_field_id(schema: LanceSchema, path: Sequence[str]) -> int:
    """The id of the field at ``path`` in the dataset's Lance schema."""
    parent = -1
    for part in path:
        parent = next(f.id for f in schema.fields if f.parent_id == parent and f.name == part)
    return parent


def _query_vectors(q: Any, element: np.dtype, dim: int, where: str) -> tuple[np.ndarray, bool]:
    """The query vectors as an m x d array of the column's element type, and whether
    ``q`` was a batch."""
    values = _as_array(q, where)
    if values.ndim not in (1, 2) or values.size == 0:
        raise VectorQueryError(f"{where}: q must be a vector or a 2-D batch of vectors")
    batch = values.ndim == 2
    if values.shape[-1] != dim:
        raise VectorQueryError(
            f"{where}: Query vector size {values.shape[-1]} does not match index column size {dim}"
        )
    if np.isnan(values).any():
        raise VectorQueryError(f"{where}: the query vector holds NaN")
    if element == np.uint8:
        whole = np.isfinite(values) & (values == np.round(values))
        if not (whole & (values >= 0) & (values <= 255)).all():
            raise VectorQueryError(
                f"{where}: a query of a uint8 vector column must hold whole numbers 0..255"
            )
    with np.errstate(over="ignore"):
        return np.asarray(values.reshape(-1, dim).astype(element)), batch


# pyarrow's list scalars (it has no common base class for them).
_LIST_SCALARS = (pa.ListScalar, pa.LargeListScalar, pa.FixedSizeListScalar)


def _as_array(q: Any, where: str) -> np.ndarray:
    """``q`` as a float array of one or two dimensions, as pylance reads it: lists and
    numpy arrays as float32, a float Arrow array in its own precision."""
    if isinstance(q, pa.ChunkedArray):
        q = q.combine_chunks()
    if isinstance(q, pa.Scalar):
        q = q.value if isinstance(q, pa.ExtensionScalar) else q
        q = q.values if isinstance(q, _LIST_SCALARS) else None
    if isinstance(q, pa.Array):
        return _arrow_values(q, where)
    if q is None or isinstance(q, (str, bytes)):
        raise VectorQueryTypeError(f"{where}: q must be a vector of numbers, not {q!r}")
    try:
        values = np.asarray(q)
    except ValueError as exc:  # numpy's word for vectors of different lengths
        raise VectorQueryError(f"{where}: All query vectors must have the same length") from exc
    if values.dtype.kind not in "biuf":
        raise VectorQueryTypeError(f"{where}: q must be a vector of numbers, not {q!r}")
    return np.asarray(values.astype(np.float64).astype(np.float32))


def _arrow_values(q: pa.Array, where: str) -> np.ndarray:
    if isinstance(q, pa.ExtensionArray):
        q = q.storage
    if pa.types.is_fixed_size_list(q.type) or pa.types.is_list(q.type):
        rows = [_arrow_values(item.values, where) for item in q]
        if len({len(row) for row in rows}) > 1:
            raise VectorQueryError(f"{where}: All query vectors must have the same length")
        return np.stack(rows) if rows else np.zeros((0, 0), np.float32)
    if q.null_count:
        raise VectorQueryError(f"{where}: the query vector holds nulls")
    if pa.types.is_floating(q.type):
        out: np.ndarray = q.to_numpy(zero_copy_only=False)
        return out
    if pa.types.is_integer(q.type):
        return np.asarray(q.to_numpy(zero_copy_only=False).astype(np.float32))
    raise VectorQueryTypeError(f"{where}: q must hold numbers, not {q.type}")


def _k(k: Any, where: str) -> int:
    if k is None:
        return DEFAULT_K
    value = _integer(k, "k", where)
    if value <= 0:
        raise VectorQueryError(f"{where}: nearest k must be > 0, not {k}")
    return value


def _integer(value: Any, name: str, where: str) -> int:
    try:
        return operator.index(value)
    except TypeError as exc:
        raise VectorQueryTypeError(
            f"{where}: nearest {name} must be an integer, not {value!r}"
        ) from exc


def _metric(name: Any, element: np.dtype, column: str, where: str) -> str:
    uint8 = element == np.uint8
    if name is None:
        return HAMMING if uint8 else L2
    metric = metric_named(name) if isinstance(name, str) else None
    if metric is None:
        raise VectorQueryError(
            f"{where}: nearest metric {name!r} is not supported (l2, cosine, dot, hamming)"
        )
    if (metric == HAMMING) != uint8:
        raise VectorQueryError(
            f"{where}: metric {metric} does not take column {column!r}'s {element} vectors"
            " (hamming is for uint8 vectors, the others for floats)"
        )
    return metric


def _check_tuning(nearest: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The index-tuning keys checked as pylance does (they change no exact search);
    those given, by name."""
    counts = {n: nearest.get(n) for n in _TUNING[:5] if nearest.get(n) is not None}
    values = {name: _integer(value, name, where) for name, value in counts.items()}
    lowest = {"nprobes": 1, "minimum_nprobes": 0, "maximum_nprobes": 0, "refine_factor": 1}
    lowest["ef"] = 1
    if nearest.get("search_effort") is not None:
        lowest.pop("nprobes")  # pylance ignores nprobes when an effort is given
    for name, value in values.items():
        if name in lowest and value < lowest[name]:
            raise VectorQueryError(f"{where}: nearest {name} must be >= {lowest[name]}")
    low, high = values.get("minimum_nprobes"), values.get("maximum_nprobes")
    if low is not None and high is not None and low > high:
        raise VectorQueryError(f"{where}: minimum_nprobes must be <= maximum_nprobes")
    parallelism = nearest.get("query_parallelism")
    if parallelism is not None and _integer(parallelism, "query_parallelism", where) < -1:
        raise VectorQueryError(f"{where}: nearest query_parallelism must be >= -1")
    if nearest.get("approx_mode", "normal") not in ("fast", "normal", "accurate"):
        raise VectorQueryError(f"{where}: approx_mode must be 'fast', 'normal' or 'accurate'")
    effort = nearest.get("search_effort")
    if effort is not None and not (isinstance(effort, (int, float)) and 0 <= effort <= 1):
        raise VectorQueryError(f"{where}: search_effort must be finite and in [0, 1]")
    given = {name: nearest[name] for name in _TUNING if nearest.get(name) is not None}
    return {**given, **values}


def _distance_range(value: Any, where: str) -> tuple[float | None, float | None]:
    if value is None:
        return None, None
    if not isinstance(value, tuple) or len(value) != 2:
        raise VectorQueryError(f"{where}: distance_range must be a tuple (lower, upper)")
    bounds = []
    for bound in value:
        if bound is not None and not isinstance(bound, (int, float)):
            raise VectorQueryTypeError(f"{where}: distance_range bounds must be numbers")
        bounds.append(None if bound is None else float(bound))
    if any(b is not None and math.isnan(b) for b in bounds):
        raise VectorQueryError(f"{where}: a distance_range bound is NaN")
    return bounds[0], bounds[1]


def _flag(value: Any, name: str, where: str) -> bool:
    if not isinstance(value, bool):
        raise VectorQueryTypeError(f"{where}: nearest {name} must be a bool, not {value!r}")
    return value
