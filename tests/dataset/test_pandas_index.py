"""pandas DataFrames are written as pylance writes them: through
``pyarrow.Table.from_pandas`` with the schema given, so an index other than a default
range is kept as columns (``__index_level_0__`` when unnamed) and every index is
described in the schema's pandas metadata, from which ``to_pandas`` rebuilds it.

Each case writes the same frame with both libraries and compares what they read back.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import lance
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.errors import LanceletError

FRAMES: dict[str, Callable[[], pd.DataFrame]] = {
    "default range": lambda: pd.DataFrame({"a": [1, 2, 3], "s": ["x", "y", "z"]}),
    "stepped range": lambda: pd.DataFrame({"a": [1, 2, 3]}, index=pd.RangeIndex(10, 16, 2)),
    "named range": lambda: pd.DataFrame({"a": [1, 2]}, index=pd.RangeIndex(2, name="r")),
    "integer index": lambda: pd.DataFrame({"a": [1, 2, 3]}, index=[5, 3, 9]),
    "named string index": lambda: pd.DataFrame(
        {"a": [1.5, 2.5]}, index=pd.Index(["p", "q"], name="key")
    ),
    "multi index": lambda: pd.DataFrame(
        {"a": [1, 2]},
        index=pd.MultiIndex.from_tuples([(1, "u"), (2, "v")], names=["i", None]),
    ),
    "filtered rows": lambda: pd.DataFrame({"a": np.arange(8)}).query("a % 3 != 1"),
    "datetime index": lambda: pd.DataFrame(
        {"a": [1, 2]}, index=pd.DatetimeIndex(["2024-01-01", "2024-02-01"], name="when")
    ),
    "empty frame": lambda: pd.DataFrame({"a": pd.Series([], dtype="int64")}, index=[]),
}


def _both(tmp_path: Path, call: Callable[[ModuleType, Path], Any]) -> list[Any]:
    out = []
    for lib, name in ((lance, "p"), (ll, "l")):
        try:
            out.append(call(lib, tmp_path / name))
        except Exception as exc:
            out.append(exc)
    return out


def _read(lib: ModuleType, uri: Path) -> tuple[pa.Table, pd.DataFrame]:
    ds = lib.dataset(uri)
    return ds.to_table(), ds.to_pandas()


def _assert_same_reads(theirs: Any, ours: Any) -> None:
    assert not isinstance(theirs, BaseException), theirs
    assert not isinstance(ours, BaseException), ours
    (their_table, their_frame), (our_table, our_frame) = theirs, ours
    assert our_table.equals(their_table, check_metadata=True)
    pd.testing.assert_frame_equal(our_frame, their_frame)
    pd.testing.assert_frame_equal(our_table.to_pandas(), their_table.to_pandas())


@pytest.mark.parametrize("frame", list(FRAMES))
def test_written_frame_reads_back_as_pylance(tmp_path: Path, frame: str) -> None:
    def write(lib: ModuleType, uri: Path) -> tuple[pa.Table, pd.DataFrame]:
        lib.write_dataset(FRAMES[frame](), uri)
        return _read(lib, uri)

    theirs, ours = _both(tmp_path, write)
    _assert_same_reads(theirs, ours)


@pytest.mark.parametrize("frame", ["default range", "integer index", "named string index"])
def test_appended_frames_as_pylance(tmp_path: Path, frame: str) -> None:
    """An append's index columns must match the dataset's, as any other columns."""

    def append(lib: ModuleType, uri: Path) -> tuple[pa.Table, pd.DataFrame]:
        lib.write_dataset(FRAMES[frame](), uri)
        lib.write_dataset(FRAMES[frame](), uri, mode="append")
        return _read(lib, uri)

    _assert_same_reads(*_both(tmp_path, append))

    def mismatch(lib: ModuleType, uri: Path) -> Any:
        other = FRAMES["integer index" if frame == "default range" else "default range"]
        lib.write_dataset(other()[["a"]], uri, mode="append")
        return _read(lib, uri)

    theirs, ours = _both(tmp_path, mismatch)
    if isinstance(theirs, BaseException):
        assert isinstance(ours, LanceletError) and isinstance(ours, _builtin(theirs))
    else:
        _assert_same_reads(theirs, ours)


def _builtin(exc: BaseException) -> type[BaseException]:
    for cls in (KeyError, TypeError, ValueError, OSError):
        if isinstance(exc, cls):
            return cls
    raise AssertionError(f"{type(exc).__mro__}")


SCHEMAS: dict[str, tuple[pd.DataFrame, pa.Schema]] = {
    "selects columns": (
        pd.DataFrame({"a": [1, 2], "c": [3, 4]}, index=[7, 8]),
        pa.schema([("a", pa.int64())]),
    ),
    "keeps the index it names": (
        pd.DataFrame({"a": [1]}, index=[5]),
        pa.schema([("a", pa.int64()), ("__index_level_0__", pa.int64())]),
    ),
    "casts": (pd.DataFrame({"a": [1, 2]}), pa.schema([("a", pa.int32())])),
}


@pytest.mark.parametrize("case", list(SCHEMAS))
def test_schema_given_as_pylance(tmp_path: Path, case: str) -> None:
    frame, schema = SCHEMAS[case]

    def write(lib: ModuleType, uri: Path) -> tuple[pa.Table, pd.DataFrame]:
        lib.write_dataset(frame, uri, schema=schema)
        return _read(lib, uri)

    _assert_same_reads(*_both(tmp_path, write))


CONVERSION_ERRORS: dict[str, tuple[pd.DataFrame, pa.Schema | None]] = {
    "column the schema names is missing": (
        pd.DataFrame({"a": [1]}),
        pa.schema([("a", pa.int64()), ("b", pa.int64())]),
    ),
    "value of another type": (pd.DataFrame({"a": ["x"]}), pa.schema([("a", pa.int64())])),
    "mixed object column": (pd.DataFrame({"a": [1, "x"]}), None),
    "bytes and integers": (pd.DataFrame({"a": [b"x", 1]}), None),
}


@pytest.mark.parametrize("case", list(CONVERSION_ERRORS))
def test_conversion_errors_as_pylance(tmp_path: Path, case: str) -> None:
    frame, schema = CONVERSION_ERRORS[case]
    theirs, ours = _both(tmp_path, lambda lib, uri: lib.write_dataset(frame, uri, schema=schema))
    assert isinstance(theirs, BaseException)
    assert isinstance(ours, LanceletError) and isinstance(ours, _builtin(theirs))


def _range_result(batch: pa.RecordBatch) -> pd.DataFrame:
    return pd.DataFrame({"y": batch.column("a").to_numpy() * 2})


def _indexed_result(batch: pa.RecordBatch) -> pd.DataFrame:
    values = batch.column("a").to_numpy()
    return pd.DataFrame({"y": values * 2}, index=values + 100)


@pytest.mark.parametrize("function", [_range_result, _indexed_result])
def test_add_columns_from_frames_as_pylance(
    tmp_path: Path, function: Callable[[pa.RecordBatch], pd.DataFrame]
) -> None:
    def add(lib: ModuleType, uri: Path) -> tuple[pa.Table, pd.DataFrame]:
        ds = lib.write_dataset(pa.table({"a": range(7)}), uri, max_rows_per_file=3)
        ds.add_columns(function)
        return _read(lib, uri)

    _assert_same_reads(*_both(tmp_path, add))


def test_merge_and_add_columns_bring_schema_metadata(tmp_path: Path) -> None:
    """New columns' schema metadata joins the dataset's; the dataset's keys win."""

    def evolve(lib: ModuleType, uri: Path) -> list[dict[bytes, bytes]]:
        base = pa.table({"a": range(4)}).replace_schema_metadata({"k": "old", "o": "1"})
        ds = lib.write_dataset(base, uri)
        seen = []
        ds.add_columns(pa.table({"z": range(4)}).replace_schema_metadata({"k": "new", "n": "2"}))
        seen.append(lib.dataset(uri).schema.metadata)
        frame = pd.DataFrame({"a": range(4), "w": range(4)}, index=[9, 8, 7, 6])
        lib.dataset(uri).merge(frame, "a")
        seen.append(lib.dataset(uri).schema.metadata)
        return seen

    theirs, ours = _both(tmp_path, evolve)
    assert ours == theirs
