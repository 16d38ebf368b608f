"""The check of the structural fuzz campaign: read a fixture dataset folder (see
:mod:`tests.fuzz.structural_fixture`) the ways a user would.

Through ``LanceFileReader`` on the data file: the whole file (page by page), a row
range streamed as batches that straddle the page boundary, and scattered rows; through
``lancelet.dataset``: a take in another order, and a scan of sub-fields with a filter
(a scan of everything would repeat the whole file's read).
Each result becomes one list-of-struct value of a one-row table, so the harness
compares and validates all of them at once.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

import lancelet
from lancelet.file import LanceFileReader
from tests.fuzz.structural_fixture import DATA, PAGE_ROWS

ROWS = np.array([0, 3, 17, PAGE_ROWS[0] - 1, PAGE_ROWS[0], PAGE_ROWS[0] + 150], dtype=np.int64)
BATCH_ROWS = 333


def _cell(table: pa.Table) -> pa.Array:
    # Top-level names are unguarded (nothing checks a name), and a struct type holds
    # its fields' names: number the columns instead.
    table = table.rename_columns([f"c{i}" for i in range(table.num_columns)])
    values = table.combine_chunks().to_struct_array()
    if isinstance(values, pa.ChunkedArray):
        values = pa.concat_arrays(values.chunks) if values.num_chunks else pa.array([], values.type)
    return pa.ListArray.from_arrays(pa.array([0, len(values)], pa.int32()), values)


def read_everything(root: Path) -> pa.Table:
    reader = LanceFileReader(root / DATA)
    whole = reader.read_all().to_table()
    start = PAGE_ROWS[0] - 400
    batches = reader.read_range(start, 600, batch_size=BATCH_ROWS).to_batches()
    ranged = pa.Table.from_batches(list(batches), schema=whole.schema)
    taken = reader.take_rows(ROWS).to_table()
    ds = lancelet.dataset(str(root))
    picked = ds.take(ROWS[::-1].tolist())
    projected = ds.to_table(columns=["st.y", "l", "vp.s", "lb"], filter="i > 1000")
    parts = {
        "whole": whole,
        "ranged": ranged,
        "taken": taken,
        "picked": picked,
        "projected": projected,
    }
    return pa.table({name: _cell(table) for name, table in parts.items()})
