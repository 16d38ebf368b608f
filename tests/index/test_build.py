"""Building indices: a BTREE sorted in several spilled runs equals one sorted in
memory, and both follow the sort order pylance's pages use; remapping moves and
drops addresses."""

from __future__ import annotations

import os
from pathlib import Path
from unittest import mock

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lancelet.expr import Equals, IsNull
from lancelet.file import LanceFileReader
from lancelet.index import (
    DELETED,
    AddressMapping,
    BitmapIndex,
    BTreeIndex,
    external_sort,
    write_bitmap,
    write_btree,
)
from tests.storage import local


def _column(kind: str, rows: int, seed: int) -> pa.Array:
    rng = np.random.default_rng(seed)
    nulls = rng.random(rows) < 0.03
    ints = rng.integers(0, rows // 5, rows)
    if kind == "float":
        values = np.where(rng.random(rows) < 0.1, np.array([np.nan, -0.0, 0.0])[ints % 3], ints / 3)
        return pa.array(values, pa.float64(), mask=nulls)
    if kind == "few strings":
        return pa.array([f"v{v % 7}" for v in ints], pa.string(), mask=nulls)
    return pa.array([f"v{v:06d}" for v in ints], pa.string(), mask=nulls)


def _batches(
    values: pa.Array, addresses: np.ndarray, size: int
) -> list[tuple[pa.Array, np.ndarray]]:
    return [(values.slice(i, size), addresses[i : i + size]) for i in range(0, len(values), size)]


@pytest.mark.parametrize("addresses", ["shuffled", "ascending"])
@pytest.mark.parametrize("kind", ["float", "string", "few strings"])
def test_spilled_runs_merge_into_the_in_memory_sort(
    tmp_path: Path, kind: str, addresses: str
) -> None:
    """Runs whose addresses ascend from run to run (a scan's) merge without comparing
    addresses; others compare them."""
    rows = 30_000
    values = _column(kind, rows, seed=3)
    rng = np.random.default_rng(4)
    ascending = np.arange(rows, dtype=np.uint64) + (np.uint64(3) << np.uint64(32))
    addresses = ascending if addresses == "ascending" else rng.permutation(ascending)
    runs = mock.patch.object(external_sort, "_Run", wraps=external_sort._Run)
    with runs as spy:
        write_btree(
            _batches(values, addresses, 1700),
            local(tmp_path / "runs"),
            values.type,
            "2.2",
            run_rows=4000,
        )
    assert spy.call_count == 8  # 30,000 rows in runs of 4,000
    write_btree(
        _batches(values, addresses, 1700),
        local(tmp_path / "memory"),
        values.type,
        "2.2",
        run_rows=10**6,
    )
    assert sorted(os.listdir(tmp_path / "runs")) == ["page_data.lance", "page_lookup.lance"]
    for name in ("page_data.lance", "page_lookup.lance"):
        spilled = LanceFileReader(str(tmp_path / "runs" / name)).read_all().to_table()
        memory = LanceFileReader(str(tmp_path / "memory" / name)).read_all().to_table()
        assert _bits(spilled).equals(_bits(memory)), name
    # The sort itself, checked independently: nulls first, then by value, then address.
    data = LanceFileReader(str(tmp_path / "runs" / "page_data.lance")).read_all().to_table()
    out_values, out_ids = data.column("values").to_pylist(), data.column("ids").to_numpy()
    nulls = sum(v is None for v in out_values)
    assert all(v is None for v in out_values[:nulls])
    expected = sorted(
        zip(values.to_pylist(), addresses.tolist(), strict=True),
        key=lambda p: (p[0] is not None, _total_order(p[0]), p[1]),
    )
    assert [a for _, a in expected] == out_ids.tolist()


def _bits(table: pa.Table) -> pa.Table:
    # Floats by their bits, so NaN equals NaN.
    columns = {
        name: table.column(name).combine_chunks().view(pa.int64())
        if table.schema.field(name).type == pa.float64()
        else table.column(name)
        for name in table.column_names
    }
    return pa.table(columns)


def _total_order(value: object) -> object:
    if value is None:
        return 0
    if isinstance(value, float):
        bits = int(np.array([value]).view(np.int64)[0])
        return bits ^ 0x7FFF_FFFF_FFFF_FFFF if bits < 0 else bits
    return value


@pytest.mark.parametrize("addresses", ["shuffled", "ascending"])
@pytest.mark.parametrize("kind", ["float", "string", "few strings"])
def test_a_spilled_bitmap_equals_one_grouped_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, addresses: str
) -> None:
    """Rows that fit in one run are grouped by value at once; spilled runs are merged
    and grouped block by block: the same bitmaps either way."""
    rows = 30_000
    values = _column(kind, rows, seed=5)
    ascending = np.arange(rows, dtype=np.uint64) + (np.uint64(2) << np.uint64(32))
    rng = np.random.default_rng(6)
    ids = ascending if addresses == "ascending" else rng.permutation(ascending)
    monkeypatch.setenv("LANCE_MEM_POOL_SIZE", str(200_000))  # runs of ~100 KB: it spills
    runs = mock.patch.object(external_sort, "_Run", wraps=external_sort._Run)
    with runs as spy:
        write_bitmap(_batches(values, ids, 1700), local(tmp_path / "runs"), values.type, "2.2")
    assert spy.call_count > 2
    monkeypatch.delenv("LANCE_MEM_POOL_SIZE")
    write_bitmap(_batches(values, ids, 1700), local(tmp_path / "memory"), values.type, "2.2")
    name = "bitmap_page_lookup.lance"
    spilled = LanceFileReader(str(tmp_path / "runs" / name)).read_all().to_table()
    memory = LanceFileReader(str(tmp_path / "memory" / name)).read_all().to_table()
    assert _bits(spilled).equals(_bits(memory))
    index = BitmapIndex.open(local(tmp_path / "memory"))
    for value in values.drop_null().unique().to_pylist()[:20]:
        if isinstance(value, float) and value != value:
            continue  # NaN: a query compares it as a value, not a key
        found = index.search(Equals("c", pa.scalar(value, values.type)))
        matches = np.flatnonzero(pc.equal(values, pa.scalar(value, values.type)).fill_null(False))
        assert found is not None
        assert found.addresses.tolist() == np.sort(ids[matches]).tolist()
    found = index.search(IsNull("c"))
    assert found is not None
    assert found.addresses.tolist() == np.sort(ids[values.is_null().to_numpy(False)]).tolist()


def test_btree_remap_moves_and_drops_addresses(tmp_path: Path) -> None:
    values = pa.array([5, None, 3, 5, 9, 3], pa.int64())
    addresses = np.array([0, 1, 2, 3, 1 << 32, (1 << 32) + 1], dtype=np.uint64)
    write_btree([(values, addresses)], local(tmp_path / "old"), pa.int64(), "2.0")
    mapping = AddressMapping(
        np.array([0, 1 << 32, (1 << 32) + 1], dtype=np.uint64),
        np.array([(7 << 32) + 4, DELETED, 2 << 32], dtype=np.uint64),
    )
    BTreeIndex.open(local(tmp_path / "old")).remap(
        mapping, local(tmp_path / "new"), "2.0", run_rows=2
    )
    new = BTreeIndex.open(local(tmp_path / "new"))
    found = new.search(Equals("c", pa.scalar(5, pa.int64())))
    assert found is not None and found.addresses.tolist() == [3, (7 << 32) + 4]
    found = new.search(Equals("c", pa.scalar(3, pa.int64())))
    assert found is not None and found.addresses.tolist() == [2, 2 << 32]
    assert new.search(Equals("c", pa.scalar(9, pa.int64()))).addresses.tolist() == []  # type: ignore[union-attr]
    assert new.search(IsNull("c")).addresses.tolist() == [1]  # type: ignore[union-attr]


def test_bitmap_remap_moves_and_drops_addresses(tmp_path: Path) -> None:
    values = pa.array(["a", None, "b", "a", "c"])
    addresses = np.array([0, 1, 2, 3, 1 << 32], dtype=np.uint64)
    write_bitmap([(values, addresses)], local(tmp_path / "old"), pa.string(), "2.2")
    mapping = AddressMapping.from_dict({0: 5 << 32, 1 << 32: None})
    BitmapIndex.open(local(tmp_path / "old")).remap(mapping, local(tmp_path / "new"), "2.2")
    new = BitmapIndex.open(local(tmp_path / "new"))
    assert new.statistics() == {"num_bitmaps": 3}  # "c" lost its only row
    assert new.search(Equals("c", pa.scalar("a"))).addresses.tolist() == [3, 5 << 32]  # type: ignore[union-attr]
    assert new.search(IsNull("c")).addresses.tolist() == [1]  # type: ignore[union-attr]
