"""Taking rows of tables whose chunks hold dictionary columns with their own
dictionaries.

Arrow takes across chunks by unifying their dictionaries first, and cannot when a
dictionary holds nulls ("Cannot yet unify dictionaries with nulls"); lancelet reads
each page with its own dictionary, as the file stores it.  Such a take goes through
the decoded values instead, and the result is encoded again: the values are the
same (a null dictionary value and a null index both read as null).
"""

from __future__ import annotations

import pyarrow as pa

from lancelet._arrow import cast as arrow_cast

_UNIFY = "unify dictionaries"


def decoded_type(dtype: pa.DataType) -> pa.DataType:
    """``dtype`` with every dictionary, at any depth, replaced by its value type."""
    if pa.types.is_dictionary(dtype):
        return decoded_type(dtype.value_type)
    if pa.types.is_list(dtype):
        return pa.list_(dtype.value_field.with_type(decoded_type(dtype.value_type)))
    if pa.types.is_large_list(dtype):
        return pa.large_list(dtype.value_field.with_type(decoded_type(dtype.value_type)))
    if pa.types.is_fixed_size_list(dtype):
        item = dtype.value_field.with_type(decoded_type(dtype.value_type))
        return pa.list_(item, dtype.list_size)
    if pa.types.is_struct(dtype):
        return pa.struct([f.with_type(decoded_type(f.type)) for f in dtype])
    return dtype


def take(table: pa.Table, indices: pa.Array) -> pa.Table:
    """``table.take(indices)``, also where its chunks' dictionaries hold nulls."""
    try:
        return table.take(indices)
    except pa.ArrowInvalid as exc:
        if _UNIFY not in str(exc):
            raise
    plain = pa.schema([f.with_type(decoded_type(f.type)) for f in table.schema])
    taken = arrow_cast.cast(table, plain).take(indices)
    return arrow_cast.cast(taken, table.schema)
