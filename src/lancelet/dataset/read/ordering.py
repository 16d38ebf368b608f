"""``order_by``: sorting a scan's rows by columns, each ascending or descending with
its nulls first or last (pylance's ``ColumnOrdering``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lancelet.errors import ArgumentError, SchemaError


@dataclass
class ColumnOrdering:
    """One sort key: a column, its direction, and where its nulls go."""

    column_name: str
    ascending: bool = True
    nulls_first: bool = False


def orderings(value: Any, call: str) -> tuple[ColumnOrdering, ...]:
    """``order_by`` as given to a scan: ColumnOrderings or column names (ascending,
    nulls last)."""
    if value is None:
        return ()
    if isinstance(value, (str, ColumnOrdering)) or not isinstance(value, Sequence):
        raise TypeError(f"{call}: order_by must be a list of ColumnOrdering or names")
    out = []
    for item in value:
        if isinstance(item, str):
            item = ColumnOrdering(item)
        if not isinstance(item, ColumnOrdering) or not isinstance(item.column_name, str):
            raise TypeError(f"{call}: order_by takes ColumnOrdering or column names, not {item!r}")
        out.append(item)
    return tuple(out)


def check_columns(keys: Sequence[ColumnOrdering], known: pa.Schema, where: str) -> None:
    for key in keys:
        if known.get_field_index(key.column_name) < 0:
            raise SchemaError(
                f"{where}: cannot order by {key.column_name!r}: no such column; "
                f"columns are {known.names}"
            )


def sorted_table(table: pa.Table, keys: Sequence[ColumnOrdering], where: str) -> pa.Table:
    """``table``'s rows in the order ``keys`` give; ties keep their scan order."""
    if not keys or table.num_rows <= 1:
        return table
    # Arrow places nulls first or last for all keys at once; a null flag before each key
    # places them key by key.
    columns: dict[str, pa.ChunkedArray] = {}
    sort_keys: list[tuple[str, str]] = []
    for i, key in enumerate(keys):
        values = table[key.column_name]
        flag, value = f"null{i}", f"key{i}"
        columns[flag] = pc.is_null(values, nan_is_null=False)
        columns[value] = values
        sort_keys.append((flag, "descending" if key.nulls_first else "ascending"))
        sort_keys.append((value, "ascending" if key.ascending else "descending"))
    try:
        order = pc.sort_indices(pa.table(columns), sort_keys=sort_keys)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        names = [k.column_name for k in keys]
        raise ArgumentError(f"{where}: cannot order by {names}: {exc}") from exc
    return table.take(order)
