"""A scan's output gathered into whole batches."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

__all__ = ["coalesced", "has_dictionary"]


def has_dictionary(dtype: pa.DataType) -> bool:
    """Whether ``dtype`` is or holds dictionaries (whose chunks may not be joined)."""
    if pa.types.is_dictionary(dtype):
        return True
    return any(has_dictionary(dtype.field(i).type) for i in range(dtype.num_fields))


def coalesced(tables: Iterator[pa.Table], size: int) -> Iterator[pa.Table]:
    """``tables``' rows in order, as tables of whole multiples of ``size`` rows (the
    last of any size) whose chunks are not shorter than ``size`` on average: batches
    cut from them are ``size`` rows long."""
    pending: list[pa.Table] = []
    held = 0
    for table in tables:
        pending.append(table)
        held += table.num_rows
        if held < size:
            continue
        whole = _joined(pending, size)
        cut = held - held % size
        yield whole.slice(0, cut)
        pending, held = [whole.slice(cut)], held - cut
    if held:
        yield _joined(pending, size)


def _joined(tables: list[pa.Table], size: int) -> pa.Table:
    """The tables as one, its chunks joined when they are short (a filter's output
    comes in chunks of the rows each of its batches kept)."""
    names = tables[0].column_names
    # Ranges read stage by stage or at once hold the same columns, maybe in another order.
    whole = pa.concat_tables([t if t.column_names == names else t.select(names) for t in tables])
    chunks = max((column.num_chunks for column in whole.columns), default=1)
    return whole.combine_chunks() if whole.num_rows < chunks * size else whole
