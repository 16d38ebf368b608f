"""Datasets pylance indexes, with the rows its indices hold.

Every column of one table (several fragments, nulls, NaN, signed zeros) gets a BTREE
and a BITMAP index (one dataset per index type, as pylance indexes a column once).
Rows are deleted before the indices are built (they are not indexed) and after (they
stay in the index: the planner drops them later), so the rows an index holds are the
ones of the version it was built on.
"""

from __future__ import annotations

import datetime
import decimal
import os
from dataclasses import dataclass
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa

COLUMNS = ("i", "f", "s", "d", "ts", "b", "dec")


def table(rows: int = 12_000, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    nulls = rng.random(rows) < 0.05
    ints = rng.integers(-50, 250, rows)
    special = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, -np.nan, 1.5, -2.25])
    floats = np.where(
        rng.random(rows) < 0.3, special[rng.integers(0, len(special), rows)], ints / 4
    )
    strings = np.array([f"k{v:03d}" if v % 7 else f"é{v}" for v in ints], dtype=object)
    base = datetime.date(2000, 1, 1)
    return pa.table(
        {
            "i": pa.array(ints, pa.int64(), mask=nulls),
            "f": pa.array(floats, pa.float64(), mask=np.roll(nulls, 1)),
            "s": pa.array(strings, pa.string(), mask=np.roll(nulls, 2)),
            "d": pa.array(
                [base + datetime.timedelta(days=int(v)) for v in ints % 90],
                pa.date32(),
                mask=np.roll(nulls, 5),
            ),
            "ts": pa.array((ints % 60) * 1_000_000, pa.timestamp("us"), mask=np.roll(nulls, 3)),
            "b": pa.array(ints % 3 == 0, pa.bool_(), mask=np.roll(nulls, 4)),
            "dec": pa.array(
                [decimal.Decimal(int(v) % 40) / 4 for v in ints], pa.decimal128(10, 2), mask=nulls
            ),
        }
    )


@dataclass(frozen=True)
class Indexed:
    path: Path
    kind: str  # "BTREE" | "BITMAP"
    version: str  # the dataset's data storage version
    indexed: pa.Table  # the rows the indices hold, with _rowaddr

    def dataset(self) -> lance.LanceDataset:
        return lance.dataset(str(self.path))

    def index_dir(self, column: str) -> Path:
        ds = self.dataset()
        uuid = next(i["uuid"] for i in ds.list_indices() if i["fields"] == [column])
        return self.path / "_indices" / uuid


def build(root: Path, kind: str, version: str) -> Indexed:
    path = root / f"{kind}-{version}"
    ds = lance.write_dataset(
        table(), str(path), data_storage_version=version, max_rows_per_file=5000
    )
    ds.delete("i = 7")
    indexed = ds.to_table(with_row_address=True)
    for column in COLUMNS:
        ds.create_scalar_index(column, kind)
    ds = lance.dataset(str(path))
    ds.delete("i = 9 OR i = 11")
    assert sorted(os.listdir(path / "_indices"))  # one directory per index
    return Indexed(path, kind, version, indexed)
