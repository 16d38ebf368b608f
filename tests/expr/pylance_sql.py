"""Running one SQL expression in pylance and in lancelet over the same table, for the
tests of the scalar functions: the values and the Arrow type of a projection
(``to_table(columns={"r": sql})``), and the rows a filter keeps."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa

import lancelet
from lancelet.errors import FilterError
from tests.versions import STORAGE_VERSION


@dataclass(frozen=True)
class Pair:
    theirs: lance.LanceDataset
    ours: lancelet.LanceDataset


def write_pair(table: pa.Table, root: Path) -> Pair:
    """``table`` written by pylance and by lancelet under ``root``."""
    theirs = lance.write_dataset(table, root / "lance", data_storage_version=STORAGE_VERSION)
    ours = lancelet.write_dataset(table, root / "lancelet", data_storage_version=STORAGE_VERSION)
    return Pair(theirs, ours)


@dataclass(frozen=True)
class Outcome:
    """A result (values and type) or the error raised."""

    values: Any = None
    type: pa.DataType | None = None
    error: BaseException | None = None


def project(dataset: Any, sql: str) -> Outcome:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = dataset.to_table(columns={"r": sql})
    except Exception as e:
        return Outcome(error=e)
    return Outcome(table["r"].to_pylist(), table.schema.field("r").type)


def kept(dataset: Any, sql: str) -> Outcome:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = dataset.to_table(filter=sql, columns=["id"])
    except Exception as e:
        return Outcome(error=e)
    return Outcome(sorted(table["id"].to_pylist()))


def same(a: Any, b: Any) -> bool:
    """Equal values: a NaN equal to a NaN of the same sign (which orders it first or
    last in a comparison), -0.0 distinct from 0.0."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b) and math.copysign(1, a) == math.copysign(1, b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(type(a) is type(b) and a == b)


def assert_same_projection(pair: Pair, sql: str) -> None:
    """Both compute ``sql`` to the same values of the same type, or both fail."""
    theirs, ours = project(pair.theirs, sql), project(pair.ours, sql)
    if theirs.error is not None:
        assert ours.error is not None, (
            f"{sql}: pylance fails ({theirs.error}), lancelet gives {ours}"
        )
        assert isinstance(ours.error, ValueError), f"{sql}: {ours.error!r}"
        return
    assert ours.error is None, f"{sql}: pylance gives {theirs.values}, lancelet fails: {ours.error}"
    assert ours.type == theirs.type, f"{sql}: type {ours.type}, pylance's {theirs.type}"
    assert same(ours.values, theirs.values), f"{sql}: {ours.values} != pylance's {theirs.values}"


def assert_same_filter(pair: Pair, sql: str) -> None:
    """Both keep the same rows for the filter ``sql``, or both fail."""
    theirs, ours = kept(pair.theirs, sql), kept(pair.ours, sql)
    if theirs.error is not None:
        assert ours.error is not None, (
            f"{sql}: pylance fails ({theirs.error}), lancelet keeps {ours}"
        )
        return
    assert ours.error is None, f"{sql}: pylance keeps {theirs.values}, lancelet fails: {ours.error}"
    assert ours.values == theirs.values, f"{sql}: {ours.values} != pylance's {theirs.values}"


def assert_refused(pair: Pair, sql: str, message: str) -> None:
    """lancelet refuses ``sql`` in a projection and a filter, saying ``message``."""
    for outcome in (project(pair.ours, sql), kept(pair.ours, f"({sql}) IS NULL")):
        assert isinstance(outcome.error, FilterError), f"{sql}: {outcome}"
        assert message in str(outcome.error), f"{sql}: {outcome.error}"


def edge_table() -> pa.Table:
    """Columns of most types, with NULLs and edge values (empty, NaN, -0.0, extremes,
    non-ASCII text, dates before 1970 and in a year with a leap day)."""
    import datetime
    import decimal

    stamps = [
        datetime.datetime(2020, 1, 1, 12, 30, 45, 123456),
        None,
        datetime.datetime(1969, 12, 31, 23, 59, 59, 999999),
        datetime.datetime(2000, 2, 29),
        datetime.datetime(2024, 12, 31, 23, 0),
        datetime.datetime(1900, 1, 1),
    ]
    return pa.table(
        {
            "id": pa.array(range(6), pa.int64()),
            "s": ["apple", None, "", "Straße ÄB", "  pad  ", "a,b,,c"],
            "ls": pa.array(["ab", None, "", "e\u0301x", "👍🏽a", "x"], pa.large_string()),
            "f": [1.5, None, -2.5, float("nan"), -0.0, 2.675],
            "f32": pa.array([0.5, None, -1.5, 2.5, 1e30, -0.0], pa.float32()),
            "i": pa.array([1, None, -7, 0, 2**31 - 1, -(2**31)], pa.int32()),
            "i8": pa.array([1, None, -7, 0, 127, -128], pa.int8()),
            "u": pa.array([1, None, 7, 0, 255, 3], pa.uint8()),
            "dec": pa.array(
                [
                    decimal.Decimal(v) if v else None
                    for v in ("1.25", None, "-2.50", "0.00", "999.99", "-0.05")
                ],
                pa.decimal128(5, 2),
            ),
            "d": pa.array(
                [
                    datetime.date(2020, 1, 1),
                    None,
                    datetime.date(1969, 12, 31),
                    datetime.date(2000, 2, 29),
                    datetime.date(2024, 12, 29),
                    datetime.date(1, 1, 1),
                ],
                pa.date32(),
            ),
            "ts": pa.array(stamps, pa.timestamp("us")),
            "tz": pa.array(stamps, pa.timestamp("us", "America/New_York")),
            "l": pa.array([[1, 2, 3], None, [], [None, 4], [5], [1, 2]], pa.list_(pa.int64())),
            "b": pa.array([b"ab", None, b"", b"\xff\x00", b"x", b"yz"]),
            "st": pa.array(
                [
                    {"a": 1, "b": "x"},
                    None,
                    {"a": None, "b": "y"},
                    {"a": 3, "b": None},
                    {"a": 4, "b": "z"},
                    {"a": 5, "b": ""},
                ],
                pa.struct([("a", pa.int64()), ("b", pa.string())]),
            ),
        }
    )
