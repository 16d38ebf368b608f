"""Decoded values Arrow's full validation would reject are refused; the fast paths
agree with Arrow's own ``validate(full=True)`` on valid, borderline and garbage data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lancelet.errors import CorruptFileError
from lancelet.file import LanceFileReader
from lancelet.file.v2_0.types import needs_value_check, value_problem
from tests.file import surgery
from tests.file.oracle import write_lancelet


def arrow_accepts(arr: pa.Array) -> bool:
    try:
        arr.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def bitmap(valid: np.ndarray) -> pa.Buffer:
    return pa.py_buffer(np.packbits(valid, bitorder="little"))


def decimal_words(rng: np.random.Generator, n: int, precision: int, in_range: bool) -> np.ndarray:
    """(low, high) words of 128-bit values: in range and at +-(10**p - 1), and unless
    ``in_range`` also just past those bounds and raw garbage."""
    bound = 10**precision - 1
    choices = [
        lambda: int(rng.integers(-min(bound, 2**62), min(bound, 2**62), endpoint=True)),
        lambda: bound,
        lambda: -bound,
        lambda: bound + 1,
        lambda: -bound - 1,
        lambda: int(rng.integers(-(2**63), 2**63)) << 64 | int(rng.integers(0, 2**63)),
    ]
    kinds = 3 if in_range else len(choices)
    values = [choices[int(k)]() for k in rng.integers(0, kinds, n)]
    mask = 2**64 - 1
    return np.array([[v & mask, (v >> 64) & mask] for v in values], dtype=np.uint64)


@pytest.mark.parametrize("precision", [1, 2, 9, 15, 18, 19, 38])
@pytest.mark.parametrize("seed", range(6))
def test_decimal_check_agrees_with_arrow(precision: int, seed: int) -> None:
    rng = np.random.default_rng(seed * 100 + precision)
    n = int(rng.integers(1, 40) if seed % 3 else rng.integers(200, 1200))  # long: one-pass path
    words = decimal_words(rng, n, precision, in_range=seed < 2)
    nulls = None if seed % 2 else bitmap(rng.random(n) < 0.7)
    dtype = pa.decimal128(precision, 0)
    non_negative = np.column_stack([words[:, 0], np.zeros(n, dtype=np.uint64)])
    for keep, validity in ((words, nulls), (words[:1], None), (non_negative, nulls)):
        count = len(keep)
        arr = pa.Array.from_buffers(dtype, count, [validity, pa.py_buffer(keep)])
        assert (value_problem(arr) is None) == arrow_accepts(arr)
        sliced = arr.slice(count // 3)
        assert (value_problem(sliced) is None) == arrow_accepts(sliced)


@pytest.mark.parametrize(
    "dtype",
    [pa.time32("s"), pa.time32("ms"), pa.time64("us"), pa.time64("ns"), pa.date64()],
    ids=str,
)
@pytest.mark.parametrize("seed", range(6))
def test_time_and_date_checks_agree_with_arrow(dtype: pa.DataType, seed: int) -> None:
    rng = np.random.default_rng(seed)
    width = dtype.bit_width // 8
    unit = "ms" if pa.types.is_date64(dtype) else dtype.unit
    day = {"s": 86_400, "ms": 86_400_000, "us": 86_400_000_000, "ns": 86_400_000_000_000}[unit]
    n = 30
    values = rng.integers(0, day, n)
    if seed % 3 == 1:
        values[int(rng.integers(0, n))] = day if seed % 2 else -1
    if pa.types.is_date64(dtype):
        values = values // day * day + (seed % 2) * (seed % 3 == 2)
    raw = pa.py_buffer(values.astype(f"<i{width}"))
    nulls = bitmap(rng.random(n) < 0.5) if seed >= 3 else None
    arr = pa.Array.from_buffers(dtype, n, [nulls, raw])
    assert (value_problem(arr) is None) == arrow_accepts(arr)


def test_nested_types_are_checked_whole() -> None:
    bad = pa.Array.from_buffers(
        pa.time32("s"), 2, [None, pa.py_buffer(np.array([5, 90_000], "<i4"))]
    )
    nested = [
        pa.FixedSizeListArray.from_arrays(bad, 2),
        pa.StructArray.from_arrays([bad], names=["t"]),
        pa.DictionaryArray.from_arrays(pa.array([0, 1, 0]), bad),
    ]
    for arr in nested:
        assert needs_value_check(arr.type)
        assert value_problem(arr) is not None
        assert not arrow_accepts(arr)
    assert not needs_value_check(pa.list_(pa.float32(), 4))
    assert not needs_value_check(pa.dictionary(pa.int32(), pa.string()))


VALUES = pa.table(
    {
        "dec": pa.array([1.25, -3.5, 99.99] * 40, pa.float64()).cast(pa.decimal128(4, 2)),
        "day": pa.array(np.arange(120, dtype=np.int64) * 86_400_000, pa.date64()),
        "t": pa.array(np.arange(120, dtype=np.int32) * 600, pa.time32("s")),
    }
)


@pytest.mark.parametrize(("column", "value"), [(0, 10_000), (1, 5), (2, 86_400)])
def test_out_of_range_values_in_a_file_are_refused(tmp_path: Path, column: int, value: int) -> None:
    """A value buffer changed to hold a value its type forbids (a decimal beyond its
    precision, a date64 that is not a whole day, a time past midnight)."""
    path = write_lancelet(tmp_path / "v.lance", VALUES)
    parts = surgery.parse(path.read_bytes())
    at = parts.page(column).buffer_offsets[0]
    width = VALUES.schema.field(column).type.bit_width // 8
    raw = bytearray(path.read_bytes())
    raw[at + 5 * width : at + 5 * width + min(width, 8)] = value.to_bytes(min(width, 8), "little")
    bad = tmp_path / "bad.lance"
    bad.write_bytes(bytes(raw))
    name = VALUES.column_names[column]
    reader = LanceFileReader(bad)
    for read in (
        lambda: reader.read_all().to_table(),
        lambda: reader.take_rows([5]).to_table(),
        lambda: reader.read_range(0, 10).to_table(),
    ):
        with pytest.raises(CorruptFileError, match=rf"bad\.lance.*'{name}'.*invalid values"):
            read()


@pytest.mark.parametrize("where", [0, 63, 64, 500, 999])
@pytest.mark.parametrize("bad", ["past the bound", "high word set", "negative past the bound"])
def test_one_bad_decimal_among_many(where: int, bad: str) -> None:
    """A long valid column with one bad value, wherever it lies (the one-pass check
    reads 64 values per row and the rest as a tail)."""
    precision = 9
    values = np.arange(1000, dtype=np.int64) * 7
    words = np.column_stack([values.view(np.uint64), np.zeros(1000, dtype=np.uint64)])
    if bad == "past the bound":
        words[where, 0] = 10**precision
    elif bad == "high word set":
        words[where, 1] = 1
    else:
        words[where] = [np.uint64(2**64 - 10**precision), np.uint64(2**64 - 1)]
    arr = pa.Array.from_buffers(pa.decimal128(precision, 0), 1000, [None, pa.py_buffer(words)])
    assert not arrow_accepts(arr)
    assert value_problem(arr) is not None
    assert value_problem(arr.slice(0, where)) is None
