"""Rows of several files of one schema, read as one table.

A compaction reads the live rows of a hundred small files written alike; read one
by one, each file's pages cost their own decoding set-up and calls.  Here each
column's pages of all the files are decoded together where their encodings agree
(see :func:`.v2_1.read.across.take_across`), which is what makes small files cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

import numpy as np
import pyarrow as pa

from lancelet.errors import FileRowOutOfRangeError
from lancelet.file.parallel import map_columns
from lancelet.file.reader import LanceFileReader
from lancelet.file.v2_1.read.across import take_across
from lancelet.file.v2_1.read.fields import LeafColumn

__all__ = ["column_takers", "take_from_files"]


def take_from_files(
    readers: Sequence[LanceFileReader], rows: Sequence[np.ndarray]
) -> pa.Table | None:
    """Rows ``rows[i]`` (sorted, unique) of ``readers[i]``, in that order, as one
    table of the files' schema; None when the files do not qualify (different
    schemas, format 2.0, nested or extension columns, not local): read them one by
    one then."""
    found = column_takers(readers, rows)
    if found is None:
        return None
    takers, costs = found
    schema = readers[0].schema
    if not sum(len(r) for r in rows):
        return schema.empty_table()
    # Columns decode independently, on the pool's threads (the kernels release the GIL).
    arrays = map_columns(lambda take: take(), takers, costs)
    return pa.Table.from_arrays(arrays, schema=schema)


def column_takers(
    readers: Sequence[LanceFileReader], rows: Sequence[np.ndarray]
) -> tuple[list[Callable[[], pa.Array]], list[int]] | None:
    """What :func:`take_from_files` takes, one column at a time: per column of the
    files' schema, a function making its rows (some must be wanted), and what that
    costs (its bytes on disk in all the files); None when the files do not qualify."""
    if not readers or len(readers) != len(rows):
        return None
    schema = readers[0].schema
    columns = [r.plain_leaves() for r in readers if r.schema.equals(schema, check_metadata=True)]
    leaves = [c for c in columns if c is not None]
    if len(leaves) != len(readers):
        return None
    wanted = [np.asarray(r, dtype=np.int64) for r in rows]
    for reader, picked in zip(readers, wanted, strict=True):
        if len(picked) and (int(picked[0]) < 0 or int(picked[-1]) >= reader.num_rows()):
            raise FileRowOutOfRangeError(f"{reader.path}: rows outside 0..{reader.num_rows()}")
    by_column = [[found[c] for found in leaves] for c in range(len(schema))]
    takers: list[Callable[[], pa.Array]] = [
        partial(take_across, column, wanted) for column in by_column
    ]
    return takers, _costs(by_column)


def _costs(by_column: list[list[LeafColumn]]) -> list[int]:
    """Each column's bytes on disk in all the files: what its decoding costs, roughly."""
    return [sum(sum(p.buffer_sizes) for leaf in leaves for p in leaf.info.pages)
            for leaves in by_column]  # fmt: skip
