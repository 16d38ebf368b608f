"""Fragments whose columns live in several data files, or in none."""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.file import LanceFileWriter
from lancelet.table import naming
from lancelet.table.fragment import DataFile, Fragment
from lancelet.table.schema import LanceSchema
from lancelet.transaction import operations as ops
from lancelet.transaction.commit import commit_transaction
from lancelet.transaction.store import DatasetStore
from tests.dataset.util import keyed_table
from tests.versions import STORAGE_VERSION


def test_columns_added_by_pylance_live_in_a_second_file(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    ds = lance.write_dataset(keyed_table(0, 500), uri, data_storage_version=STORAGE_VERSION)
    ds.add_columns({"double_k": "k * 2"})
    ds = lance.dataset(uri)
    assert len(ds.get_fragments()[0].metadata.files) == 2
    ours = ll.dataset(uri)
    assert ours.to_table().equals(ds.to_table())
    assert ours.to_table(columns=["double_k", "k"]).equals(ds.to_table(columns=["double_k", "k"]))
    assert ours.take([3, 1]).equals(ds.take([3, 1]))
    ll.write_dataset(ds.to_table().slice(0, 10), uri, mode="append")
    assert lance.dataset(uri).count_rows() == 510


def _write_file(store: DatasetStore, table: pa.Table) -> str:
    name = naming.data_file_name()
    with LanceFileWriter(store.data_path(name), table.schema, version=STORAGE_VERSION) as writer:
        writer.write_batch(table)
    return name


def test_split_and_missing_columns(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    store = DatasetStore(uri)
    full = pa.table({"a": [1, 2, 3], "b": ["x", "y", "z"], "c": [1.5, 2.5, 3.5]})
    schema = LanceSchema.from_arrow(full.schema)  # ids a=0, b=1, c=2
    ab = _write_file(store, full.select(["a", "b"]))
    c = _write_file(store, full.select(["c"]))
    b_only = _write_file(store, pa.table({"b": ["p", "q"]}))
    split = Fragment(0, (DataFile(ab, (0, 1), (0, 1), 2), DataFile(c, (2,), (0,), 2)), 3)
    sparse = Fragment(0, (DataFile(b_only, (1,), (0,), 2),), 2)
    commit_transaction(store, ops.Transaction(0, ops.Overwrite((split, sparse), schema)))
    want = pa.table(
        {
            "a": pa.array([1, 2, 3, None, None], pa.int64()),
            "b": ["x", "y", "z", "p", "q"],
            "c": [1.5, 2.5, 3.5, None, None],
        }
    )
    assert ll.dataset(uri).to_table().equals(want)
    assert lance.dataset(uri).to_table().equals(want)
    assert (
        ll.dataset(uri)
        .take([4, 0], columns=["c", "b"])
        .equals(pa.table({"c": [None, 1.5], "b": ["q", "x"]}))
    )


def test_overwrite_refuses_fragments_with_deletions(tmp_path: Path) -> None:
    """pylance refuses an Overwrite whose fragments carry deletion files (they are not
    newly written); so does lancelet, leaving the dataset as it was."""
    table = pa.table({"a": list(range(10))})
    for name, lib in (("ours", ll), ("theirs", lance)):
        ds = lib.write_dataset(table, tmp_path / name)
        ds.delete("a < 3")
        fragment = ds.get_fragments()[0].metadata
        assert fragment.deletion_file is not None
        with pytest.raises((ValueError, OSError), match="newly written"):
            lib.LanceDataset.commit(
                ds.uri, lib.LanceOperation.Overwrite(ds.schema, [fragment]), read_version=2
            )
        assert lance.dataset(tmp_path / name).version == 2
