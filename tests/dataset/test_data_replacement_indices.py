"""Replacing a column's data never leaves an index answering with the old values.

A data replacement swaps a fragment's file for one with new values of the same
columns.  Indices over a replaced column stop claiming the replaced fragments (their
rows are then scanned) when the replacement is committed after the index, as pylance
14 does; an index build and a replacement of its column that race make the later one
retry, in either order, as in pylance.  Expected rows come from the data written, and
pylance must read lancelet's result the same way.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import lance
import lance.commit
import pyarrow as pa
import pytest

import lancelet as ll
import lancelet.commit
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


LIBRARIES = pytest.mark.parametrize("lib", [ll, lance], ids=["lancelet", "pylance"])


def _pylance_replacement(uri: Path, field: int, name: str, values: list[int]) -> object:
    """The same replacement as pylance's own objects."""
    (group,) = _replacement(uri, field, name, values).replacements  # type: ignore[attr-defined]
    file = group.new_file
    data_file = lance.fragment.DataFile(
        path=file.path,
        fields=list(file.fields),
        column_indices=list(file.column_indices),
        file_major_version=file.file_major_version,
        file_minor_version=file.file_minor_version,
    )
    groups = [lance.LanceOperation.DataReplacementGroup(0, data_file)]
    return lance.LanceOperation.DataReplacement(groups)


def _replacement_for(lib: object, uri: Path, field: int, name: str, values: list[int]) -> object:
    make = _replacement if lib is ll else _pylance_replacement
    return make(uri, field, name, values)


def _retryable_conflict(lib: object, version: int) -> pytest.RaisesContext[OSError]:
    error = ll.commit.CommitConflictError if lib is ll else lance.commit.CommitConflictError
    return pytest.raises(error, match=f"^Retryable commit conflict for version {version}: ")


@LIBRARIES
def test_replacement_written_before_a_concurrent_index_build_retries(
    tmp_path: Path, lib: object
) -> None:
    """pylance retries either of the two that commits last when the replaced columns
    and the indexed ones meet; the retry, on a fresh read, then lands."""
    _dataset(tmp_path)
    stale = lib.dataset(tmp_path)  # type: ignore[attr-defined]
    lib.dataset(tmp_path).create_scalar_index("a", "BTREE")  # type: ignore[attr-defined]
    operation = _replacement_for(lib, tmp_path, 0, "a", NEW_A)
    with _retryable_conflict(lib, 3):
        lib.LanceDataset.commit(tmp_path, operation, read_version=stale.version)  # type: ignore[attr-defined]
    assert lance.dataset(tmp_path).version == 3
    fresh = lib.dataset(tmp_path).version  # type: ignore[attr-defined]
    lib.LanceDataset.commit(tmp_path, operation, read_version=fresh)  # type: ignore[attr-defined]
    _check_new_a(tmp_path)


@LIBRARIES
def test_index_built_on_data_replaced_meanwhile_retries(tmp_path: Path, lib: object) -> None:
    _dataset(tmp_path)
    stale = lib.dataset(tmp_path)  # type: ignore[attr-defined]
    operation = _replacement_for(lib, tmp_path, 0, "a", NEW_A)
    lib.LanceDataset.commit(tmp_path, operation, read_version=stale.version)  # type: ignore[attr-defined]
    with _retryable_conflict(lib, 3):
        stale.create_scalar_index("a", "BTREE")
    assert lance.dataset(tmp_path).describe_indices() == []
    lib.dataset(tmp_path).create_scalar_index("a", "BTREE")  # type: ignore[attr-defined]
    _check_new_a(tmp_path)


@LIBRARIES
@pytest.mark.parametrize("index_first", [False, True])
def test_concurrent_index_and_replacement_of_different_columns_commute(
    tmp_path: Path, lib: object, index_first: bool
) -> None:
    _dataset(tmp_path)
    stale = lib.dataset(tmp_path)  # type: ignore[attr-defined]
    operation = _replacement_for(lib, tmp_path, 1, "b", list(range(500, 600)))

    def replace_b() -> None:
        lib.LanceDataset.commit(tmp_path, operation, read_version=stale.version)  # type: ignore[attr-defined]

    if index_first:
        lib.dataset(tmp_path).create_scalar_index("a", "BTREE")  # type: ignore[attr-defined]
        replace_b()
    else:
        replace_b()
        stale.create_scalar_index("a", "BTREE")
    for ds in (ll.dataset(tmp_path), lance.dataset(tmp_path)):
        assert ds.version == 4
        (index,) = ds.describe_indices()
        assert [set(s.fragment_ids) for s in index.segments] == [{0}]
        assert _rows(ds, "a = 7") == [{"a": 7, "b": 507}]


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
