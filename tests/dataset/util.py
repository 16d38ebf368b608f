"""Shared helpers for dataset tests: data, and comparisons against pylance."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa

import lancelet as ll
from tests.storage import file_tree


def keyed_table(start: int, stop: int, seed: int = 0) -> pa.Table:
    """Rows keyed by ``k`` with a mix of types and nulls, deterministic per range."""
    rng = np.random.default_rng(seed + start)
    n = stop - start
    k = np.arange(start, stop, dtype=np.int64)
    values = rng.normal(size=n)
    null = rng.random(n) < 0.1
    return pa.table(
        {
            "k": k,
            "v": pa.array(values, pa.float64(), mask=null),
            "s": pa.array([f"row-{i}" for i in k], pa.string(), mask=rng.random(n) < 0.05),
            "tags": pa.array([[int(i % 3)] * int(i % 4) for i in k], pa.list_(pa.int32())),
            "pt": pa.array(
                [{"x": float(i), "y": int(i) * 2} for i in k],
                pa.struct([("x", pa.float64()), ("y", pa.int64())]),
            ),
        }
    )


def assert_versions_match(uri: str, expected: dict[int, pa.Table]) -> None:
    """pylance and lancelet both read exactly ``expected`` at every version."""
    for version, want in expected.items():
        theirs = lance.dataset(uri, version=version)
        theirs.validate()
        got_theirs = theirs.to_table()
        got_ours = ll.dataset(uri, version=version).to_table()
        assert got_theirs.equals(want), f"pylance differs at version {version}"
        assert got_ours.equals(want), f"lancelet differs at version {version}"


def read_by_both(uri: str) -> pa.Table:
    """The latest version as pylance reads it (after its validate()), with lancelet
    reading exactly the same."""
    theirs = lance.dataset(uri)
    theirs.validate()
    table = theirs.to_table()
    assert ll.dataset(uri).to_table().equals(table)
    return table


def without_every_ninth(table: pa.Table) -> pa.Table:
    """The rows left by ``delete("k % 9 = 0")``."""
    return table.filter(pa.array(table["k"].to_numpy() % 9 != 0))


def dataset_with_holes(path: str, rows: int) -> str:
    """``keyed_table(0, rows)`` in fragments of 1,000 rows, every ninth row deleted."""
    ll.write_dataset(keyed_table(0, rows), path, max_rows_per_file=1000)
    ll.dataset(path).delete("k % 9 = 0")
    return path


def snapshot(uri: str) -> dict[str, bytes]:
    """Every file of a dataset and its bytes: a failed operation must leave it equal."""
    return file_tree(uri)
