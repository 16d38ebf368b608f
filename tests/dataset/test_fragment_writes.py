"""Fragment-level writes checked against pylance: update_columns, merge,
create_from_file, open_session, progress callbacks and max_bytes_per_file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.dataset.core.progress import FileSystemFragmentWriteProgress, FragmentWriteProgress
from lancelet.errors import ArgumentError, EmptyWriteError, SchemaError
from lancelet.table.fragment import Fragment
from tests import storage


def _people() -> pa.Table:
    return pa.table(
        {
            "id": [1, 2, 3, 4],
            "name": ["Alice", "Bob", "Charlie", "David"],
            "value": [10, 20, 30, 40],
        }
    )


def _commit_update(lib: Any, uri: str, version: int, fragment: Any, fields: list[int]) -> Any:
    op = lib.LanceOperation.Update(updated_fragments=[fragment], fields_modified=fields)
    return lib.LanceDataset.commit(uri, op, read_version=version)


@pytest.mark.parametrize(
    ("update", "left_on"),
    [
        (pa.table({"_rowid": pa.array([0, 2], pa.uint64()), "value": [100, 300]}), "_rowid"),
        (pa.table({"id": [1, 1, 3], "name": ["x", "y", None], "value": [5, 6, 7]}), "id"),
        (pa.table({"_rowid": pa.array([100, 200], pa.uint64()), "value": [9, 8]}), "_rowid"),
    ],
)
def test_update_columns_as_pylance(tmp_path: Path, update: pa.Table, left_on: str) -> None:
    results = {}
    for name, lib in (("ours", ll), ("theirs", lance)):
        uri = str(tmp_path / name)
        ds = lib.write_dataset(_people(), uri)
        ds.delete("id = 4")
        ds = lib.dataset(uri)
        fragment, fields = ds.get_fragment(0).update_columns(update, left_on=left_on)
        results[name] = (_commit_update(lib, uri, ds.version, fragment, fields).to_table(), fields)
    assert results["ours"] == results["theirs"]


def test_update_columns_refusals(tmp_path: Path) -> None:
    ds = ll.write_dataset(_people(), str(tmp_path / "ds"))
    fragment = ds.get_fragment(0)
    rowids = pa.array([0, 1], pa.uint64())
    with pytest.raises(SchemaError, match="does not exist"):
        fragment.update_columns(pa.table({"_rowid": rowids, "nope": [1, 2]}))
    with pytest.raises(ArgumentError, match="metadata column"):
        fragment.update_columns(pa.table({"_rowid": rowids, "_rowaddr": rowids}))


def test_fragment_merge_on_rowid_as_pylance(tmp_path: Path) -> None:
    tables = []
    for lib in (ll, lance):
        uri = str(tmp_path / lib.__name__)
        ds = lib.write_dataset(_people(), uri, max_rows_per_file=3)
        merged, schema = [], None
        for fragment in ds.get_fragments():
            keys = fragment.to_table(columns=[], with_row_id=True)
            extra = keys.add_column(0, "extra", [[i * 7 for i in range(keys.num_rows)]])
            new, schema = fragment.merge(extra, "_rowid")
            merged.append(new)
        op = lib.LanceOperation.Merge(merged, schema)
        tables.append(lib.LanceDataset.commit(uri, op, read_version=ds.version).to_table())
    assert tables[0] == tables[1]


def test_create_from_file_then_rewrite(tmp_path: Path) -> None:
    data = pa.table({"a": range(50), "b": range(50)})
    uri = str(tmp_path / "ds")
    ds = ll.write_dataset([], uri, schema=data.schema)
    for _ in range(2):
        name = f"{len(ds.get_fragments())}-extra.lance"
        with ll.file.LanceFileWriter(f"{uri}/data/{name}", version="2.1") as writer:
            writer.write_batch(data)
        fragment = ll.LanceFragment.create_from_file(name, ds, 0)
        op = ll.LanceOperation.Append([fragment])
        ds = ll.LanceDataset.commit(uri, op, read_version=ds.version)
    assert [f.fragment_id for f in ds.get_fragments()] == [0, 1]
    name = "compacted.lance"
    with ll.file.LanceFileWriter(f"{uri}/data/{name}", version="2.1") as writer:
        writer.write_batch(ds.to_table())
    group = ll.LanceOperation.RewriteGroup(
        old_fragments=[f.metadata for f in ds.get_fragments()],
        new_fragments=[ll.LanceFragment.create_from_file(name, ds, 0)],
    )
    op = ll.LanceOperation.Rewrite(groups=[group])
    ds = ll.LanceDataset.commit(uri, op, read_version=ds.version)
    assert [f.fragment_id for f in ds.get_fragments()] == [2]
    assert ds.to_table() == pa.concat_tables([data, data])
    assert lance.dataset(uri).to_table() == ds.to_table()


def test_open_session_takes_as_pylance(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    ll.write_dataset(pa.table({"a": range(100), "b": range(100, 200)}), uri)
    lance.dataset(uri).delete("a < 5")
    ours, theirs = ll.dataset(uri).get_fragment(0), lance.dataset(uri).get_fragment(0)
    for with_address in (False, True):
        got = ours.open_session(["a", "b"], with_address).take(range(1, 50))
        expected = theirs.open_session(["a", "b"], with_address).take(range(1, 50))
        assert got == expected


class _Counting(FragmentWriteProgress):
    def __init__(self) -> None:
        self.begun: list[Fragment] = []
        self.completed: list[Fragment] = []

    def begin(self, fragment: Fragment, **kwargs: Any) -> None:
        self.begun.append(fragment)

    def complete(self, fragment: Fragment, **kwargs: Any) -> None:
        self.completed.append(fragment)


def test_progress_sees_every_fragment(tmp_path: Path) -> None:
    progress = _Counting()
    data = pa.table({"a": range(10)})
    ll.write_dataset(data, str(tmp_path / "ds"), max_rows_per_file=4, progress=progress)
    assert [f.physical_rows for f in progress.completed] == [4, 4, 2]
    assert [f.files[0].path for f in progress.begun] == [
        f.files[0].path for f in progress.completed
    ]


@pytest.mark.local_files("pylance's progress tracker writes through pyarrow's filesystem")
def test_file_system_progress_matches_pylance(tmp_path: Path) -> None:
    for lib, progress_type in (
        (ll, FileSystemFragmentWriteProgress),
        (lance, lance.progress.FileSystemFragmentWriteProgress),
    ):
        where = tmp_path / lib.__name__
        progress = progress_type(str(where / "progress"), metadata={"k": "v"})
        fragment = lib.LanceFragment.create(
            str(where / "ds"), pa.table({"a": range(5)}), fragment_id=3, progress=progress
        )
        assert fragment.id == 3
        assert storage.list_names(where / "progress") == ["fragment_3.json"]
        recorded = json.loads(storage.read_file(where / "progress" / "fragment_3.json"))
        assert recorded["id"] == 3
        assert recorded["files"][0]["path"] == fragment.files[0].path


def test_max_bytes_per_file_as_pylance(tmp_path: Path) -> None:
    big = pa.array(["0" * 1024] * 1024 * 9)
    schema = pa.schema([pa.field("a", pa.string())])
    counts = []
    for lib in (ll, lance):
        batches = [pa.record_batch([big], schema=schema)] * 2
        reader = pa.RecordBatchReader.from_batches(schema, batches)
        fragments = lib.fragment.write_fragments(
            reader, str(tmp_path / lib.__name__), max_bytes_per_file=1024
        )
        counts.append([f.physical_rows for f in fragments])
    assert counts[0] == counts[1]


def test_create_refuses_empty_input_as_pylance(tmp_path: Path) -> None:
    empty = pa.table({"a": pa.array([], pa.int64())})
    with pytest.raises(OSError):
        lance.LanceFragment.create(str(tmp_path / "theirs"), empty)
    with pytest.raises(EmptyWriteError):
        ll.LanceFragment.create(str(tmp_path / "ours"), empty)
    with pytest.raises(OSError):
        ll.LanceFragment.create(str(tmp_path / "ours"), pa.table({}))


def test_compaction_max_bytes_per_file_as_pylance(tmp_path: Path) -> None:
    values = pa.array(range(2 * 1024 * 1024))
    data = pa.table({"a": pa.FixedSizeListArray.from_arrays(values, 1024)})
    shapes = []
    for lib in (ll, lance):
        uri = str(tmp_path / lib.__name__)
        ds = lib.write_dataset(data, uri, max_rows_per_file=1024, data_storage_version="2.1")
        metrics = ds.optimize.compact_files(
            target_rows_per_fragment=100 * 1024, max_bytes_per_file=1000, batch_size=128
        )
        shapes.append((metrics.fragments_removed, metrics.fragments_added, ds.count_rows()))
        assert ds.to_table() == data
    assert shapes[0] == shapes[1]
    assert shapes[0][1] > 1  # the byte limit cut the one new fragment's rows in two


@pytest.mark.local_files("pylance's file writer puts the replacement file on local disk")
def test_data_files_built_with_lists_replace_data_as_pylance(tmp_path: Path) -> None:
    tables = []
    for lib in (ll, lance):
        uri = str(tmp_path / lib.__name__)
        ds = lib.write_dataset(pa.table({"a": range(10)}), uri)
        ds.add_columns({"b": "a + 1"})
        ds = lib.dataset(uri)
        name = f"{lib.__name__}-b.lance"
        with lance.file.LanceFileWriter(f"{uri}/data/{name}") as writer:
            writer.write_batch(pa.table({"b": range(100, 110)}))
        new_file = lib.fragment.DataFile(name, [1], [0], file_major_version=2, file_minor_version=2)
        group = lib.LanceOperation.DataReplacementGroup(0, new_file)
        op = lib.LanceOperation.DataReplacement([group])
        tables.append(lib.LanceDataset.commit(uri, op, read_version=ds.version).to_table())
    assert tables[0] == tables[1]
