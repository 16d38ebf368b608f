"""Datasets of Lance 2.1 / 2.2 files written by lancelet, opened by pylance.

pylance is the oracle: the dataset opens with ``lance.dataset``, passes
``validate()``, holds exactly the rows written, records the format asked for, and
describes each data file as pylance itself would (its leaf fields only).
"""

from __future__ import annotations

import os
from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.dataset.fragment import write_fragments
from lancelet.errors import UnsupportedVersionError
from lancelet.file import LanceFileReader
from tests.file.gen import ALL_TYPES, random_table
from tests.file.oracle import assert_same

VERSIONS = ["2.1", "2.2"]


def nested_table(n: int = 500, seed: int = 4) -> pa.Table:
    table = random_table(ALL_TYPES, n, seed)
    # Dictionary columns come back as plain values from datasets; compare those.
    return table.select([i for i, t in enumerate(ALL_TYPES) if not pa.types.is_dictionary(t)])


def file_records(uri: str | Path) -> list[tuple[list[int], list[int], int, int]]:
    ds = lance.dataset(str(uri))
    return [
        (list(f.fields), list(f.column_indices), f.file_major_version, f.file_minor_version)
        for fragment in ds.get_fragments()
        for f in fragment.metadata.files
    ]


@pytest.mark.parametrize("version", VERSIONS)
def test_written_dataset_opens_in_pylance(tmp_path: Path, version: str) -> None:
    table = nested_table()
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    ll.write_dataset(table, ours, data_storage_version=version, max_rows_per_file=200)
    lance.write_dataset(table, theirs, data_storage_version=version, max_rows_per_file=200)
    ds = lance.dataset(str(ours))
    ds.validate()
    assert ds.data_storage_version == version
    assert_same(table, ds.to_table())
    assert file_records(ours) == file_records(theirs)


@pytest.mark.parametrize("name", ["stable", "2.2", "STABLE"])
def test_stable_is_2_2(tmp_path: Path, name: str) -> None:
    ll.write_dataset(pa.table({"a": [1, 2]}), tmp_path / "ds", data_storage_version=name)
    assert lance.dataset(str(tmp_path / "ds")).data_storage_version == "2.2"


def test_empty_dataset_records_its_format(tmp_path: Path) -> None:
    table = nested_table(0)
    ll.write_dataset(table, tmp_path / "ds", data_storage_version="2.2")
    ds = lance.dataset(str(tmp_path / "ds"))
    ds.validate()
    assert ds.data_storage_version == "2.2"
    assert ds.count_rows() == 0


def test_appends_by_both_libraries(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    parts = [nested_table(300, seed) for seed in (1, 2, 3, 4)]
    ll.write_dataset(parts[0], uri, data_storage_version="2.2")
    lance.write_dataset(parts[1], uri, mode="append")
    ll.write_dataset(parts[2], uri, mode="append")
    lance.write_dataset(parts[3], uri, mode="append")
    ds = lance.dataset(uri)
    ds.validate()
    assert ds.version == 4
    assert_same(pa.concat_tables(parts), ds.to_table())
    assert {(major, minor) for _, _, major, minor in file_records(uri)} == {(2, 2)}


@pytest.mark.parametrize("version", VERSIONS)
def test_overwrite_keeps_the_format(tmp_path: Path, version: str) -> None:
    uri = str(tmp_path / "ds")
    table = pa.table({"a": list(range(10)), "s": [str(i) for i in range(10)]})
    lance.write_dataset(table, uri, data_storage_version=version)
    ll.write_dataset(table.slice(3), uri, mode="overwrite")
    ds = lance.dataset(uri)
    ds.validate()
    assert ds.data_storage_version == version
    assert ds.to_table().equals(table.slice(3))


def test_fragments_written_apart_and_committed(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    table = nested_table(400)
    ll.write_dataset(table.slice(0, 100), uri, data_storage_version="2.2")
    fragments = write_fragments(table.slice(100), uri, max_rows_per_file=150)
    assert isinstance(fragments, list)
    ll.LanceDataset.commit(uri, ll.LanceOperation.Append(fragments), read_version=1)
    ds = lance.dataset(uri)
    ds.validate()
    assert_same(table, ds.to_table())
    assert {(major, minor) for _, _, major, minor in file_records(uri)} == {(2, 2)}


def test_null_columns_added_in_the_dataset_format(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    table = pa.table({"a": list(range(50))})
    ll.write_dataset(table, uri, data_storage_version="2.1")
    ll.dataset(uri).add_columns(pa.field("s", pa.struct([("x", pa.list_(pa.int32()))])))
    ds = lance.dataset(uri)
    ds.validate()
    got = ds.to_table()
    assert got["s"].null_count == 50
    assert {(major, minor) for _, _, major, minor in file_records(uri)} == {(2, 1)}


def test_compaction_keeps_the_dataset_format(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    parts = [nested_table(100, seed) for seed in (5, 6, 7)]
    for part in parts:
        ll.write_dataset(part, uri, mode="append", data_storage_version="2.0")
    before = file_records(uri)
    # pylance would leave 2.2 files in a 2.0 dataset; lancelet refuses to mix formats.
    with pytest.raises(UnsupportedVersionError, match="mixed formats"):
        ll.dataset(uri).optimize.compact_files(data_storage_version="2.2")
    assert file_records(uri) == before
    ll.dataset(uri).optimize.compact_files(data_storage_version="2.0")
    ds = lance.dataset(uri)
    ds.validate()
    assert_same(pa.concat_tables(parts), ds.to_table())
    assert [(major, minor) for _, _, major, minor in file_records(uri)] == [(2, 0)]


@pytest.mark.parametrize("version", VERSIONS)
def test_row_operations_write_the_dataset_format(tmp_path: Path, version: str) -> None:
    """update, merge_insert, add_columns, merge and compaction all add files in the
    dataset's own format; pylance reads every step."""
    uri = str(tmp_path / "ds")
    keys = pa.array(range(300), pa.int64())
    table = pa.table(
        {"k": keys, "v": [f"v{i}" for i in range(300)], "l": [[i] * (i % 3) for i in range(300)]}
    )
    ll.write_dataset(table, uri, data_storage_version=version, max_rows_per_file=100)
    ds = ll.dataset(uri)
    ds.update({"v": "'changed'"}, where="k < 10")
    new_rows = pa.table({"k": pa.array([6, 400], pa.int64()), "v": ["m6", "m400"], "l": [[1], []]})
    ds = ll.dataset(uri)
    ds.merge_insert("k").when_matched_update_all().when_not_matched_insert_all().execute(new_rows)
    ll.dataset(uri).add_columns({"twice": "k * 2"})
    extra = pa.table({"k": keys, "tag": [str(i % 7) for i in range(300)]})
    ll.dataset(uri).merge(extra, "k")
    ll.dataset(uri).delete("k % 4 = 1")
    ll.dataset(uri).optimize.compact_files(target_rows_per_fragment=1000)
    ours = lance.dataset(uri)
    ours.validate()
    assert ours.data_storage_version == version
    major, minor = (int(p) for p in version.split("."))
    assert {(a, b) for _, _, a, b in file_records(uri)} == {(major, minor)}
    got = ours.to_table().sort_by("k")
    assert got["k"].to_pylist() == sorted([k for k in range(300) if k % 4 != 1] + [400])
    assert got.filter(pa.compute.equal(got["k"], 6))["v"].to_pylist() == ["m6"]
    assert got.filter(pa.compute.equal(got["k"], 8))["v"].to_pylist() == ["changed"]
    assert got.filter(pa.compute.equal(got["k"], 12))["twice"].to_pylist() == [24]
    assert got.filter(pa.compute.equal(got["k"], 14))["tag"].to_pylist() == ["0"]
    assert_same(got, ll.dataset(uri).to_table().sort_by("k"))


def test_appending_another_format_is_refused(tmp_path: Path) -> None:
    """pylance would add 2.2 files to a 2.0 dataset; lancelet writes no mixed formats."""
    uri = str(tmp_path / "ds")
    ll.write_dataset(pa.table({"a": [1, 2]}), uri, data_storage_version="2.0")
    with pytest.raises(UnsupportedVersionError, match="mixed formats"):
        ll.write_dataset(pa.table({"a": [3]}), uri, mode="append", data_storage_version="2.2")
    ll.write_dataset(pa.table({"a": [3]}), uri, mode="append", data_storage_version="2.0")
    ll.write_dataset(pa.table({"a": [4]}), uri, mode="append", data_storage_version=None)
    assert lance.dataset(uri).to_table()["a"].to_pylist() == [1, 2, 3, 4]
    assert {(a, b) for _, _, a, b in file_records(uri)} == {(2, 0)}


def test_data_files_record_the_dataset_field_ids(tmp_path: Path) -> None:
    """pylance matches a file's columns to the manifest's by the ids the file's own
    schema records, so lancelet writes the dataset's ids there, not positions."""
    uri = str(tmp_path / "ids")
    table = pa.table({"a": [1, 2], "s": [{"x": 1, "y": "p"}, None], "b": [0.5, 1.5]})
    ll.write_dataset(table, uri, data_storage_version="2.2")
    ll.dataset(uri).drop_columns(["a"])
    ll.dataset(uri).add_columns({"c": "b * 2"})
    ll.write_dataset(ll.dataset(uri).to_table(), uri, mode="append")
    ds = lance.dataset(uri)
    ds.validate()
    for fragment in ds.get_fragments():
        for data_file in fragment.metadata.files:
            reader = LanceFileReader(os.path.join(uri, "data", data_file.path))
            assert set(data_file.fields) <= set(reader.all_field_ids)
            assert list(reader.field_ids) == list(data_file.fields)
    assert ll.dataset(uri).to_table().equals(ds.to_table())
