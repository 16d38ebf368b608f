"""The index sort's permutations (lancelet.index.sort_order) against Arrow's two-key
table sort, the order pylance's pages follow: by value (nulls first, floats in total
order), then by row address."""

from __future__ import annotations

import decimal
import zlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lancelet.index import external_sort, ordering, sort_order

ROWS = 3000


def _column(kind: str, rng: np.random.Generator) -> pa.Array:
    n = ROWS
    nulls = rng.random(n) < 0.05
    ints = rng.integers(-50, 50, n)
    columns = {
        "int64 wide": lambda: pa.array(rng.integers(-(2**62), 2**62, n)),
        "int64 narrow": lambda: pa.array(ints, mask=nulls),
        "int32 mid": lambda: pa.array(rng.integers(-(2**20), 2**20, n).astype(np.int32)),
        "int8 full": lambda: pa.array(rng.integers(-128, 128, n).astype(np.int8)),
        "uint64 high": lambda: pa.array(rng.integers(2**63, 2**64 - 1, n, dtype=np.uint64)),
        "uint16 wide": lambda: pa.array(rng.integers(0, 2**16, n).astype(np.uint16)),
        "float64": lambda: pa.array(
            np.where(
                rng.random(n) < 0.2, np.array([np.nan, -0.0, 0.0, -np.inf])[ints % 4], ints / 3
            ),
            mask=nulls,
        ),
        "float32": lambda: pa.array(rng.standard_normal(n).astype(np.float32)),
        "string": lambda: pa.array([f"v{v}" for v in ints], mask=nulls),
        "string distinct": lambda: pa.array([f"v{v}" for v in rng.permutation(n)]),
        "large binary": lambda: pa.array(
            [bytes([v % 7]) * (v % 3) for v in ints], pa.large_binary()
        ),
        "fixed binary": lambda: pa.array([bytes([v % 5, v % 3]) for v in ints], pa.binary(2)),
        "decimal": lambda: pa.array(
            [decimal.Decimal(int(v)).scaleb(-2) for v in ints], pa.decimal128(10, 2)
        ),
        "date": lambda: pa.array(ints.astype(np.int32), mask=nulls).view(pa.date32()),
        "timestamp": lambda: pa.array(rng.integers(-(2**50), 2**50, n)).view(pa.timestamp("us")),
        "bool": lambda: pa.array(rng.random(n) < 0.5, mask=nulls),
        "all null": lambda: pa.nulls(n, pa.int64()),
        "sorted": lambda: pa.array(np.sort(rng.integers(0, 2**40, n))),
    }
    return columns[kind]()


KINDS = [
    "int64 wide",
    "int64 narrow",
    "int32 mid",
    "int8 full",
    "uint64 high",
    "uint16 wide",
    "float64",
    "float32",
    "string",
    "string distinct",
    "large binary",
    "fixed binary",
    "decimal",
    "date",
    "timestamp",
    "bool",
    "all null",
    "sorted",
]


def _expected(values: pa.Array, ids: np.ndarray) -> np.ndarray:
    table = pa.table({"k": ordering.sort_keys(values), "a": pa.array(ids, pa.uint64())})
    order = pc.sort_indices(table, sort_keys=[("k", "ascending", "at_start"), ("a", "ascending")])
    return np.asarray(order)


def _full(order: np.ndarray | None, n: int) -> np.ndarray:
    return np.arange(n) if order is None else order


def _same_rows(values: pa.Array, ids: np.ndarray, got: np.ndarray, want: np.ndarray) -> bool:
    keys = ordering.sort_keys(values)
    same_keys = keys.take(pa.array(got)).equals(keys.take(pa.array(want)))
    return bool(same_keys and np.array_equal(ids[got], ids[want]))


def _ids(how: str, rng: np.random.Generator) -> np.ndarray:
    if how == "ascending":
        return np.arange(ROWS, dtype=np.uint64) * 3
    if how == "shuffled":
        return rng.permutation(ROWS).astype(np.uint64)
    return rng.integers(0, 40, ROWS).astype(np.uint64)  # repeated ids


@pytest.mark.parametrize("how", ["ascending", "shuffled", "repeated"])
@pytest.mark.parametrize("kind", KINDS)
def test_the_order_is_arrows_two_key_sort(kind: str, how: str) -> None:
    rng = np.random.default_rng(zlib.crc32(f"{kind} {how}".encode()))
    values, ids = _column(kind, rng), _ids(how, rng)
    got = _full(sort_order.sort_order(values, ids), ROWS)
    assert sorted(got.tolist()) == list(range(ROWS))
    assert _same_rows(values, ids, got, _expected(values, ids))


@pytest.mark.parametrize("kind", KINDS)
def test_sorted_values_need_no_permutation(kind: str) -> None:
    values = _column(kind, np.random.default_rng(1))
    ordered = values.take(pa.array(_full(sort_order.value_order(values), ROWS)))
    order = sort_order.value_order(ordered)
    assert order is None or np.array_equal(order, np.arange(ROWS))


@pytest.mark.parametrize("kind", KINDS)
def test_merging_sorted_pieces_is_sorting_them(kind: str) -> None:
    rng = np.random.default_rng(2)
    values = _column(kind, rng)
    bounds = np.r_[np.sort(rng.choice(np.arange(1, ROWS), 3, replace=False)), ROWS]
    pieces = []
    for lo, hi in zip(np.r_[0, bounds[:-1]], bounds, strict=True):
        piece = values.slice(lo, hi - lo)
        pieces.append(piece.take(pa.array(_full(sort_order.value_order(piece), len(piece)))))
    merged = pa.concat_arrays(pieces)
    expected = _full(sort_order.value_order(merged), ROWS)
    assert np.array_equal(_full(sort_order.merge_order(merged, bounds), ROWS), expected)


@pytest.mark.parametrize("chunked", [False, True])
@pytest.mark.parametrize("how", ["ascending", "shuffled"])
@pytest.mark.parametrize("kind", KINDS)
def test_grouping_finds_the_runs_of_the_sorted_rows(kind: str, how: str, chunked: bool) -> None:
    rng = np.random.default_rng(3)
    values, ids = _column(kind, rng), _ids(how, rng)
    given = pa.chunked_array([values.slice(0, 1000), values.slice(1000)]) if chunked else values
    order, starts = sort_order.grouped(given, ids)
    want = _expected(values, ids)
    assert _same_rows(values, ids, _full(order, ROWS), want)
    assert np.array_equal(starts, sort_order.run_starts(values.take(pa.array(want))))


def _batches(values: pa.Array, ids: np.ndarray) -> list[pa.RecordBatch]:
    table = pa.table({"values": values, "ids": pa.array(ids, pa.uint64())})
    return table.to_batches(max_chunksize=100)


def test_rows_in_order_are_recognised_batch_by_batch() -> None:
    rng = np.random.default_rng(4)
    ascending = np.arange(ROWS, dtype=np.uint64)
    ints = np.sort(rng.integers(0, 50, ROWS))
    assert sort_order.batches_in_order(_batches(pa.array(ints), ascending))
    assert sort_order.batches_in_order(_batches(pa.array(np.sort(rng.random(ROWS))), ascending))
    stamps = pa.array(ints).view(pa.timestamp("ms"))
    assert sort_order.batches_in_order(_batches(stamps, ascending))
    unsorted = ints.copy()
    unsorted[100], unsorted[99] = unsorted[99] + 1, unsorted[100] - 1  # across two batches
    assert not sort_order.batches_in_order(_batches(pa.array(unsorted), ascending))
    assert not sort_order.batches_in_order(_batches(pa.array(ints), ascending[::-1].copy()))
    strings = pa.array([f"{v:04d}" for v in ints])
    assert not sort_order.batches_in_order(_batches(strings, ascending))  # not checked
    with_null = pa.array([None, *ints[1:].tolist()], pa.int64())
    assert not sort_order.batches_in_order(_batches(with_null, ascending))


@pytest.mark.parametrize("stride_rows", [10, 1500, 5000])
def test_a_merge_step_counts_rows_up_to_its_bound_by_probes(stride_rows: int) -> None:
    rng = np.random.default_rng(5)
    values = pa.array(np.sort(rng.integers(0, stride_rows // 3 + 2, ROWS)))
    block = pa.table({"values": values, "ids": pa.array(np.arange(ROWS, dtype=np.uint64))})
    for row in [0, 1, 999, 1023, 1024, 2047, 2500, ROWS - 1]:
        key, address = block.column("values")[row], block.column("ids")[row]
        fast = external_sort._rows_up_to(block, key, address)
        assert fast == external_sort._count_up_to(block, key, address) == row + 1
