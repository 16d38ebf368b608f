"""Checks for fuzzing Lance data files: read a fixture's ``data.lance`` as a user would.

Each check reads through all three of the reader's paths, so a mutant is caught
wherever it misleads the reader: the whole file (``read_all().to_table()``, page by
page), a row range streamed as batches that straddle pages (``read_range`` then
``to_batches``, which concatenates pages), and a handful of scattered rows
(``take_rows``).  The three results are stacked into one table, so the harness
compares and validates all of them at once.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from lancelet.file import LanceFileReader

DATA = "data.lance"
BATCH_ROWS = 777


def rows_to_take(num_rows: int) -> np.ndarray:
    """A few rows spread over the file (first, last, and some between)."""
    if num_rows == 0:
        return np.zeros(0, dtype=np.int64)
    picks = np.array([0, num_rows // 7, num_rows // 3, num_rows // 2 + 1, num_rows - 1])
    return np.unique(np.clip(picks, 0, num_rows - 1))


def read_three_ways(root: Path) -> pa.Table:
    reader = LanceFileReader(root / DATA)
    n = reader.num_rows()
    whole = reader.read_all().to_table()
    start, count = n // 5, n // 2
    batches = reader.read_range(start, count, batch_size=BATCH_ROWS).to_batches()
    ranged = pa.Table.from_batches(list(batches), schema=whole.schema)
    taken = reader.take_rows(rows_to_take(n)).to_table()
    return pa.concat_tables([whole, ranged, taken])
