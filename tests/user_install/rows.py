"""The rows of the user-install smoke check, computed from formulas.

Shared by ``make_fixture.py`` (which has pylance write them) and ``smoke.py`` (which
checks what lancelet reads against the formulas, not against the fixture).  The
columns are chosen so that pylance's 2.2 writer picks each of its default encodings:
bit packing, run-length, constant and all-null pages, dictionaries (values
lz4-compressed), FSST strings, full-zip pages for wide values, nested lists and
structs, and fixed-size vectors.
"""

from __future__ import annotations

import datetime
from decimal import Decimal

import pyarrow as pa

ROWS = 2000


def rows(start: int = 0, stop: int = ROWS) -> pa.Table:
    idx = range(start, stop)
    words = ["alpha", "beta", "gamma", "delta"]
    epoch = datetime.datetime(2024, 1, 1)
    return pa.table(
        {
            "id": pa.array(list(idx), pa.int64()),
            "small": pa.array([i % 100 for i in idx], pa.int32()),
            "runs": pa.array([i // 400 for i in idx], pa.int64()),
            "same": pa.array([7] * len(idx), pa.int16()),
            "nothing": pa.array([None] * len(idx), pa.float64()),
            "ratio": pa.array([None if i % 13 == 0 else i / 8 for i in idx], pa.float64()),
            "flag": pa.array([i % 3 == 0 for i in idx]),
            "word": pa.array([words[i % 4] for i in idx]),
            "text": pa.array([f"row number {i} of the smoke check" for i in idx]),
            "blob": pa.array([i.to_bytes(4, "little") * 75 for i in idx], pa.binary()),
            "when": pa.array(
                [epoch + datetime.timedelta(minutes=i) for i in idx], pa.timestamp("us")
            ),
            "price": pa.array([Decimal(i) / 100 for i in idx], pa.decimal128(12, 2)),
            "tags": pa.array(
                [None if i % 7 == 0 else [words[j % 4] for j in range(i % 4)] for i in idx],
                pa.list_(pa.string()),
            ),
            "point": pa.array(
                [{"x": i, "y": None if i % 5 == 0 else -i} for i in idx],
                pa.struct([("x", pa.int64()), ("y", pa.int64())]),
            ),
            "vec": pa.array(
                [[float(i), float(i % 10), 0.5, -1.0] for i in idx], pa.list_(pa.float32(), 4)
            ),
        }
    )
