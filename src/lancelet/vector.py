"""Building tables of vectors (pylance's ``lance.vector``).

Only :func:`vec_to_table` is here: vector search and the index training helpers of
pylance's module are outside lancelet's scope.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from lancelet.errors import ArgumentError, UnsupportedOptionError


def vec_to_table(
    data: dict[Any, Any] | list[Any] | np.ndarray,
    names: str | Sequence[str] | None = None,
    ndim: int | None = None,
    check_ndim: bool = True,
) -> pa.Table:
    """A table with one ``fixed_size_list<float32>[ndim]`` column of vectors.

    ``data`` is a dict (keys become an ``id`` column beside the vectors), a
    list of vectors, or a 2-D numpy array with one vector per row.  ``names`` names
    the columns: two for a dict (default ``["id", "vector"]``), one otherwise
    (default ``"vector"``).  ``ndim`` is inferred when omitted.  Every vector must
    have the same length whatever ``check_ndim`` says: vectors of other lengths
    cannot be laid out as fixed-size lists.
    """
    if isinstance(data, dict):
        column_names = _names(names, ["id", "vector"])
        ids = pa.array(list(data.keys()))
        return pa.Table.from_arrays([ids, _vectors(list(data.values()), ndim)], column_names)
    if isinstance(data, (list, np.ndarray)):
        return pa.Table.from_arrays([_vectors(data, ndim)], _names(names, ["vector"]))
    raise UnsupportedOptionError(
        f"vec_to_table takes a dict, a list or a numpy array of vectors, not {type(data).__name__}"
    )


def _names(names: str | Sequence[str] | None, default: list[str]) -> list[str]:
    chosen = default if names is None else [names] if isinstance(names, str) else list(names)
    if len(chosen) != len(default):
        raise ArgumentError(
            f"vec_to_table: names must hold {len(default)} column name(s) for this data, "
            f"got {chosen!r}"
        )
    return chosen


def _vectors(rows: Sequence[Any] | np.ndarray, ndim: int | None) -> pa.FixedSizeListArray:
    if isinstance(rows, np.ndarray) and rows.dtype == object:
        rows = list(rows)  # an array of per-row arrays
    try:
        matrix = np.asarray(rows, dtype=np.float32)
    except ValueError as exc:
        raise ArgumentError(
            f"vec_to_table: the vectors do not all have one length ({exc})"
        ) from exc
    if matrix.ndim != 2:
        raise ArgumentError(
            f"vec_to_table: expected a sequence of vectors, got data of shape {matrix.shape}"
        )
    if ndim is not None and matrix.shape[1] != ndim:
        raise ArgumentError(
            f"vec_to_table: expected {ndim} dimensions but the vectors have {matrix.shape[1]}"
        )
    return pa.FixedSizeListArray.from_arrays(pa.array(matrix.ravel()), matrix.shape[1])
