"""A table model for the S3 tests: rows keyed by ``k``, kept as a dict so the expected
contents of every version are computed in Python, independently of both libraries."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pyarrow as pa

Rows = dict[int, tuple[str, float]]
SCHEMA = pa.schema([("k", pa.int64()), ("s", pa.string()), ("x", pa.float64())])


def make(keys: Iterable[int], tag: str = "v") -> Rows:
    return {k: (f"{tag}-{k}", k / 4) for k in keys}


def table(rows: Rows) -> pa.Table:
    keys = sorted(rows)
    return pa.table(
        {"k": keys, "s": [rows[k][0] for k in keys], "x": [rows[k][1] for k in keys]},
        schema=SCHEMA,
    )


def of(read: pa.Table) -> Rows:
    """A table read back, as rows (order ignored; a repeated key is an error)."""
    out: Rows = {}
    for k, s, x in zip(*(read.column(c).to_pylist() for c in ("k", "s", "x")), strict=True):
        assert k not in out, f"key {k} appears twice"
        out[k] = (s, x)
    return out


def without(rows: Rows, drop: Callable[[int], bool]) -> Rows:
    return {k: v for k, v in rows.items() if not drop(k)}
