"""Replacing a column's data never leaves an index answering with the old values.

A data replacement swaps a fragment's file for one with new values of the same
columns.  Indices over a replaced column must stop claiming the replaced fragments
(their rows are then scanned), whether the index was built before the replacement,
concurrently with it, or the replacement was written against an older version.
Expected rows come from the data written, and pylance must read lancelet's result
the same way.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.file import LanceFileWriter, stable_version

pytestmark = pytest.mark.local_files("writes a replacement data file by path")

OLD_A = list(range(100))
NEW_A = list(range(100, 200))


def _dataset(uri: Path) -> ll.LanceDataset:
    ds = ll.write_dataset(pa.table({"a": OLD_A}), uri)
    ds.add_columns({"b": "a + 1"})
    return ll.dataset(uri)


def _replacement(uri: Path, field: int, name: str, values: list[int]) -> ll.LanceOperation:
    path = f"{uuid.uuid4()}.lance"
    with LanceFileWriter(str(uri / "data" / path)) as writer:
        writer.write_batch(pa.table({name: values}))
    major, minor = (int(p) for p in stable_version().split("."))
    data_file = ll.fragment.DataFile(
        path=path,
        fields=[field],
        column_indices=[0],
        file_major_version=major,
        file_minor_version=minor,
    )
    group = ll.LanceOperation.DataReplacementGroup(0, data_file)
    return ll.LanceOperation.DataReplacement([group])


def _rows(ds: object, where: str) -> list[dict[str, int]]:
    return ds.to_table(filter=where).to_pylist()  # type: ignore[attr-defined]


def _check_new_a(uri: Path) -> None:
    want_new = [{"a": 150, "b": 51}]
    for ds in (ll.dataset(uri), lance.dataset(uri)):
        assert _rows(ds, "a = 150") == want_new
        assert _rows(ds, "a = 50") == []
        assert _rows(ds, "a >= 190") == [{"a": v, "b": v - 99} for v in range(190, 200)]


def test_replacing_an_indexed_column(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    ds.create_scalar_index("a", "BTREE")
    ll.LanceDataset.commit(
        tmp_path, _replacement(tmp_path, 0, "a", NEW_A), read_version=ll.dataset(tmp_path).version
    )
    _check_new_a(tmp_path)


def test_replacement_written_before_a_concurrent_index_build(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    stale = ll.dataset(tmp_path)
    ds.create_scalar_index("a", "BTREE")
    operation = _replacement(tmp_path, 0, "a", NEW_A)
    ll.LanceDataset.commit(tmp_path, operation, read_version=stale.version)
    _check_new_a(tmp_path)


def test_index_built_on_data_replaced_meanwhile(tmp_path: Path) -> None:
    _dataset(tmp_path)
    stale = ll.dataset(tmp_path)
    current = ll.dataset(tmp_path)
    ll.LanceDataset.commit(
        tmp_path, _replacement(tmp_path, 0, "a", NEW_A), read_version=current.version
    )
    stale.create_scalar_index("a", "BTREE")
    _check_new_a(tmp_path)


def test_an_index_on_another_column_keeps_its_fragments(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    ds.create_scalar_index("a", "BTREE")
    ll.LanceDataset.commit(
        tmp_path,
        _replacement(tmp_path, 1, "b", list(range(500, 600))),
        read_version=ll.dataset(tmp_path).version,
    )
    (index,) = lance.dataset(tmp_path).describe_indices()
    assert [s.fragment_ids for s in index.segments] == [{0}]
    assert _rows(ll.dataset(tmp_path), "a = 7") == [{"a": 7, "b": 507}]
