"""The datasets the metadata fuzz campaigns mutate, written by lancelet and by pylance.

Each has three fragments over five versions: a Roaring-bitmap deletion file (more than
5,000 rows deleted in fragment 0) and Arrow ones, a dropped column, a struct and a list
column, and a latest version that is a delete, whose transaction a stale delete must
rebase over.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

ROWS = 8500


def table() -> pa.Table:
    k = np.arange(ROWS, dtype=np.int64)
    return pa.table(
        {
            "k": k,
            "s": pa.StructArray.from_arrays(
                [pa.array((k % 1000).astype(np.int32)), pa.array([f"y{i}" for i in k])],
                names=["x", "y"],
            ),
            "l": pa.array([[int(i % 3)] * int(i % 4) for i in k], pa.list_(pa.int32())),
            "d": pa.array(k * 0.5),
            "n": pa.array([None if i % 7 == 0 else f"n{i}" for i in k], pa.string()),
        }
    )


def build(lib: Any, root: Path) -> Path:
    """The dataset at ``root / "ds"``, written by ``lib`` (lancelet or lance)."""
    uri = root / "ds"
    data = table()
    lib.write_dataset(
        data.slice(0, 8000), uri, max_rows_per_file=6000, data_storage_version="2.0"
    )  # v1: fragments 0 and 1
    lib.write_dataset(data.slice(8000), uri, mode="append")  # v2: fragment 2
    lib.dataset(uri).delete("k < 5500 OR k % 10 = 3")  # v3: bitmap, arrow, arrow
    lib.dataset(uri).drop_columns(["d"])  # v4
    lib.dataset(uri).delete("k >= 6000 AND k < 6050")  # v5: fragment 1 again
    return root
