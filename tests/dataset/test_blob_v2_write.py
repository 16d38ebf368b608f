"""lancelet writes blob columns of Lance 2.2 datasets as pylance's blob v2 columns
(every value inline in its data file), through write_dataset, appends and
fragments; pylance reads them back exactly, and each reads what the other appended."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.errors import UnsupportedFeatureError, UnsupportedOptionError, UnsupportedTypeError

BLOB = {"lance-encoding:blob": "true"}
# Empty, small, the 64 KiB around which pylance changes storage, and multi-MB ones.
VALUES: list[bytes | None] = [
    b"",
    b"a",
    b"b" * 65_536,
    b"c" * 65_537,
    b"d" * 3_000_000,
    b"e" * 9_000_000,
]


def _schema(nullable: bool = True) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("b", pa.large_binary(), nullable=nullable, metadata=BLOB),
        ]
    )


def _table(values: list[bytes | None], first: int = 0, nullable: bool = True) -> pa.Table:
    ids = range(first, first + len(values))
    return pa.table({"id": ids, "b": pa.array(values, pa.large_binary())}, schema=_schema(nullable))


def _bytes(dataset: Any) -> list[bytes | None]:
    rows = list(range(dataset.count_rows()))
    return [None if b is None else b.readall() for b in dataset.take_blobs("b", indices=rows)]


@pytest.mark.parametrize("nullable", [True, False])
def test_pylance_reads_lancelets_blobs(tmp_path: Path, nullable: bool) -> None:
    values = [*VALUES, None] if nullable else VALUES
    table = _table(values, nullable=nullable)
    ll.write_dataset(table, tmp_path / "ours", data_storage_version="2.2")
    lance.write_dataset(table, tmp_path / "theirs", data_storage_version="2.2")
    ours, theirs = lance.dataset(tmp_path / "ours"), lance.dataset(tmp_path / "theirs")
    assert ours.schema.equals(theirs.schema, check_metadata=True)
    assert ours.to_table().schema.equals(theirs.to_table().schema, check_metadata=True)
    assert _bytes(ours) == values
    (fragment,) = ours.get_fragments()
    (data_file,) = fragment.metadata.files
    (want,) = theirs.get_fragments()[0].metadata.files
    assert (data_file.fields, data_file.column_indices) == (want.fields, want.column_indices)
    descriptors = ours.to_table().column("b").to_pylist()
    assert [d is None for d in descriptors] == [v is None for v in values]
    assert [d["size"] for d in descriptors if d] == [len(v) for v in values if v is not None]
    assert {d["kind"] for d in descriptors if d} == {0}  # inline


def test_lancelet_reads_its_own_blobs(tmp_path: Path) -> None:
    values = [*VALUES, None]
    ll.write_dataset(_table(values), tmp_path / "ds", data_storage_version="2.2")
    ours, theirs = ll.dataset(tmp_path / "ds"), lance.dataset(tmp_path / "ds")
    assert _bytes(ours) == values
    assert ours.to_table().equals(theirs.to_table())
    assert ours.schema.equals(theirs.to_table().schema, check_metadata=True)


def test_empty_dataset_then_appends(tmp_path: Path) -> None:
    uri = tmp_path / "ds"
    ll.write_dataset(_table([]), uri, data_storage_version="2.2")
    assert lance.dataset(uri).count_rows() == 0
    ll.write_dataset(_table([b"x", None]), uri, mode="append")
    assert _bytes(lance.dataset(uri)) == [b"x", None]


def test_each_appends_to_the_others_dataset(tmp_path: Path) -> None:
    theirs_first, ours_next = [b"p" * 200_000, None, b"r" * 6_000_000], [b"s", b""]
    uri = tmp_path / "ds"
    lance.write_dataset(_table(theirs_first), uri, data_storage_version="2.2")
    ll.write_dataset(_table(ours_next, first=3), uri, mode="append")
    lance.write_dataset(_table([b"t" * 70_000], first=5), uri, mode="append")
    want = theirs_first + ours_next + [b"t" * 70_000]
    assert _bytes(lance.dataset(uri)) == want
    assert _bytes(ll.dataset(uri)) == want
    assert ll.dataset(uri).to_table().equals(lance.dataset(uri).to_table())


def test_fragments_committed_by_overwrite(tmp_path: Path) -> None:
    uri = tmp_path / "ds"
    fragment = ll.LanceFragment.create(uri, _table(VALUES), data_storage_version="2.2")
    ll.LanceDataset.commit(uri, ll.LanceOperation.Overwrite(_schema(), [fragment]))
    assert _bytes(lance.dataset(uri)) == VALUES
    assert lance.dataset(uri).to_table().equals(ll.dataset(uri).to_table())
    # More fragments for the dataset, under its schema.
    more = ll.write_fragments(_table([b"m", None]), uri)
    ll.LanceDataset.commit(uri, ll.LanceOperation.Append(more), read_version=1)
    assert _bytes(lance.dataset(uri)) == [*VALUES, b"m", None]


def test_deleted_rows_are_skipped(tmp_path: Path) -> None:
    uri = tmp_path / "ds"
    ll.write_dataset(_table(VALUES), uri, data_storage_version="2.2", max_rows_per_file=2)
    ll.dataset(uri).delete("id = 2")
    want = VALUES[:2] + VALUES[3:]
    assert _bytes(lance.dataset(uri)) == want
    assert _bytes(ll.dataset(uri)) == want


def test_updates_move_blob_values(tmp_path: Path) -> None:
    first = [b"x" * 10, b"y" * 100_000, None, b"", b"z" * 5_000_000]
    uri = tmp_path / "ds"
    lance.write_dataset(_table(first), uri, data_storage_version="2.2", max_rows_per_file=3)
    ll.dataset(uri).update({"id": "id + 100"}, where="id >= 1")
    want = lance.dataset(uri).to_table(columns=["id"]).column("id").to_pylist()
    assert want == [0, 101, 102, 103, 104]
    assert _bytes(lance.dataset(uri)) == first
    assert _bytes(ll.dataset(uri)) == first


def test_rewriting_blob_values_is_refused(tmp_path: Path) -> None:
    uri = tmp_path / "ds"
    ll.write_dataset(_table([b"a", b"b"]), uri, data_storage_version="2.2", max_rows_per_file=1)
    ds = ll.dataset(uri)
    with pytest.raises(UnsupportedFeatureError, match="'b' is a blob v2 column"):
        ds.update({"b": "b"})
    assert _bytes(lance.dataset(uri)) == [b"a", b"b"]


def test_merge_insert_with_and_without_blob_values(tmp_path: Path) -> None:
    first = [b"x" * 10, b"y" * 100_000, None, b"z" * 5_000_000]
    uri = tmp_path / "ds"
    lance.write_dataset(_table(first), uri, data_storage_version="2.2", max_rows_per_file=2)
    # Rows 1 and 4: new values from the source (row 4 inserted).
    source = _table([b"new" * 30_000, b"four"], first=1).take([0, 1])
    source = source.set_column(0, "id", pa.array([1, 4], pa.int64()))
    ll.dataset(uri).merge_insert("id").when_matched_update_all().when_not_matched_insert_all(
    ).execute(source)  # fmt: skip
    # Row 3 with its id only: its blob stays as it was (read from pylance's sidecar).
    keys = pa.table({"id": pa.array([3], pa.int64())})
    ll.dataset(uri).merge_insert("id").when_matched_update_all().execute(keys)
    got = lance.dataset(uri).to_table(columns=["id"]).column("id").to_pylist()
    want = dict(zip(range(4), first, strict=True)) | {1: b"new" * 30_000, 4: b"four"}
    assert sorted(got) == [0, 1, 2, 3, 4]
    assert _bytes(lance.dataset(uri)) == [want[i] for i in got]
    assert _bytes(ll.dataset(uri)) == [want[i] for i in got]


def test_storage_thresholds_are_refused(tmp_path: Path) -> None:
    meta = {**BLOB, "lance-encoding:blob-inline-size-threshold": "10"}
    schema = pa.schema([pa.field("b", pa.large_binary(), metadata=meta)])
    table = pa.table({"b": pa.array([b"x"], pa.large_binary())}, schema=schema)
    with pytest.raises(UnsupportedOptionError, match="blob-inline-size-threshold"):
        ll.write_dataset(table, tmp_path / "ds", data_storage_version="2.2")


def test_binary_values_are_blobs_too(tmp_path: Path) -> None:
    values = [b"x", None, b"y" * 100_000]
    schema = pa.schema([pa.field("b", pa.binary(), metadata=BLOB)])
    table = pa.table({"b": pa.array(values, pa.binary())}, schema=schema)
    ll.write_dataset(table, tmp_path / "ours", data_storage_version="2.2")
    lance.write_dataset(table, tmp_path / "theirs", data_storage_version="2.2")
    ours, theirs = lance.dataset(tmp_path / "ours"), lance.dataset(tmp_path / "theirs")
    assert ours.schema.equals(theirs.schema, check_metadata=True)
    assert _bytes(ours) == _bytes(theirs) == values


def test_nested_blob_columns_are_refused(tmp_path: Path) -> None:
    blob = pa.field("b", pa.large_binary(), metadata=BLOB)
    table = pa.table({"s": [{"b": b"x"}]}, schema=pa.schema([pa.field("s", pa.struct([blob]))]))
    with pytest.raises(UnsupportedFeatureError, match="'s.b' is a blob column inside"):
        ll.write_dataset(table, tmp_path / "ours", data_storage_version="2.2")
    lance.write_dataset(table, tmp_path / "theirs", data_storage_version="2.2")
    with pytest.raises(UnsupportedFeatureError, match="'b' is a blob v2 column inside"):
        ll.dataset(tmp_path / "theirs").to_table()


def test_pylance_blob_arrays_are_refused(tmp_path: Path) -> None:
    table = pa.table({"b": lance.blob_array([b"x", None])})
    with pytest.raises(UnsupportedTypeError, match="lance.blob.v2"):
        ll.write_dataset(table, tmp_path / "ds", data_storage_version="2.2")


def test_compaction_rewrites_values(tmp_path: Path) -> None:
    # pylance's dataset holds values of every storage kind, in several fragments.
    first = [b"x" * 10, b"y" * 100_000, None, b"", b"z" * 5_000_000]
    uri = tmp_path / "ds"
    lance.write_dataset(_table(first), uri, data_storage_version="2.2", max_rows_per_file=2)
    ll.write_dataset(_table([b"s", b"t" * 70_000], first=5), uri, mode="append")
    ll.dataset(uri).delete("id = 1")
    want = [v for i, v in enumerate([*first, b"s", b"t" * 70_000]) if i != 1]
    ll.dataset(uri).optimize.compact_files()
    assert len(lance.dataset(uri).get_fragments()) == 1
    assert _bytes(lance.dataset(uri)) == want
    assert _bytes(ll.dataset(uri)) == want


def test_take_blobs_of_null_rows_only(tmp_path: Path) -> None:
    uri = tmp_path / "ds"
    ll.write_dataset(_table([None, b"a", None]), uri, data_storage_version="2.2")
    assert ll.dataset(uri).take_blobs("b", indices=[2, 0]) == [None, None]
    assert lance.dataset(uri).take_blobs("b", indices=[2, 0]) == [None, None]
    assert ll.dataset(uri).take_blobs("b", indices=[]) == []
