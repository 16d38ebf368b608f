"""Legacy (0.1) data files written by lancelet are pylance's byte for byte (but the
writer named in the embedded schema): pages, page tables, statistics, dictionaries
and metadata, for every type pylance's legacy writer stores, and the types it
refuses are refused."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lancelet as ll
from lancelet.errors import LegacyTypeError, UnsupportedFeatureError, UnwritableVersionError
from lancelet.file import LanceFileWriter
from tests.file.gen import random_table
from tests.file.legacy import FIXED_WIDTH, LEAVES, assert_same_datasets, legacy_types

WIDE = [*LEAVES, *[pa.list_(t, 2) for t in FIXED_WIDTH], pa.list_(pa.list_(pa.int16(), 2), 3)]
WIDE += [
    pa.list_(pa.int32()),
    pa.large_list(pa.string()),
    pa.list_(pa.list_(pa.int64())),
    pa.struct([("a", pa.int32()), ("b", pa.dictionary(pa.int8(), pa.string()))]),
    pa.list_(pa.struct([("k", pa.string()), ("v", pa.list_(pa.float32(), 3))])),
    pa.large_list(pa.dictionary(pa.int16(), pa.int32())),
]


def write_both(root: Path, data: Any, **kwargs: Any) -> tuple[Path, Path]:
    """``data`` written as a legacy dataset by lancelet and by pylance."""
    ours, theirs = root / "lancelet", root / "pylance"
    reader = data if callable(data) else (lambda: data)
    ll.write_dataset(reader(), ours, data_storage_version="legacy", **kwargs)
    lance.write_dataset(reader(), theirs, data_storage_version="legacy", **kwargs)
    return ours, theirs


@pytest.mark.parametrize("null_rate", [0.0, 0.3, 1.0])
def test_files_are_pylances(tmp_path: Path, null_rate: float) -> None:
    table = random_table(WIDE, 1300, seed=7, null_rate=null_rate)
    ours, theirs = write_both(tmp_path, table, max_rows_per_file=1000, max_rows_per_group=256)
    assert_same_datasets(ours, theirs)
    assert lance.dataset(ours).to_table().equals(lance.dataset(theirs).to_table())


def test_batches_cut_from_a_stream_as_pylance_cuts_them(tmp_path: Path) -> None:
    """Groups of ``max_rows_per_group`` rows straddle the input batches, and a file
    ends with the group that brings it to ``max_rows_per_file`` rows or more."""
    types = [pa.int64(), pa.string(), pa.list_(pa.int8()), pa.dictionary(pa.int8(), pa.string())]
    table = random_table(types, 2500, seed=3)

    def stream() -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=700))

    for group, per_file in [(300, 1000), (1024, 10**6), (300, 250), (7, 50)]:
        root = tmp_path / f"{group}-{per_file}"
        ours, theirs = write_both(
            root, stream, max_rows_per_file=per_file, max_rows_per_group=group
        )
        assert_same_datasets(ours, theirs)


def _statistics_table() -> pa.Table:
    """Values at the edges of pylance's statistics: strings and binaries cut at 64
    bytes (inside a character, before one that cannot be raised, binaries of 0xff),
    floats with NaN, infinities and zeros, batches with no value at all."""
    long = "x" * 62 + "éz"  # the cut falls inside é
    top = "y" * 63 + "\U0010ffff" + "q"  # no successor once cut before the last char
    rows = 12
    return pa.table(
        {
            "s": [long, "a", None, "b" * 70, "ü" * 40, None, None, None, "", "é", top, "z"],
            "top": [top] * 6 + [None] * 6,
            "b": [b"\xff" * 70, b"\x00", None, b"\xff" * 64, b"\xfe" + b"\xff" * 65] + [None] * 7,
            "f": [np.nan, -0.0, 0.0, np.inf, -np.inf, 1.5, None, np.nan, None, None, 0.0, None],
            "g": pa.array([0.0, -0.0] * 6, pa.float32()),
            "t": [True, True, None, False, None, None, True, True, False, False, None, None],
            "i": pa.array([None] * 6 + [5, -3, 0, 7, None, 1], pa.int16()),
            "u": pa.array([None] * 6 + [5, 3, 0, 7, None, 1], pa.uint64()),
            "d": pa.array([None] * 6 + [1, 2, 3, 4, 5, 6], pa.decimal128(10, 2)),
            "dt": pa.array([None] * 6 + list(range(6)), pa.date64()),
            "ls": pa.array(["é" * 33] * rows, pa.large_string()),
            "lb": pa.array([bytes(range(70))] * rows, pa.large_binary()),
        }
    )


def test_statistics_are_pylances(tmp_path: Path) -> None:
    table = _statistics_table()
    for group in (1, 2, 3, 6):
        ours, theirs = write_both(tmp_path / str(group), table, max_rows_per_group=group)
        assert_same_datasets(ours, theirs)


@given(
    types=st.lists(legacy_types(), min_size=1, max_size=4),
    rows=st.integers(0, 120),
    group=st.integers(1, 50),
    per_file=st.integers(1, 200),
    null_rate=st.sampled_from([0.0, 0.3, 1.0]),
    seed=st.integers(0, 2**32 - 1),
)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_random_schemas_give_pylances_files(
    types: list[pa.DataType], rows: int, group: int, per_file: int, null_rate: float, seed: int
) -> None:
    table = random_table(types, rows, seed, null_rate)
    with tempfile.TemporaryDirectory() as tmp:
        if rows == 0 and any(_holds_dictionary(t) for t in types):
            # No values for the manifest to keep: pylance refuses ("missing dictionary
            # metadata"), and so does lancelet, before writing anything.
            with pytest.raises(OSError, match="dictionary"):
                lance.write_dataset(table, Path(tmp) / "p", data_storage_version="legacy")
            with pytest.raises(OSError, match="dictionary"):
                ll.write_dataset(table, Path(tmp) / "l", data_storage_version="legacy")
            assert not (Path(tmp) / "l").exists()
            return
        ours, theirs = write_both(
            Path(tmp), table, max_rows_per_group=group, max_rows_per_file=per_file
        )
        assert_same_datasets(ours, theirs)


def _holds_dictionary(dtype: pa.DataType) -> bool:
    if pa.types.is_dictionary(dtype):
        return True
    return any(_holds_dictionary(dtype.field(i).type) for i in range(dtype.num_fields))


REFUSED = {
    "map": pa.array([[("a", 1)]], pa.map_(pa.string(), pa.int32())),
    "fixed-size list of strings": pa.array([["a", "b"]], pa.list_(pa.string(), 2)),
    "fixed-size list of lists": pa.array([[[1], [2]]], pa.list_(pa.list_(pa.int32()), 2)),
    "fixed-size list of structs": pa.array(
        [[{"a": 1}, {"a": 2}]], pa.list_(pa.struct([("a", pa.int32())]), 2)
    ),
    "fixed-size list of nulls": pa.array([[None, None]], pa.list_(pa.null(), 2)),
    "float dictionary": pa.array([1.5]).dictionary_encode(),
    "boolean dictionary": pa.DictionaryArray.from_arrays(pa.array([0]), pa.array([True])),
    "date dictionary": pa.DictionaryArray.from_arrays(pa.array([0]), pa.array([1], pa.date32())),
    "empty struct": pa.array([{}], pa.struct([])),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_types_pylance_refuses_are_refused(tmp_path: Path, name: str) -> None:
    """pylance refuses these (an empty struct it writes but cannot read back)."""
    table = pa.table({"c": REFUSED[name]})
    with pytest.raises(BaseException):  # noqa: B017 (a panic, an OSError, a ValueError)
        lance.write_dataset(table, tmp_path / "theirs", data_storage_version="legacy")
        lance.dataset(tmp_path / "theirs").to_table()
    with pytest.raises(LegacyTypeError, match="'c'"):
        ll.write_dataset(table, tmp_path / "ours", data_storage_version="legacy")
    assert not (tmp_path / "ours").exists() or not any((tmp_path / "ours").rglob("*.manifest"))


def test_lance_file_writer_writes_no_legacy_files(tmp_path: Path) -> None:
    schema = pa.schema([("a", pa.int64())])
    for version in ("legacy", "0.1"):
        with pytest.raises(NotImplementedError):
            lance.file.LanceFileWriter(str(tmp_path / "theirs.lance"), schema, version=version)
        with pytest.raises(UnwritableVersionError, match="legacy"):
            LanceFileWriter(tmp_path / "ours.lance", schema, version=version)
    assert not list(tmp_path.iterdir())


def test_blob_columns_are_refused(tmp_path: Path) -> None:
    """pylance writes a legacy blob column but cannot read it back."""
    field = pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    table = pa.Table.from_arrays(
        [pa.array([b"abc", None], pa.large_binary())], schema=pa.schema([field])
    )
    with pytest.raises(BaseException):  # noqa: B017 (a panic)
        lance.write_dataset(table, tmp_path / "theirs", data_storage_version="legacy")
        lance.dataset(tmp_path / "theirs").to_table()
    with pytest.raises(UnsupportedFeatureError, match="'b' is a blob column"):
        ll.write_dataset(table, tmp_path / "ours", data_storage_version="legacy")
